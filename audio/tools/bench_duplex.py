"""``robot-face bench duplex``: the echo canceller and the barge-in guard in the simulated room.

Offline (no real-time clock; the replies are synthesised afresh each run and Piper samples its
durations, so the figures move a little between runs: compare guards within one run): the
project's own Piper replies are the far end, played through ``audio.edges.sim_room.SimRoom`` at
delays 10-120 ms, echo levels 0/-6/-12 dB and reverb tails 0.15-0.6 s; real recorded speech
(``/work/shared/data/speech`` or ``--speech``) is the user. The front end
(``audio.hearing.front_end.FrontEnd``, with WebRTC's APM from ``livekit`` or DTLN-aec) gets the reference with its
play times and the microphone with its capture times, exactly as at run time. Printed side by side:

- ERLE (dB) on echo-only stretches (10·log10 of the echo's energy at the microphone over what is left);
- false barge-ins per 100 replies (no user speaking: an utterance start by the runtime's VAD path --
  ``SpeechDetector`` + ``Endpointer`` -- on the cleaned signal), for the raw microphone (half duplex
  would have to discard it), the full canceller and one limited to about 6 dB (part of the raw echo
  mixed back), each with the plain VAD, with the stricter start while playing (``barge_in_speech_ms``)
  and with that plus the residual-echo check (``audio.hearing.echo_tail.EchoGuard``);
- barge-in detection: the share of user onsets (user at ``--user-db`` re the reply's level at the
  speaker) reported within 300 ms, the onset → start latency (and the device guard's over the weak
  canceller, ``--limit-db``) and the onset → duck latency (the early
  duck, ``hearing.early_duck_speech_ms``: ``audio.tools.bench_early_duck``); the early duck's dips of
  the reply with nobody speaking, per 100 replies;
- WER of the user's words over the echo vs the same words alone (faster-whisper, the project's
  transcriber), the reply ducked as the device ducks it (early; beside it, from the confirmed start
  only); and over the weak canceller, the reply
  ducked by ``hearing.duck_db`` and by ``hearing.duck_weak_db`` (the device's depth over it); the
  same (full canceller) for short barge-ins (``COMMANDS``), whose first word is a larger share;
- CPU per 10 ms frame of the front end (thread time) and the share of one core.

Each canceller of ``--cancellers`` (WebRTC's and DTLN-aec by default, ``audio.hearing.cancellers``)
runs on the same replies, rooms and users (paired), with its own gate margin
(``HearingSettings.guard_margin_db``) and its output's delay counted in every latency; the tables come
per canceller, then the two side by side.
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from audio.edges.sim_room import SimRoom, SimRoomSettings
from audio.edges.wav import FloatArray, load_audio
from audio.hearing.cancellers import CANCELLERS, make_canceller, output_delay_s
from audio.hearing.echo_check import cancel
from audio.hearing.echo_tail import EchoGuard
from audio.hearing.engine import Transcriber
from audio.hearing.front_end import RATE, FrontEnd, FrontEndOptions, ResidualGate
from audio.hearing.settings import ECHO_MODEL_UNITS, HearingSettings
from audio.hearing.vad import Endpointer, SpeechDetector, SpeechStirred, UtteranceBegan, frame_level_db
from audio.tools.bench_early_duck import Detections, Stir, duck_from, false_dips
from audio.tools.cli_hearing import positive_int
from audio.tools.proportions import interval_pct

SPEECH_DIR = Path("/work/shared/data/speech")
REPLIES: tuple[str, ...] = (
    "Okay, here is the plan for today. First we water the plants on the balcony, because they "
    "looked a little thirsty yesterday.",
    "Then we can read the next chapter of your book together, the one with the lighthouse.",
    "After lunch, if the weather stays nice, we could go for a walk in the park and feed the ducks.",
    "Let me tell you a story. Once upon a time there was a little robot who loved to count the stars.",
    "Great job! You remembered all five cards. Shall we try a harder round with six cards now?",
    "In the evening, I will remind you to call your sister, and we can look at the photos she sent.",
)
COMMANDS: tuple[str, ...] = (
    "Actually, please stop the story.",
    "Wait, can we do something else?",
    "Stop, please.",
    "No, I want the memory game.",
    "Hold on, I have a question.",
    "Can you say that again?",
)
"""Short barge-ins for the WER check's second line, in the project's Piper voice (as ``make demo``'s
user speaks): the first word, spoken over the reply before the device detects the barge-in and ducks
it, is a larger share of these than of the long recorded sentence."""
DELAYS_MS = (10.0, 40.0, 80.0, 120.0)
ECHO_DBS = (0.0, -6.0, -12.0)
RT60S = (0.15, 0.3, 0.6)
BEFORE_ONSET_MS = 1200
"""The reply-onset window the guard had in effect before it was counted in milliseconds (40 frames
of 30 ms, meant as 400 ms): the ``@1200`` guard, the baseline beside the runtime's."""
BEFORE_TAIL_MS = 150
"""The barge-in start (``hearing.barge_in_speech_ms``) the runtime had before the guard's tail rule:
the ``strict150+gate-tail`` guard, the baseline beside the runtime's."""
WIDE_MARGIN_DB = 12
"""The gate's margin over the expected residue (``EchoGuard.margin_db``, 6 dB at run time) tried in
place of the stricter start: the ``gate/12dB`` guard (the normal 90 ms start)."""
GUARDS = (
    "vad",
    "residual",
    "gate",
    "strict",
    "strict+gate",
    f"strict{BEFORE_TAIL_MS}+gate-tail",
    f"gate/{WIDE_MARGIN_DB}dB",
    f"strict+gate@{BEFORE_ONSET_MS}",
)
"""The VAD path's variants; ``/<n>dB``: the gate at that margin over the expected residue
(``EchoGuard.margin_db``); ``@<ms>``: with that reply-onset window (``EchoGuard.onset_ms``);
``strict<ms>``: that much speech to start (else ``--barge-in-ms``); ``~<n>``: a frame the canceller
removed more than n dB of is not the user's (``EchoGuard.removed_max_db``; off at run time);
``-tail``: without the guard's tail rule (``EchoGuard.tail_fall_db`` 0). ``strict150+gate-tail`` is the runtime's guard before the tail rule."""
_GUARD_NAME = re.compile(
    r"^(?P<head>[a-z]+)(?P<need>\d+)?(?P<rest>(?:\+[a-z]+)*)(?:/(?P<margin>\d+)dB)?(?:@(?P<onset>\d+))?"
    r"(?:~(?P<removed>\d+))?(?P<notail>-tail)?$"
)
DEVICE_GUARD = "strict+gate"
"""The guard the device uses while it plays (``hearing.barge_in_speech_ms``, the residual-echo gate
and its tail rule): its detections duck the reply in the WER check."""
VOLUME = 0.8
"""The speaker's default volume (``speaking.volume``)."""
NOISE_DB = -65.0
"""The simulated microphone's noise floor (dBFS)."""


@dataclass(frozen=True)
class Condition:
    """One simulated room."""

    delay_ms: float
    echo_db: float
    rt60_s: float

    def room(self) -> SimRoomSettings:
        """The room's settings (defaults for the rest)."""
        return SimRoomSettings(delay_ms=self.delay_ms, echo_db=self.echo_db, rt60_s=self.rt60_s)


def conditions() -> list[Condition]:
    """Every delay x echo level x reverb tail."""
    return [Condition(d, e, r) for d, e, r in itertools.product(DELAYS_MS, ECHO_DBS, RT60S)]


def echo_of(far: FloatArray, far_rate: int, room: SimRoomSettings) -> FloatArray:
    """What the microphone (16 kHz) hears of ``far`` played from t = 0 (as long as ``far`` + 1 s)."""
    padded = np.concatenate([far, np.zeros(far_rate, dtype=np.float32)])
    sim = SimRoom(room, far_rate, RATE)
    block = far_rate // 10
    out = np.concatenate([sim.process(padded[i : i + block]) for i in range(0, len(padded), block)])
    want = int(len(padded) * RATE / far_rate)
    return np.pad(out, (0, max(0, want - len(out))))[:want]


def erle_db(echo: FloatArray, residual: FloatArray, skip_s: float = 1.0) -> float:
    """ERLE on an echo-only stretch after ``skip_s`` of convergence (frames where the echo is heard)."""
    s = int(skip_s * RATE)
    e, r = echo[s:].astype(np.float64), residual[s:].astype(np.float64)
    return 10 * math.log10(max(float(np.sum(e**2)), 1e-12) / max(float(np.sum(r**2)), 1e-12))


def detections(
    signal: FloatArray,
    raw: FloatArray,
    far16: FloatArray,
    guard: str,
    settings: HearingSettings,
    start: float = 0.0,
    end: float | None = None,
    delay_ms: float = 0.0,
) -> Detections:
    """Times (s, when reported) of utterance starts by the VAD path on ``signal[start:end]`` (its own
    fresh VAD state, as after the device started listening; ``start`` rounded down to a block) under
    ``guard``, whose residual-echo check has heard everything from the signal's start, as the
    device's runs all the time; ``delay_ms``: the room's echo delay
    (``FrontEndOptions.echo_delay_ms``, the guard's tail rule reads the reply's pauses that late);
    with the stirs of a ``strict`` guard (``hearing.early_duck_speech_ms`` of speech: the early
    duck) beside them."""
    n = settings.sample_rate * settings.block_ms // 1000
    lo = int(start * RATE) // n * n
    hi = len(signal) if end is None else int(end * RATE)
    found = _starts(signal[:hi], raw[:hi], far16[:hi], guard, settings, round(delay_ms), lo)
    shift = lo / RATE + output_delay_s(settings)  # a canceller whose output comes late: reported late
    return Detections(
        [t + shift for t in found.starts], [Stir(s.at + shift, s.voiced + shift) for s in found.stirs]
    )


@dataclass(frozen=True)
class GuardSpec:
    """A guard's name (``GUARDS``) read: the VAD path's variant and what it changes of the runtime's
    guard (None: the runtime's value)."""

    variant: str
    """"vad", "residual", "gate", "strict", "strict+gate", ..."""
    margin_db: float | None = None
    """``/<n>dB``: the gate's margin over the expected residue (``EchoGuard.margin_db``)."""
    onset_ms: int | None = None
    """``@<ms>``: the reply-onset window (``EchoGuard.onset_ms``)."""
    tail: bool = True
    """``-tail``: without the tail rule (``EchoGuard.tail_fall_db`` 0)."""
    need_ms: int | None = None
    """``strict<ms>``: the speech a start needs (None: ``--barge-in-ms``)."""
    removed_max_db: float | None = None
    """``~<n>``: the most the canceller may have removed from a user's frame (``EchoGuard.removed_max_db``)."""

    def configure(self, guard: EchoGuard) -> EchoGuard:
        """``guard`` changed as this spec says."""
        if not self.tail:
            guard.tail_fall_db = 0.0
        if self.onset_ms is not None:
            guard.onset_ms = self.onset_ms
        if self.margin_db is not None:
            guard.margin_db = self.margin_db
        if self.removed_max_db is not None:
            guard.removed_max_db = self.removed_max_db
        return guard


def gate_residual(
    raw: FloatArray,
    cleaned: FloatArray,
    far16: FloatArray,
    block: int = 480,
    spec: GuardSpec | None = None,
    delay_ms: int = 0,
    margin_db: float = 6.0,
) -> FloatArray:
    """``cleaned`` through a fresh ``ResidualGate``, block by block (30 ms, as the microphone
    delivers), its guard changed as ``spec`` says (None: the runtime's); ``delay_ms``: the echo's
    delay; ``margin_db``: the gate's margin unless ``spec`` names one (the canceller's,
    ``HearingSettings.guard_margin_db``)."""
    gate = ResidualGate(frame_ms=block * 1000 // RATE, echo_delay_ms=delay_ms, margin_db=margin_db)
    if spec is not None:
        spec.configure(gate.guard)
    parts = [
        gate.apply(raw[i : i + block], cleaned[i : i + block], far16[i : i + block])
        for i in range(0, len(cleaned), block)
    ]
    return np.concatenate(parts) if parts else cleaned


def parse_guard(name: str) -> GuardSpec:
    """A guard's name (``GUARDS``) read into its ``GuardSpec``."""
    parts = _GUARD_NAME.match(name)
    if parts is None:
        raise ValueError(
            f"unknown guard {name!r} (e.g. strict+gate, gate/12dB, strict+gate@1200, strict+gate-tail, "
            "strict90+gate~20)"
        )
    return GuardSpec(
        variant=parts["head"] + parts["rest"],
        margin_db=float(parts["margin"]) if parts["margin"] else None,
        onset_ms=int(parts["onset"]) if parts["onset"] else None,
        tail=not parts["notail"],
        need_ms=int(parts["need"]) if parts["need"] else None,
        removed_max_db=float(parts["removed"]) if parts["removed"] else None,
    )


def guard_names(text: str) -> tuple[str, ...]:
    """``--guards``: comma-separated guard names, each one ``parse_guard`` reads (argparse type)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("no guard named")
    for name in names:
        try:
            parse_guard(name)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from err
    return names


def _starts(
    signal: FloatArray,
    raw: FloatArray,
    far16: FloatArray,
    guard: str,
    settings: HearingSettings,
    delay_ms: int = 0,
    lo: int = 0,
) -> Detections:
    """Utterance starts and stirs (s after ``lo``) by a fresh VAD path on ``signal[lo:]``, the
    guard's check run from sample 0."""
    spec = parse_guard(guard)
    stir_ms = 0
    if spec.variant.startswith("strict"):
        stir_ms = settings.early_duck_speech_ms
        need = spec.need_ms or settings.barge_in_start_ms
        window = max(settings.start_window_ms, need + 60)
        settings = replace(settings, start_window_ms=window, start_speech_ms=need)
    if spec.variant.endswith("gate"):  # the residual-echo gate on the audio (FrontEndSource), then the VAD
        block = settings.sample_rate * settings.block_ms // 1000
        signal = gate_residual(raw, signal, far16, block, spec, delay_ms, settings.guard_margin_db)
    detector, warm = SpeechDetector(settings), SpeechDetector(settings)
    endpointer = Endpointer(settings, stir_ms=stir_ms)
    echo_guard = (
        spec.configure(
            EchoGuard(margin_db=settings.guard_margin_db, frame_ms=settings.block_ms, echo_delay_ms=delay_ms)
        )
        if spec.variant.endswith("residual")
        else None
    )
    n = settings.sample_rate * settings.block_ms // 1000
    found = Detections()
    for i in range(0, len(signal) - n + 1, n):
        frame = signal[i : i + n]
        if i < lo:  # before listening starts: only the guard hears it
            if echo_guard is not None:
                levels = (
                    frame_level_db(raw[i : i + n]),
                    frame_level_db(frame),
                    frame_level_db(far16[i : i + n]),
                )
                echo_guard.allows(warm.is_speech(frame), *levels)
            continue
        speech = detector.is_speech(frame)
        if echo_guard is not None:
            speech = echo_guard.allows(
                speech,
                frame_level_db(raw[i : i + n]),
                frame_level_db(frame),
                frame_level_db(far16[i : i + n]),
            )
        for event in endpointer.process(frame, speech):
            if isinstance(event, UtteranceBegan):
                found.starts.append((i + n - lo) / RATE)
            elif isinstance(event, SpeechStirred):
                found.stirs.append(
                    Stir((i + n - lo) / RATE, event.offset / RATE)
                )  # the endpointer counts from lo
    return found


@dataclass
class Reply:
    """A synthesised reply at the speaker (volume applied) and at 16 kHz for the level checks."""

    text: str
    audio: FloatArray
    rate: int
    far16: FloatArray


def _synthesise(texts: tuple[str, ...]) -> list[Reply]:
    """The project's own Piper voice saying ``texts`` (at the reply volume, and at 16 kHz)."""
    from audio.edges.wav import resample
    from audio.speaking.tts import load_voice

    voice = load_voice(threads=1)
    out = []
    for text in texts:
        syn = voice.synthesize(text)
        audio = (syn.audio * VOLUME).astype(np.float32)
        out.append(Reply(text, audio, syn.rate, resample(audio, syn.rate, RATE)))
    return out


def synthesise_replies(count: int) -> list[Reply]:
    """The project's own Piper voice saying ``REPLIES`` (cycled to ``count`` distinct texts)."""
    return _synthesise(REPLIES[: max(1, count)])


def synthesise_commands() -> list[tuple[FloatArray, str]]:
    """``COMMANDS`` in the project's Piper voice at 16 kHz, each with its words (the WER check sets
    the user's level against the reply's, so the voice's own level does not matter)."""
    return [(said.far16, said.text) for said in _synthesise(COMMANDS)]


def _cancel(
    far: FloatArray, rate: int, mic: FloatArray, options: FrontEndOptions, settings: HearingSettings
) -> tuple[FloatArray, FrontEnd]:
    """``cancel`` with a fresh canceller of the kind ``settings.echo_cancellation`` names (WebRTC's
    unless it names another of ``CANCELLERS``)."""
    if settings.echo_cancellation not in CANCELLERS:
        settings = replace(settings, echo_cancellation="webrtc")
    return cancel(far, rate, mic, options, make_canceller(settings, options))


def _rms_db(x: FloatArray) -> float:
    active = x[np.abs(x) > 1e-4]
    return frame_level_db(active) if len(active) else -120.0


def _noise(n: int, seed: int) -> FloatArray:
    return (np.random.default_rng(seed).standard_normal(n) * 10 ** (NOISE_DB / 20)).astype(np.float32)


def _limited(cleaned: FloatArray, echo: FloatArray, limit_db: float) -> FloatArray:
    """A canceller that removes only about ``limit_db``: part of the raw echo mixed back in."""
    return (cleaned + echo * 10 ** (-limit_db / 20)).astype(np.float32)


@dataclass
class EchoFigures:
    """Per canceller variant: ERLE values and false starts per guard."""

    erle: dict[str, list[float]]
    false_starts: dict[tuple[str, str], int]
    replies: int
    cpu_ms: list[float]
    cold_starts: dict[tuple[str, str], int] = field(default_factory=dict)
    """Starts during the reply right after the canceller started (per variant and guard)."""
    dips: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    """The early ducks no start followed (``bench_early_duck.false_dips``), each one's length in s,
    per variant and guard (a ``strict`` guard's only: the others do not stir)."""
    early_ms: int = 0
    """``hearing.early_duck_speech_ms`` the dips were counted with (0: no early duck)."""
    release_ms: int = 0
    """``hearing.early_duck_release_ms`` they were counted with."""

    def __post_init__(self) -> None:
        self.cold_starts = dict.fromkeys(self.false_starts, 0)
        self.dips = {key: [] for key in self.false_starts}

    def add(self, other: EchoFigures) -> None:
        """Pool ``other`` (another set of replies, the same variants and guards) into these."""
        for name, values in other.erle.items():
            self.erle.setdefault(name, []).extend(values)
        for key, count in other.false_starts.items():
            self.false_starts[key] = self.false_starts.get(key, 0) + count
        for key, count in other.cold_starts.items():
            self.cold_starts[key] = self.cold_starts.get(key, 0) + count
        for key, lengths in other.dips.items():
            self.dips.setdefault(key, []).extend(lengths)
        self.replies += other.replies
        self.cpu_ms.extend(other.cpu_ms)


def reply_pairs(replies: list[Reply]) -> list[tuple[Reply, Reply]]:
    """Every ordered pair of two different replies (the one heard before, the one measured), so the
    echo-only run hears every transition between them: the canceller's leaks come at the far end's
    pauses and restarts, and which pause follows which sentence matters (three fixed pairs counted
    0 false starts where all 30 counted 1-4 in 216 replies, in reverberant rooms)."""
    return list(itertools.permutations(replies, 2))


def run_echo_only(
    replies: list[Reply],
    per_condition: int,
    limit_db: float,
    settings: HearingSettings,
    guards: tuple[str, ...] = GUARDS,
) -> EchoFigures:
    """Every condition x ``per_condition`` replies with nobody speaking, the pairs of replies cycled
    over ``reply_pairs``. Each measured reply follows
    another one (the canceller runs all the time on the device); utterance starts during that first
    reply, right after the canceller started, are counted apart (``cold_starts``)."""
    variants = ("raw", "full", f"limited {limit_db:.0f} dB")
    figures = EchoFigures({v: [] for v in variants}, {(v, g): 0 for v in variants for g in guards}, 0, [])
    figures.early_ms, figures.release_ms = settings.early_duck_speech_ms, settings.early_duck_release_ms
    release_s = settings.early_duck_release_ms / 1000
    pair_cycle = itertools.cycle(reply_pairs(replies))
    for k, cond in enumerate(conditions()):
        for _ in range(per_condition):
            prev, reply = next(pair_cycle)
            far = np.concatenate([prev.audio, reply.audio])
            lead = len(prev.far16) / RATE
            echo = echo_of(far, reply.rate, cond.room())
            mic = echo + _noise(len(echo), seed=k)
            options = FrontEndOptions(echo_delay_ms=int(cond.delay_ms))
            cleaned, front = _cancel(far, reply.rate, mic, options, settings)
            # nobody speaks: everything left is residual echo (+ noise)
            signals = {"raw": mic, "full": cleaned, variants[2]: _limited(cleaned, echo, limit_db)}
            far16 = far_at_16k(far, reply.rate, len(mic))
            for name, sig in signals.items():
                if name != "raw":
                    figures.erle[name].append(erle_db(echo[int(lead * RATE) :], sig[int(lead * RATE) :], 0.0))
                for guard in guards:
                    found = detections(sig, mic, far16, guard, settings, lead, delay_ms=cond.delay_ms)
                    figures.false_starts[(name, guard)] += len(found.starts)
                    figures.dips[(name, guard)].extend(d.end - d.start for d in false_dips(found, release_s))
                    figures.cold_starts[(name, guard)] += len(
                        detections(sig, mic, far16, guard, settings, 0.0, lead, cond.delay_ms).starts
                    )
            figures.cpu_ms.append(front.stats.cpu_per_frame_ms)
            figures.replies += 1
    return figures


def _user_clips(speech_dir: Path) -> list[tuple[FloatArray, str]]:
    """Recorded speech with its words: the FSDD digits of two speakers (jackson, nicolas)."""
    clips = []
    manifest = speech_dir / "manifest.tsv"
    for line in manifest.read_text().splitlines()[1:]:
        rel, words, kind, *_ = line.split("\t")
        if (
            kind == "speech"
            and rel.startswith("fsdd/")
            and "theo" not in rel
            and rel.endswith(("_0.wav", "_1.wav"))
        ):
            clips.append((load_audio(speech_dir / rel, RATE), words))
    if not clips:
        raise FileNotFoundError(f"no FSDD speech clips listed in {manifest}")
    return clips


def _onset(clip: FloatArray) -> int:
    """First sample of a 10 ms frame within 30 dB of the clip's loudest frame."""
    frames = [frame_level_db(clip[i : i + 160]) for i in range(0, len(clip) - 159, 160)]
    peak = max(frames)
    return 160 * next(i for i, db in enumerate(frames) if db >= peak - 30.0)


@dataclass
class BargeInFigures:
    """Per guard: detection latencies (None = missed) and false starts before the user spoke."""

    latencies: dict[str, list[float | None]]
    early: dict[str, int]
    ducks: dict[str, list[float | None]] = field(default_factory=dict)
    """Per guard: onset → the reply ducked (the early duck the start took over, else the start;
    None = missed)."""
    weak: list[float | None] = field(default_factory=list)
    """The device guard's latencies over a canceller limited to ``weak_db`` (``--limit-db``)."""
    weak_db: float = 0.0

    def add(self, other: BargeInFigures) -> None:
        """Pool ``other`` (another set of replies, the same guards) into these."""
        for guard, values in other.latencies.items():
            self.latencies.setdefault(guard, []).extend(values)
        for guard, values in other.ducks.items():
            self.ducks.setdefault(guard, []).extend(values)
        self.weak.extend(other.weak)
        self.weak_db = other.weak_db or self.weak_db
        for guard, count in other.early.items():
            self.early[guard] = self.early.get(guard, 0) + count


def duck(far: FloatArray, rate: int, from_s: float | None, db: float) -> FloatArray:
    """``far`` ducked by ``db`` from ``from_s`` on (a 20 ms ramp); unchanged for None."""
    if from_s is None or db == 0.0:
        return far
    gain = np.ones(len(far), dtype=np.float32)
    at, ramp = int(from_s * rate), int(0.02 * rate)
    low = 10 ** (db / 20)
    gain[at : at + ramp] = np.linspace(1.0, low, len(gain[at : at + ramp]))
    gain[at + ramp :] = low
    return (far * gain).astype(np.float32)


@dataclass
class Trial:
    """A user speaking over a reply the canceller has been hearing for a while (the previous one)."""

    far: FloatArray
    rate: int
    cond: Condition
    user: FloatArray
    at: int
    """Microphone sample where the user's clip starts."""
    lead: float = 0.0
    """Seconds of the reply before (the canceller warming up); listening is counted from there."""

    def mic(self, far: FloatArray, seed: int) -> tuple[FloatArray, FloatArray]:
        """(microphone, its echo) with ``far`` (maybe ducked) playing."""
        echo = echo_of(far, self.rate, self.cond.room())
        mic = echo + _noise(len(echo), seed)
        mic[self.at : self.at + len(self.user)] += self.user[: len(mic) - self.at]
        return mic, echo


def _trial(
    replies: list[Reply], k: int, cond: Condition, clip: FloatArray, user_db: float, rng: np.random.Generator
) -> Trial:
    prev, reply = replies[(k + 1) % len(replies)], replies[k % len(replies)]
    far = np.concatenate([prev.audio, reply.audio])
    lead = len(prev.far16) / RATE
    gain = 10 ** ((_rms_db(reply.far16) + user_db - _rms_db(clip)) / 20)
    at = int((lead + rng.uniform(0.5, max(0.6, len(reply.far16) / RATE - 1.5))) * RATE)
    return Trial(far, reply.rate, cond, (clip * gain).astype(np.float32), at, lead)


def run_barge_in(
    replies: list[Reply],
    clips: list[tuple[FloatArray, str]],
    trials: int,
    user_db: float,
    settings: HearingSettings,
    guards: tuple[str, ...] = GUARDS,
    limit_db: float | None = None,
) -> BargeInFigures:
    """User clips at ``user_db`` re the reply's level at the speaker, over replies in rooms at -6 dB;
    with ``limit_db``, the device guard over a canceller limited to that too (``_limited``)."""
    figures = BargeInFigures({g: [] for g in guards}, {g: 0 for g in guards}, {g: [] for g in guards})
    figures.weak_db = limit_db or 0.0
    rooms = [c for c in conditions() if c.echo_db == -6.0]
    rng = np.random.default_rng(11)
    for k in range(trials):
        clip, _ = clips[k % len(clips)]
        trial = _trial(replies, k, rooms[k % len(rooms)], clip, user_db, rng)
        mic, echo = trial.mic(trial.far, seed=100 + k)
        options = FrontEndOptions(echo_delay_ms=int(trial.cond.delay_ms))
        cleaned, _ = _cancel(trial.far, trial.rate, mic, options, settings)
        far16 = far_at_16k(trial.far, trial.rate, len(mic))
        onset = (trial.at + _onset(clip)) / RATE
        for guard in guards:
            found = detections(cleaned, mic, far16, guard, settings, trial.lead, delay_ms=trial.cond.delay_ms)
            figures.early[guard] += sum(1 for t in found.starts if t < onset - 0.05)
            figures.latencies[guard].append(_first_after(found.starts, onset))
            ducked = duck_from(found, onset - 0.05, settings.early_duck_release_ms / 1000)
            figures.ducks[guard].append(None if ducked is None or ducked - onset >= 1.5 else ducked - onset)
        if limit_db is not None:
            weak = _limited(cleaned, echo, limit_db)
            found = detections(
                weak, mic, far16, DEVICE_GUARD, settings, trial.lead, delay_ms=trial.cond.delay_ms
            )
            figures.weak.append(_first_after(found.starts, onset))
    return figures


def _first_after(times: list[float], onset: float) -> float | None:
    """The first of ``times`` from 50 ms before ``onset`` on, as a latency after it (s; None: none
    within 1.5 s: missed)."""
    after = [t - onset for t in times if t >= onset - 0.05]
    return after[0] if after and after[0] < 1.5 else None


def far_at_16k(far: FloatArray, rate: int, n: int) -> FloatArray:
    from audio.edges.wav import resample

    f = resample(far, rate, RATE)
    return np.pad(f, (0, max(0, n - len(f))))[:n]


def _sentence(speech_dir: Path) -> tuple[FloatArray, str]:
    """A real spoken sentence with its words: the JFK excerpt (11 s, 22 words)."""
    from audio.tools.stt_clip import load_clip

    for line in (speech_dir / "manifest.tsv").read_text().splitlines()[1:]:
        rel, words, *_ = line.split("\t")
        if rel.startswith("jfk/"):
            return load_clip(speech_dir / rel, RATE), words
    raise FileNotFoundError(f"no jfk clip listed in {speech_dir / 'manifest.tsv'}")


WER_VIEWS = ("alone", "ducked", "gated", "over")
"""What the WER check transcribes: the sentence alone (with the noise); over the echo, cleaned, the
reply ducked as the device ducks it -- from its early duck, else from the device guard's detected
start (what the device's Whisper hears: the listener
takes the cleaned view, ``FrontEndSource.detection_view``); the same through the residual-echo gate
(the VAD's view, were it transcribed); cleaned without ducking."""
CONFIRMED_VIEW = "ducked from the confirmed start"
"""The WER view of the reply ducked from the device guard's start only (no early duck: the device
before ``hearing.early_duck_speech_ms``), beside the "ducked" view (as the device ducks, early)."""
ONSET_VIEW = "ducked from the onset"
"""The WER view of the reply ducked by ``hearing.duck_db`` from the user's first word (``_onset``):
a detection with no delay, the most an earlier duck could win over the "ducked" view."""


@dataclass
class WerFigures:
    """Word errors of the user's sentence spoken over replies, per view of the microphone, and the
    number of words (pooled over rooms and sets of replies)."""

    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WER_VIEWS, 0))
    words: int = 0
    duck_db: float = HearingSettings().duck_db
    """The depth of the "ducked" and "gated" views (``hearing.duck_db``)."""
    limit_db: float = 6.0
    """The weak canceller's removal in the ``weak_view``s (``--limit-db``)."""
    weak_db: float = HearingSettings().duck_weak_db
    """The device's depth over a weak canceller (``hearing.duck_weak_db``)."""
    weak_below_db: float = HearingSettings().weak_canceller_db
    """A canceller removing less than this is weak (``hearing.weak_canceller_db``)."""
    what: str = "the user's words"
    """What was said, as the printed line names it."""

    @classmethod
    def of(cls, settings: HearingSettings, limit_db: float, what: str = "the user's words") -> WerFigures:
        """None counted yet, the depths and the weak canceller's limit as ``settings`` and ``limit_db``."""
        return cls(
            duck_db=settings.duck_db,
            limit_db=limit_db,
            weak_db=settings.duck_weak_db,
            weak_below_db=settings.weak_canceller_db,
            what=what,
        )

    def add(self, other: WerFigures) -> None:
        """Pool ``other`` (another set of replies) into these."""
        for view, count in other.errors.items():
            self.errors[view] = self.errors.get(view, 0) + count
        self.words += other.words

    def pct(self, view: str) -> float:
        """WER (%) of ``view``."""
        return 100.0 * self.errors[view] / max(1, self.words)


def run_wer(
    replies: list[Reply],
    sentence: tuple[FloatArray, str],
    user_db: float,
    rooms: int,
    settings: HearingSettings,
    stt: Transcriber,
    other_ducks: tuple[float, ...] = (),
    limit_db: float | None = None,
) -> WerFigures:
    """Word errors of a recorded sentence spoken over replies (the first one heard before it), in
    each of ``WER_VIEWS`` and ducked by each of ``other_ducks``, and (``limit_db`` given) over a
    canceller limited to ``limit_db`` ducked by each of ``weak_depths``, transcribed by ``stt``
    (loaded)."""
    from audio.hearing.wer import reference_words, word_errors

    figures = WerFigures.of(settings, limit_db or 0.0)
    _, text = sentence
    room_list = [c for c in conditions() if c.echo_db >= -6.0][:: max(1, 24 // max(1, rooms))][:rooms]
    weak = None if limit_db is None else (limit_db, weak_depths(settings, other_ducks))
    for k, cond in enumerate(room_list):
        views = _wer_views(replies, sentence, user_db, k, cond, settings, other_ducks, weak)
        for view, signal in views.items():
            figures.errors[view] = figures.errors.get(view, 0) + word_errors(
                text, stt.transcribe(signal).text
            )
        figures.words += reference_words(text)
    return figures


def _whisper() -> Transcriber:
    """The device's Whisper (without the cross-check: the WER needs only the words), loaded."""
    from audio.hearing.stt import make_transcriber

    stt = make_transcriber(HearingSettings(stt_cross_check_model="off"))
    stt.load()
    return stt


def duck_view(db: float) -> str:
    """The WER view of the reply ducked by ``db`` (a depth other than the device's ``duck_db``)."""
    return f"ducked {db:g} dB"


def weak_view(db: float) -> str:
    """The WER view over the weak canceller, the reply ducked by ``db`` (0: not ducked)."""
    return f"weak, ducked {db:g} dB" if db else "weak, not ducked"


def weak_depths(settings: HearingSettings, other_ducks: tuple[float, ...] = ()) -> tuple[float, ...]:
    """The depths the weak canceller's views duck by: not at all, ``duck_db``, ``duck_weak_db`` (the
    device's over a weak canceller) and the other depths asked for, each once, shallow to deep."""
    return tuple(sorted({0.0, settings.duck_db, settings.duck_weak_db, *other_ducks}, reverse=True))


def duck_depths(text: str) -> tuple[float, ...]:
    """``--duck-db``: comma-separated depths in dB, each in -60..0 (``hearing.duck_db``'s range)."""
    try:
        depths = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not a list of dB values: {text!r}") from err
    if not depths or any(not -60.0 <= db <= 0.0 for db in depths):
        raise argparse.ArgumentTypeError(f"depths must be in -60..0 dB: {text!r}")
    return depths


def _wer_views(
    replies: list[Reply],
    sentence: tuple[FloatArray, str],
    user_db: float,
    k: int,
    cond: Condition,
    settings: HearingSettings,
    other_ducks: tuple[float, ...] = (),
    weak: tuple[float, tuple[float, ...]] | None = None,
) -> dict[str, FloatArray]:
    """The user's span (from 0.25 s before their sentence to 0.25 s after) in each of ``WER_VIEWS``,
    ducked from the user's first word (``ONSET_VIEW``) and by each of ``other_ducks`` (``duck_view``),
    in room ``cond``, the replies from the ``k``-th on; ``weak`` = (limit dB, depths): also over a canceller limited to that (``weak_view``)."""
    audio, _ = sentence
    order = [replies[(k + j) % len(replies)] for j in range(len(replies))]
    far = np.concatenate([r.audio for r in order])
    gain = 10 ** ((_rms_db(order[1].far16) + user_db - _rms_db(audio)) / 20)
    lead = len(order[0].far16) / RATE
    trial = Trial(far, order[0].rate, cond, (audio * gain).astype(np.float32), int((lead + 0.5) * RATE), lead)
    mic, _ = trial.mic(trial.far, seed=300 + k)
    options = FrontEndOptions(echo_delay_ms=int(cond.delay_ms))
    over, _ = _cancel(trial.far, trial.rate, mic, options, settings)
    start, at = _device_duck(trial, over, mic, settings)
    ducked_far, ducked_mic, ducked = _ducked(trial, at, settings.duck_db, options, settings, seed=300 + k)
    block = settings.sample_rate * settings.block_ms // 1000
    gated = gate_residual(
        ducked_mic,
        ducked,
        far_at_16k(ducked_far, trial.rate, len(ducked_mic)),
        block,
        parse_guard(DEVICE_GUARD),
        int(cond.delay_ms),
        settings.guard_margin_db,
    )
    span = slice(trial.at - RATE // 4, trial.at + len(trial.user) + RATE // 4)
    quiet = np.zeros(RATE // 4, np.float32)
    alone = np.concatenate([quiet, trial.user, quiet])
    views = {
        "alone": alone + _noise(len(alone), seed=400 + k),
        "ducked": ducked[span],
        "gated": gated[span],
        "over": over[span],
    }
    onset_s = (trial.at + _onset(trial.user)) / RATE
    views[ONSET_VIEW] = _ducked(trial, onset_s, settings.duck_db, options, settings, seed=300 + k)[2][span]
    if settings.early_duck_speech_ms:
        views[CONFIRMED_VIEW] = _ducked(trial, start, settings.duck_db, options, settings, seed=300 + k)[2][
            span
        ]
    for db in other_ducks:
        views[duck_view(db)] = _ducked(trial, at, db, options, settings, seed=300 + k)[2][span]
    if weak is not None:
        limit_db, depths = weak
        views.update(_weak_views(trial, settings, options, limit_db, depths, seed=300 + k, span=span))
    return views


def _weak_views(
    trial: Trial,
    settings: HearingSettings,
    options: FrontEndOptions,
    limit_db: float,
    depths: tuple[float, ...],
    seed: int,
    span: slice,
) -> dict[str, FloatArray]:
    """``trial`` over a canceller that removes only ``limit_db`` (``_limited``), the reply ducked by
    each of ``depths`` from the start the device's guard detects over that canceller, from where the
    device's utterance would begin (``_utterance_from``) to the end of ``span``."""
    mic, echo = trial.mic(trial.far, seed=seed)
    weak = _limited(_cancel(trial.far, trial.rate, mic, options, settings)[0], echo, limit_db)
    start, at = _device_duck(trial, weak, mic, settings)
    span = slice(_utterance_from(start, settings, span.start), span.stop)
    views = {}
    for db in depths:
        far = duck(trial.far, trial.rate, at, db)
        ducked_mic, ducked_echo = trial.mic(far, seed=seed)
        views[weak_view(db)] = _limited(
            _cancel(far, trial.rate, ducked_mic, options, settings)[0], ducked_echo, limit_db
        )[span]
    return views


def _device_duck(
    trial: Trial, cleaned: FloatArray, mic: FloatArray, settings: HearingSettings
) -> tuple[float | None, float | None]:
    """(the device guard's first start at or after the user's clip began, when the device ducks the
    reply for it: the early duck that start took over, else the start) on ``cleaned`` (s; None:
    no start)."""
    far16 = far_at_16k(trial.far, trial.rate, len(mic))
    found = detections(cleaned, mic, far16, DEVICE_GUARD, settings, trial.lead, delay_ms=trial.cond.delay_ms)
    after = trial.at / RATE
    start = next((t for t in found.starts if t >= after), None)
    return start, duck_from(found, after, settings.early_duck_release_ms / 1000)


def _ducked(
    trial: Trial, at: float | None, db: float, options: FrontEndOptions, settings: HearingSettings, seed: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(far end, microphone, cleaned) of ``trial`` with the reply ducked by ``db`` from ``at``."""
    far = duck(trial.far, trial.rate, at, db)
    mic = trial.mic(far, seed=seed)[0]
    cleaned, _ = _cancel(far, trial.rate, mic, options, settings)
    return far, mic, cleaned


def _utterance_from(at: float | None, settings: HearingSettings, earliest: int) -> int:
    """The sample where the device's utterance reported at ``at`` (s) would begin: the speech its
    start needed (``barge_in_speech_ms``) and the pre-roll before it, not before ``earliest``
    (nothing reported: ``earliest``). Over a weak canceller the start comes late; what came before
    it, the reply's echo at nearly full level, never reaches Whisper."""
    if at is None:
        return earliest
    back_ms = settings.barge_in_start_ms + settings.pre_roll_ms
    return max(earliest, int((at - back_ms / 1000) * RATE))


def _pct(values: list[float | None], within: float) -> float:
    return 100.0 * sum(1 for v in values if v is not None and v <= within) / max(1, len(values))


def _median_ms(values: list[float | None]) -> str:
    hit = [v for v in values if v is not None]
    return f"{1000 * statistics.median(hit):.0f}" if hit else "-"


def print_tables(
    echo: EchoFigures, barge: BargeInFigures, wer: WerFigures | None, commands: WerFigures | None = None
) -> None:
    """The benchmark's tables (the guards ``barge`` measured, in its order); the WER check of the
    recorded sentence (``wer``) and of the short barge-ins (``commands``)."""
    guards = list(barge.latencies)
    _print_echo(echo, guards)
    _print_barge_in(barge, guards)
    for figures in (wer, commands):
        if figures is not None:
            _print_wer(figures)
    cpu = statistics.median(echo.cpu_ms) if echo.cpu_ms else 0.0
    print(
        f"\nFront end CPU: {cpu:.3f} ms per 10 ms frame = {cpu / 10 * 100:.1f} % of one core (thread time; machine shared)"
    )
    print(
        "Goals: ERLE >= 30 dB; 0 false barge-ins per 100 replies; >= 95 % within 300 ms; WER within 5 points; <= 10 % of a core"
    )


def _print_echo(echo: EchoFigures, guards: list[str]) -> None:
    """The echo-only table: ERLE and false starts per 100 replies, per canceller and guard."""
    print(
        f"\nEcho only: {echo.replies} replies over {len(conditions())} rooms "
        f"(delays {', '.join(f'{d:.0f}' for d in DELAYS_MS)} ms; echo {', '.join(f'{e:.0f}' for e in ECHO_DBS)} dB; "
        f"RT60 {', '.join(f'{r}' for r in RT60S)} s)"
    )
    print(
        f"{'canceller':<16}{'ERLE median':>12}{'ERLE min':>10}"
        + "".join(f"{'false/100 ' + g:>31}" for g in guards)
    )
    for name in echo.erle:
        erles = echo.erle[name]
        med = f"{statistics.median(erles):.1f}" if erles else "-"
        low = f"{min(erles):.1f}" if erles else "-"
        row = "".join(f"{100.0 * echo.false_starts[(name, g)] / echo.replies:>31.1f}" for g in guards)
        print(f"{name:<16}{med:>12}{low:>10}{row}")
    cold = "".join(f"{100.0 * echo.cold_starts[('full', g)] / echo.replies:>31.1f}" for g in guards)
    print(f"{'full, cold start':<38}{cold}   (the first reply after the canceller started)")
    bounds = ", ".join(
        f"{g} {interval_pct(min(echo.false_starts[('full', g)], echo.replies), echo.replies)}" for g in guards
    )
    print(f"(false/100 with the full canceller, 95 % interval: {bounds})")
    _print_dips(echo, [g for g in guards if parse_guard(g).variant.startswith("strict")])


def _print_dips(echo: EchoFigures, guards: list[str]) -> None:
    """The early duck's dips of the reply with nobody speaking, per 100 replies, per canceller and
    ``strict`` guard (the others do not stir)."""
    if not guards or not echo.early_ms:
        return
    print(
        f"Early duck (hearing.early_duck_speech_ms {echo.early_ms} ms, released after "
        f"{echo.release_ms} ms): dips of the reply with nobody speaking, per 100 replies (mean length)"
    )
    for name in echo.erle:
        cells = []
        for g in guards:
            lengths = echo.dips[(name, g)]
            mean = f"{1000 * statistics.mean(lengths):.0f} ms" if lengths else "-"
            cells.append(f"{g} {100.0 * len(lengths) / echo.replies:.1f} ({mean})")
        print(f"  {name:<14}" + "; ".join(cells))


def _print_barge_in(barge: BargeInFigures, guards: list[str]) -> None:
    """The barge-in table: onsets reported within 300 ms, at all, the median latency, the median
    onset → duck, per guard."""
    print(
        f"\nBarge-in: {len(next(iter(barge.latencies.values())))} user onsets over replies (room echo -6 dB; "
        "ducked: onset to the reply ducked, by the early duck the start took over or at the start)"
    )
    print(
        f"{'guard':<20}{'within 300 ms %':>16}{'95 % interval':>15}{'detected %':>12}{'median ms':>11}"
        f"{'false before onset':>20}{'ducked, median ms':>19}"
    )
    for g in guards:
        lat = barge.latencies[g]
        within = sum(1 for v in lat if v is not None and v <= 0.3)
        print(
            f"{g:<20}{_pct(lat, 0.3):>16.1f}{interval_pct(within, len(lat)):>15}{_pct(lat, 1.5):>12.1f}"
            f"{_median_ms(lat):>11}{barge.early[g]:>20}{_median_ms(barge.ducks.get(g, [])):>19}"
        )
    if barge.weak:
        within = sum(1 for v in barge.weak if v is not None and v <= 0.3)
        print(
            f"{DEVICE_GUARD} over a canceller limited to {barge.weak_db:g} dB: {_pct(barge.weak, 0.3):.1f} % "
            f"within 300 ms ({interval_pct(within, len(barge.weak))}), {_pct(barge.weak, 1.5):.1f} % detected, "
            f"median {_median_ms(barge.weak)} ms"
        )


def _print_wer(wer: WerFigures) -> None:
    """The WER line: each view beside the sentence alone."""
    alone = wer.pct("alone")

    def pts(view: str) -> str:
        return f"{wer.pct(view):.1f} % ({wer.pct(view) - alone:+.1f} points)"

    print(
        f"\nWER of {wer.what} ({wer.words} words): alone {alone:.1f} %; over the echo, cleaned, reply "
        f"ducked as the device ducks it (its guard {DEVICE_GUARD}) {pts('ducked')}, as the device "
        f"transcribes it; the same through the residual-echo gate (the VAD's view) {pts('gated')}; "
        f"not ducked {pts('over')}"
    )
    if CONFIRMED_VIEW in wer.errors:
        print(
            "the early duck (hearing.early_duck_speech_ms) is in the ducked view; "
            f"without it, ducked from the confirmed start {pts(CONFIRMED_VIEW)}"
        )
    if ONSET_VIEW in wer.errors:
        print(f"the reply ducked from the user's first word (a detection with no delay) {pts(ONSET_VIEW)}")
    others = [
        view
        for view in wer.errors
        if view not in (*WER_VIEWS, ONSET_VIEW, CONFIRMED_VIEW) and not view.startswith("weak")
    ]
    if others:
        print(
            f"the reply ducked by {wer.duck_db:g} dB (hearing.duck_db) and by other depths: "
            + "; ".join(f"{view} {pts(view)}" for view in ["ducked", *others])
        )
    weak = [view for view in wer.errors if view.startswith("weak")]
    if weak:
        print(
            f"over a canceller limited to {wer.limit_db:g} dB (the device ducks by hearing.duck_weak_db, "
            f"{wer.weak_db:g} dB, over one removing less than hearing.weak_canceller_db, "
            f"{wer.weak_below_db:g} dB), from the start detected over it: "
            + "; ".join(f"{view.removeprefix('weak, ')} {pts(view)}" for view in weak)
        )


@dataclass
class CancellerRun:
    """One canceller's figures, pooled over the sets of replies."""

    settings: HearingSettings
    """The hearing settings it ran with (``echo_cancellation`` names it)."""
    echo: EchoFigures | None = None
    barge: BargeInFigures | None = None
    wer: WerFigures | None = None
    commands: WerFigures | None = None

    def add(self, echo: EchoFigures, barge: BargeInFigures) -> None:
        """Pool one set's echo-only and barge-in figures."""
        if self.echo is None or self.barge is None:
            self.echo, self.barge = echo, barge
        else:
            self.echo.add(echo)
            self.barge.add(barge)


def main(args: argparse.Namespace) -> int:
    """Run the benchmark (every canceller on the same replies) and print the tables."""
    t0 = time.monotonic()
    base = replace(HearingSettings(), barge_in_speech_ms=args.barge_in_ms, early_duck_speech_ms=args.early_ms)
    base.validate()
    clips = _user_clips(Path(args.speech))
    runs = [_new_run(canceller_settings(base, name), args) for name in args.cancellers]
    command_clips = [] if args.no_wer or args.no_commands else synthesise_commands()
    other_ducks = tuple(db for db in args.duck_db if db != base.duck_db)
    sentence = None if args.no_wer else _sentence(Path(args.speech))
    stt = None if args.no_wer else _whisper()
    for _ in range(args.sets):  # Piper samples its durations: every set is other replies
        replies = synthesise_replies(len(REPLIES))
        for run in runs:  # paired: each canceller hears the same replies, rooms and users
            settings = run.settings
            run.add(
                run_echo_only(replies, args.per_room, args.limit_db, settings, args.guards),
                run_barge_in(replies, clips, args.trials, args.user_db, settings, args.guards, args.limit_db),
            )
            if run.wer is not None and sentence is not None and stt is not None:
                limit = None if args.no_weak else args.limit_db
                run.wer.add(
                    run_wer(
                        replies, sentence, args.user_db, args.wer_rooms, settings, stt, other_ducks, limit
                    )
                )
            if (
                run.commands is not None and stt is not None
            ):  # the weak canceller: the sentence's line says it
                for clip in command_clips:
                    run.commands.add(
                        run_wer(replies, clip, args.user_db, args.wer_rooms, settings, stt, other_ducks)
                    )
    if args.sets > 1:
        print(f"\n{args.sets} sets of replies, synthesised afresh, pooled")
    for run in runs:
        assert run.echo is not None and run.barge is not None  # args.sets >= 1
        if len(runs) > 1:
            print(f"\n==== canceller: {canceller_label(run.settings)} ====")
        print_tables(run.echo, run.barge, run.wer, run.commands)
    if len(runs) > 1:
        print_cancellers(runs)
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


def _new_run(settings: HearingSettings, args: argparse.Namespace) -> CancellerRun:
    """An empty ``CancellerRun`` with the WER checks ``args`` asks for."""
    short = f"short barge-ins in the project's Piper voice ({len(COMMANDS)} commands, e.g. {COMMANDS[0]!r})"
    return CancellerRun(
        settings,
        wer=None if args.no_wer else WerFigures.of(settings, args.limit_db),
        commands=None if args.no_wer or args.no_commands else WerFigures.of(settings, args.limit_db, short),
    )


def print_cancellers(runs: list[CancellerRun]) -> None:
    """The cancellers side by side: the device guard (``DEVICE_GUARD``, each canceller's own gate
    margin) on the same replies."""
    print(
        f"\nThe cancellers side by side (the device guard, {DEVICE_GUARD}, at each one's barge-in start "
        "and gate margin)"
    )
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, cell: Callable[[CancellerRun], str]) -> None:
        rows.append((label, [cell(run) for run in runs]))

    def echo(run: CancellerRun) -> EchoFigures:
        assert run.echo is not None
        return run.echo

    def barge(run: CancellerRun) -> BargeInFigures:
        assert run.barge is not None
        return run.barge

    row("barge-in start (ms of speech)", lambda r: f"{r.settings.barge_in_start_ms}")
    row("gate margin (dB)", lambda r: f"{r.settings.guard_margin_db:g}")
    row("output delay (ms)", lambda r: f"{1000 * output_delay_s(r.settings):.0f}")
    row("ERLE median / min (dB)", lambda r: f"{_erle(echo(r), statistics.median)} / {_erle(echo(r), min)}")
    row("false starts per 100 replies", lambda r: _per_100(echo(r).false_starts, echo(r)))
    row("  in the first reply (cold)", lambda r: _per_100(echo(r).cold_starts, echo(r)))
    row("barge-ins within 300 ms (%)", lambda r: f"{_pct(barge(r).latencies[DEVICE_GUARD], 0.3):.1f}")
    row("onset -> start, median (ms)", lambda r: _median_ms(barge(r).latencies[DEVICE_GUARD]))
    row("sentence WER over echo - alone (pts)", lambda r: _wer_delta(r.wer))
    row("short barge-ins WER - alone (pts)", lambda r: _wer_delta(r.commands))
    row(
        "front end CPU (% of one core)",
        lambda r: f"{statistics.median(echo(r).cpu_ms) / 10 * 100:.1f}" if echo(r).cpu_ms else "-",
    )
    print(f"{'':<38}" + "".join(f"{canceller_label(run.settings):>14}" for run in runs))
    for label, cells in rows:
        print(f"{label:<38}" + "".join(f"{c:>14}" for c in cells))


def _erle(echo: EchoFigures, pick: Callable[[list[float]], float]) -> str:
    values = echo.erle.get("full", [])
    return f"{pick(values):.1f}" if values else "-"


def _per_100(counts: dict[tuple[str, str], int], echo: EchoFigures) -> str:
    return f"{100.0 * counts.get(('full', DEVICE_GUARD), 0) / max(1, echo.replies):.1f}"


def _wer_delta(figures: WerFigures | None) -> str:
    if figures is None or not figures.words:
        return "-"
    return f"{figures.pct('ducked') - figures.pct('alone'):+.1f}"


def canceller_names(text: str) -> tuple[str, ...]:
    """``--cancellers``: comma-separated names of ``CANCELLERS``, "dtln" with a size as
    ``dtln:<units>`` (``ECHO_MODEL_UNITS``; plain "dtln": ``hearing.echo_model_units``) (argparse type)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if not _canceller_name_ok(n)]
    if not names or bad:
        sizes = "|".join(map(str, ECHO_MODEL_UNITS))
        raise argparse.ArgumentTypeError(
            f"name one or more of {', '.join(CANCELLERS)} (dtln:{sizes} for a size) (got {text!r})"
        )
    return names


def _canceller_name_ok(name: str) -> bool:
    kind, colon, units = name.partition(":")
    if not colon:
        return kind in CANCELLERS
    return kind == "dtln" and units.isdigit() and int(units) in ECHO_MODEL_UNITS


def canceller_settings(base: HearingSettings, name: str) -> HearingSettings:
    """``base`` running the canceller ``name`` (a ``canceller_names`` name) names."""
    kind, _, units = name.partition(":")
    settings = replace(base, echo_cancellation=kind)
    return replace(settings, echo_model_units=int(units)) if units else settings


def canceller_label(settings: HearingSettings) -> str:
    """The canceller ``settings`` run, as the tables name it ("webrtc", "dtln:512", ...)."""
    if settings.echo_cancellation == "dtln":
        return f"dtln:{settings.echo_model_units}"
    return settings.echo_cancellation


def _speech_ms(b: argparse.ArgumentParser, flag: str, key: str, what: str, note: str = "") -> None:
    """An option for the ``[hearing]`` setting ``key`` (ms), its default the setting's."""
    default = getattr(HearingSettings(), key)
    more = f"; {note}" if note else ""
    b.add_argument(
        flag, type=int, default=default, help=f"{what}, ms (default {default}, hearing.{key}{more})"
    )


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``bench duplex`` (``sub``: no top-level command)."""
    b = bench.add_parser("duplex", help="echo cancellation and barge-in in the simulated room")
    b.add_argument(
        "--per-room", type=int, default=3, help="echo-only replies per room (default 3: 108 replies)"
    )
    b.add_argument("--trials", type=int, default=60, help="barge-in trials (default 60)")
    b.add_argument(
        "--user-db", type=float, default=-6.0, help="user level re the reply at the speaker, dB (default -6)"
    )
    b.add_argument("--limit-db", type=float, default=6.0, help="the weak canceller's ERLE, dB (default 6)")
    _speech_ms(b, "--barge-in-ms", "barge_in_speech_ms", "speech needed for a barge-in")
    _speech_ms(
        b,
        "--early-ms",
        "early_duck_speech_ms",
        "speech over the reply that ducks it early",
        "0 = no early duck",
    )
    b.add_argument("--wer-rooms", type=int, default=6, help="rooms for the WER check (default 6)")
    b.add_argument(
        "--sets",
        type=positive_int,
        default=1,
        help="sets of replies, each synthesised afresh (Piper samples its durations, and which "
        "sentence's pauses meet which room moves the false starts most), run and pooled (default 1)",
    )
    b.add_argument(
        "--guards",
        type=guard_names,
        default=GUARDS,
        help="the guards side by side, comma-separated (default: " + ",".join(GUARDS) + "); a name is a "
        "variant (vad, residual, gate, strict, strict+gate) with strict<ms> (the start's speech), "
        "/<n>dB (the gate's margin), @<ms> (the reply-onset window), ~<n> (the most dB the canceller "
        "may have removed from a user's frame), -tail (no tail rule)",
    )
    b.add_argument(
        "--duck-db",
        type=duck_depths,
        default=(),
        help="other depths to duck the reply by in the WER check, comma-separated dB (e.g. -20,-30), "
        f"beside hearing.duck_db ({HearingSettings().duck_db:g})",
    )
    b.add_argument("--no-wer", action="store_true", help="skip the WER check (no Whisper)")
    b.add_argument(
        "--no-commands",
        action="store_true",
        help="skip the WER check's short barge-ins (COMMANDS, in the project's Piper voice)",
    )
    b.add_argument(
        "--no-weak",
        action="store_true",
        help="skip the WER check over the weak canceller (--limit-db; ducked by none, hearing.duck_db, "
        "hearing.duck_weak_db and --duck-db)",
    )
    b.add_argument(
        "--cancellers",
        type=canceller_names,
        default=CANCELLERS,
        help="the echo cancellers to run on the same replies, comma-separated, dtln:256 for DTLN-aec's "
        "smaller size (default: " + ",".join(CANCELLERS) + "; hearing.echo_cancellation, .echo_model_units)",
    )
    b.add_argument("--speech", default=str(SPEECH_DIR), help=f"recorded speech set (default {SPEECH_DIR})")
    b.set_defaults(func=main)
