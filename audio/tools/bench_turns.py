"""``robot-face bench turns``: how fast a finished turn is answered and how often a hesitation splits it.

Every clip goes through the runtime's own path at real-time speed: a ``SimulatedMicrophone`` (room
noise, real-time blocks) → ``Listener`` (VAD, endpointer, end-of-turn model, speculative decode,
Whisper) → events, once per detector configuration, side by side in one run:

- complete turns (real recorded sentences and Piper's joe): time from the last speech frame the VAD
  saw (``speech_ended.ts``) to the ``transcript`` event, median and p90; the share that waited for
  the fallback silence (``end: silence``);
- hesitations: real sentences cut at a pause between two words, the pause stretched to each of
  ``--pauses`` seconds: the share kept whole (one utterance, one transcript);
- prompt fragments the set takes for sentences (``PROMPT_FRAGMENTS``): run like complete turns,
  counted apart (how many waited for the fallback, which is right for them);
- the end-of-turn model's CPU time per utterance (features + inference, thread CPU), and the
  process's (every thread) per utterance.

Timings depend on the load of the machine: run it on a quiet one. They also move between runs on a
quiet one (40-70 ms of median over 24 turns): ``rounds`` runs every configuration several times,
interleaved in alternating order, and pools them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from audio.edges.capture import SimulatedMicrophone
from audio.edges.wav import FloatArray
from audio.events import AudioEvent, SpeechEnded, SpeechStarted, Transcribed, UtteranceFailed
from audio.hearing.engine import Transcriber
from audio.hearing.listener import Listener, TurnAsk
from audio.hearing.settings import HearingSettings
from audio.hearing.turn_model import TurnModel
from audio.hearing.vad import frame_levels_db
from audio.hearing.wer import reference_words, word_errors
from audio.tools.proportions import grouped_interval_pct

RATE = 16000
FRAME = 480
"""30 ms analysis frames for finding pauses."""
PIPER_SENTENCES = (
    "What time is it?",
    "Turn on the lights in the kitchen.",
    "Can you tell me a story about a dragon?",
    "Please remind me to call my sister tomorrow morning.",
    "I would like to listen to some quiet music while I read my book.",
    "How far away is the moon?",
    "Let's play the animal quiz.",
    "My favourite colour is blue.",
    "Apple, river, chair.",
    "Yes, please.",
    "Hmm, maybe the fitness one.",
    "Okay, let's do the animal quiz.",
)
"""Piper's sentences; the last four pause at a comma (150-240 ms of non-speech to the runtime's VAD):
one transcript each is right, the first word alone is a turn cut short."""

PROMPT_FRAGMENTS: dict[str, str] = {
    "asterisk_en/conf-enteringno.wav": "You are entering conference number (the number follows)",
    "asterisk_en/conf-otherinparty.wav": "(a count, then) other participants in the conference",
    "asterisk_en/queue-holdtime.wav": "The estimated hold time is currently (the minutes follow)",
    "asterisk_en/queue-thereare.wav": "You are currently caller number (the place follows)",
    "asterisk_en/spy-misdn.wav": "M I S D N (a name spelt out)",
    "asterisk_en/vm-num-i-have.wav": "the number i have is (the number follows)",
    "asterisk_en/vm-savemessage.wav": "(… press seven to delete) or nine to save this message",
}
"""Real clips that ``real_clips``' rule takes for sentences (five words or more, no punctuation) and
are telephone prompt fragments, made to be said before a number or after another prompt: not a
complete turn (the device is right to wait for the fallback on them) and no sentence to cut.
``build_clips`` makes them ``fragment`` clips, run beside the complete turns and reported apart.
Found by reading every such Asterisk text (51, 2026-12-07). The other sources' such texts are lines
people read as they are: a test recording's sentence, a book's clause between two pauses of the
reader (two LibriVox lines begin with "and" / "unless"), ended as a turn ends; kept."""
SEVERAL_SENTENCES: frozenset[str] = frozenset({"asterisk_en/vm-review.wav"})
"""Real clips of more than one sentence without punctuation ("press one to accept this recording
press two to listen to it press three to rerecord your message"): complete turns, but not cut for a
hesitation (their longest pause is between two sentences, where a turn may end)."""

ClipKind = Literal["complete", "hesitation", "fragment"]


@dataclass(frozen=True, slots=True)
class Clip:
    """One bench input: audio, what was said, and for a hesitation the stretched pause (s)."""

    name: str
    text: str
    audio: FloatArray
    kind: ClipKind
    pause_s: float = 0.0
    voice: str = "real"


@dataclass(slots=True)
class Outcome:
    """What the runtime made of one clip."""

    clip: Clip
    utterances: int = 0
    transcripts: list[str] = field(default_factory=list)
    latency_s: float | None = None
    """Last speech frame → transcript of the clip's last utterance."""
    decided_s: float | None = None
    """Last speech frame → ``speech_ended`` (the endpointing alone, without the decode's wait)."""
    end: str | None = None
    model_cpu_ms: float = 0.0
    asks: int = 0
    ask_log: list[str] = field(default_factory=list)
    ask_records: list[TurnAsk] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        """One utterance and one transcript (a hesitation kept whole, a complete turn not cut)."""
        return self.utterances == 1 and len(self.transcripts) == 1


def _speech_mask(levels: np.ndarray) -> np.ndarray:
    """The frames of speech among ``levels`` (dB): within 30 dB of the loudest, and over -50."""
    return np.asarray(levels > max(-50.0, float(levels.max()) - 30.0))


def hesitation(audio: FloatArray, pause_s: float) -> FloatArray | None:
    """``audio`` cut at the longest pause between words in the middle of the speech (35-80 % of it;
    the quietest frame there if no pause), the pause replaced by ``pause_s`` of silence; None when
    the clip has too little speech to cut."""
    levels = frame_levels_db(audio, FRAME)
    mask = _speech_mask(levels)
    idx = np.flatnonzero(mask)
    if len(idx) < 20:
        return None
    first, last = int(idx[0]), int(idx[-1])
    lo, hi = first + int(0.35 * (last - first)), first + int(0.8 * (last - first))
    best: tuple[int, int] = (0, -1)  # (length, start) of the longest non-speech run in [lo, hi]
    run = 0
    for i in range(lo, hi + 1):
        run = 0 if mask[i] else run + 1
        if run and run >= best[0]:
            best = (run, i + 1 - run)
    if best[1] >= 0:
        start, end = best[1] * FRAME, (best[1] + best[0]) * FRAME
    else:
        start = end = (lo + int(np.argmin(levels[lo : hi + 1]))) * FRAME + FRAME // 2
    gap = np.zeros(int(pause_s * RATE), np.float32)
    return np.concatenate([audio[:start], gap, audio[end:]]).astype(np.float32)


def real_clips(directory: Path, limit: int) -> list[tuple[str, str, FloatArray]]:
    """Whole real sentences from a manifest set: (name, transcript, audio) of 1.5-8 s speech clips
    whose transcript is a sentence: ends in ``.``/``?``/``!`` (at least four words), or has no
    punctuation at all (at least five words); prompt fragments ("..."), verse lines, card names and
    digit strings are left out. The sources other than the big Asterisk set come first (more voices)."""
    from audio.tools.eval_confidence import read_clip, read_manifest

    others: list[tuple[str, str, FloatArray]] = []
    asterisk: list[tuple[str, str, FloatArray]] = []
    for row in read_manifest(directory):
        text = row.get("transcript", "").strip()
        words = len(text.split())
        if row["kind"] != "speech" or "..." in text or "sonnet" in row["relpath"]:
            continue
        sentence = (text.endswith((".", "?", "!")) and words >= 4) or (
            text.isascii() and text.replace("'", "").replace(" ", "").isalpha() and words >= 5
        )
        if not sentence or "/cards/" in row["relpath"] or "tidigits" in row["relpath"]:
            continue
        audio = read_clip(directory, row["relpath"], RATE, [])
        if audio is not None and 1.5 <= len(audio) / RATE <= 8.0:
            (asterisk if row["relpath"].startswith("asterisk") else others).append(
                (row["relpath"], text, audio)
            )
    rest = max(0, limit - len(others))
    step = max(1, len(asterisk) // max(1, rest))
    return (others + asterisk[::step][:rest])[:limit]


def piper_clips() -> list[Clip]:
    """The bench sentences in Piper's joe voice (no sampling noise: the same audio every run)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import build_speech_sets as bss

    lead = np.zeros(RATE // 5, np.float32)
    return [
        Clip(
            f"piper:{t}",
            t,
            np.concatenate([lead, bss.synth(t, "piper:joe:1.0", noise=False)]),
            "complete",
            0.0,
            "piper, commas" if "," in t else "piper",
        )
        for t in PIPER_SENTENCES
    ]


def _cuttable(name: str, text: str) -> bool:
    """Whether a real clip is one sentence of at least five words, to cut for a hesitation."""
    one_sentence = not any(m in text[:-1] for m in [".", "?", "!"])
    whole = name not in PROMPT_FRAGMENTS and name not in SEVERAL_SENTENCES
    return len(text.split()) >= 5 and one_sentence and whole


def build_clips(
    directory: Path, limit: int, hesitations: int, pauses: list[float], piper: bool
) -> list[Clip]:
    """Complete turns (real + Piper), prompt fragments (real, ``PROMPT_FRAGMENTS``) and hesitations
    (real, each pause length)."""
    real = real_clips(directory, limit)
    clips = [
        Clip(name, text, audio, "fragment" if name in PROMPT_FRAGMENTS else "complete")
        for name, text, audio in real
    ]
    if piper:
        clips += piper_clips()
    long = [r for r in real if _cuttable(r[0], r[1])]
    long = long[:: max(1, len(long) // max(1, hesitations))][:hesitations]
    for name, text, audio in long:
        for p in pauses:
            cut = hesitation(audio, p)
            if cut is not None:
                clips.append(Clip(f"{name}+{p:.1f}s", text, cut, "hesitation", p))
    return clips


class _Events:
    def __init__(self) -> None:
        self.events: list[AudioEvent] = []
        self.received: list[float] = []
        """Wall time each event reached the sink."""

    def __call__(self, ev: AudioEvent) -> None:
        self.events.append(ev)
        self.received.append(time.time())

    def open_utterances(self) -> int:
        started = sum(isinstance(e, SpeechStarted) for e in self.events)
        return started - sum(isinstance(e, Transcribed | UtteranceFailed) for e in self.events)


async def run_config(
    settings: HearingSettings,
    clips: list[Clip],
    transcriber: Transcriber,
    turn_model: TurnModel | None,
    gap_s: float = 0.6,
) -> list[Outcome]:
    """Feed every clip through one Listener at real-time speed; one ``Outcome`` per clip."""
    mic = SimulatedMicrophone(speed=1.0, noise_db=-65.0)
    rec = _Events()
    counter = itertools.count(1)
    listener = Listener(
        settings, mic, transcriber, rec, utterance_ids=lambda: f"u{next(counter)}", turn_model=turn_model
    )
    await listener.open()
    await asyncio.sleep(0.5)  # let the noise floor settle
    outcomes = []
    try:
        for clip in clips:
            mark, asks_before = len(rec.events), len(listener.turn_asks)
            mic.feed(clip.audio)
            while mic.pending_samples or rec.open_utterances():
                await asyncio.sleep(0.02)
            await asyncio.sleep(gap_s)
            asks = list(listener.turn_asks)[asks_before:]
            outcomes.append(_outcome(clip, rec.events[mark:], rec.received[mark:], asks))
    finally:
        await listener.aclose()
    return outcomes


def _outcome(clip: Clip, events: list[AudioEvent], received: list[float], asks: list[TurnAsk]) -> Outcome:
    out = Outcome(clip)
    out.ask_log = [
        f"p={a.probability:.2f} {a.text!r}{'' if a.end_prob is None else f' end={a.end_prob:.2f}'}"
        f" → {'complete' if a.complete else 'late (turn_late_ms)' if a.late else 'wait'}"
        for a in asks
    ]
    out.utterances = sum(isinstance(e, SpeechStarted) for e in events)
    out.transcripts = [e.text for e in events if isinstance(e, Transcribed)]
    ended = [e for e in events if isinstance(e, SpeechEnded)]
    done = [e for e in events if isinstance(e, Transcribed)]
    if ended and done and done[-1].utterance == ended[-1].utterance:
        out.latency_s = done[-1].ts - ended[-1].ts
        out.decided_s = received[events.index(ended[-1])] - ended[-1].ts
        out.end = ended[-1].end
    out.model_cpu_ms = sum(a.cpu_ms for a in asks)
    out.ask_records = asks
    out.asks = len(asks)
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values), q))


def _wer(outcomes: list[Outcome]) -> float:
    """Word error rate of the clips' transcripts (joined) against what was said."""
    errors = sum(word_errors(o.clip.text, " ".join(o.transcripts)) for o in outcomes)
    return errors / max(1, sum(reference_words(o.clip.text) for o in outcomes))


def complete_latencies_ms(outcomes: list[Outcome]) -> list[float]:
    """Last speech frame → transcript of every complete turn that got one (ms)."""
    return [o.latency_s * 1000 for o in outcomes if o.clip.kind == "complete" and o.latency_s is not None]


def summary(name: str, outcomes: list[Outcome], pauses: list[float]) -> dict[str, str]:
    """One table row: the figures of one configuration."""
    complete = [o for o in outcomes if o.clip.kind == "complete"]
    fragments = [o for o in outcomes if o.clip.kind == "fragment"]
    lat = complete_latencies_ms(complete)
    decided = [o.decided_s * 1000 for o in complete if o.decided_s is not None]
    fallback = sum(o.end == "silence" for o in complete)
    # A complete turn of two sentences ("No thanks. Good night.") ended at the first one's pause.
    cut = sum(not o.whole for o in complete)
    row = {
        "detector": name,
        "turns": str(len(complete)),
        "median ms": f"{_pct(lat, 50):.0f}",
        "p90 ms": f"{_pct(lat, 90):.0f}",
        "end median": f"{_pct(decided, 50):.0f}",
        "end p90": f"{_pct(decided, 90):.0f}",
        "fallback": f"{fallback}/{len(complete)}" if name != "silence" else "-",
        "fragments waited": f"{sum(o.end == 'silence' for o in fragments)}/{len(fragments)}"
        if name != "silence"
        else "-",
        "turns cut": f"{cut}/{len(complete)}",
        "WER": f"{100 * _wer(complete):.1f}%",
    }
    for p in pauses:
        hes = [o for o in outcomes if o.clip.kind == "hesitation" and o.clip.pause_s == p]
        whole = sum(o.whole for o in hes)
        row[f"whole@{p:.1f}s"] = f"{whole}/{len(hes)}"
    upto = [o for o in outcomes if o.clip.kind == "hesitation" and o.clip.pause_s <= 1.2 + 1e-9]
    whole = sum(o.whole for o in upto)
    row["whole<=1.2s"] = f"{100 * whole / max(1, len(upto)):.0f}%"
    sentences = {o.clip.name.rsplit("+", 1)[0] for o in upto}  # a sentence's pauses split together
    row["whole 95 % interval"] = grouped_interval_pct(whole, len(upto), len(sentences))
    utts = sum(o.utterances for o in outcomes)
    cpu = sum(o.model_cpu_ms for o in outcomes)
    row["model cpu/utt"] = f"{cpu / max(1, utts):.0f} ms"
    row["asks/utt"] = f"{sum(o.asks for o in outcomes) / max(1, utts):.1f}"
    return row


def print_table(rows: list[dict[str, str]]) -> None:
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    print("  ".join(k.rjust(widths[k]) for k in keys))
    for r in rows:
        print("  ".join(r[k].rjust(widths[k]) for k in keys))


def print_details(name: str, outcomes: list[Outcome]) -> None:
    """Per-voice latency, fallbacks and cut turns, and every split hesitation / fallback turn (what
    to look at)."""
    for voice in sorted({o.clip.voice for o in outcomes}):
        turns = [o for o in outcomes if o.clip.voice == voice and o.clip.kind == "complete"]
        lat = [o.latency_s * 1000 for o in turns if o.latency_s]
        if lat:
            waited = sum(o.end == "silence" for o in turns)
            cut = sum(not o.whole for o in turns)
            print(
                f"  {name} {voice}: median {statistics.median(lat):.0f} ms, p90 {_pct(lat, 90):.0f} ms"
                f" over {len(lat)}; fallback {waited}/{len(turns)}, cut {cut}/{len(turns)}"
            )
    for o in outcomes:
        what = _what_to_look_at(o)
        if what is not None:
            print(f"  {name} {what}: {o.clip.name}: {o.transcripts} {'; '.join(o.ask_log)}")


def _what_to_look_at(o: Outcome) -> str | None:
    """A split hesitation, a complete turn cut in two or left to the fallback, every prompt
    fragment (with how it ended); None for the rest."""
    if o.clip.kind == "hesitation":
        return None if o.whole else "split"
    if o.clip.kind == "fragment":
        return f"fragment, end={o.end}"
    if not o.whole:
        return "turn cut"
    return "fallback" if o.end == "silence" else None


BLAS_POOL_SUFFIX = "@blas-pool"
"""A configuration run with numpy's BLAS pool at the library's default (a thread per core) instead
of the runtime's one thread (``device.native_threads``): the baseline of that change."""


def _blas_pool(spec: str) -> tuple[str, bool]:
    """(``spec`` without ``BLAS_POOL_SUFFIX``, whether it had it)."""
    if spec.endswith(BLAS_POOL_SUFFIX):
        return spec[: -len(BLAS_POOL_SUFFIX)], True
    return spec, False


@contextlib.contextmanager
def _blas_threads(threads: int | None) -> Iterator[None]:
    """The BLAS pools at ``threads`` inside the block (None: as they are)."""
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def parse_config(spec: str, base: HearingSettings) -> tuple[str, HearingSettings]:
    """``silence`` or ``smart_turn[:TEXT_CHECK[:THRESHOLD[:PAUSE_MS[:LATE_MS[:DECODE_MS[:ASK_MS[:HOLD_MS]]]]]]]``
    → (label, settings); LATE_MS is ``turn_late_ms`` (0: no late check), DECODE_MS ``turn_decode_ms``
    (the pause at which the speculative decode starts, at most PAUSE_MS; 0: with the question),
    ASK_MS ``turn_ask_ms`` (the pause at which the model is asked, at most PAUSE_MS; 0: at PAUSE_MS),
    HOLD_MS ``turn_hold_ms`` (the least pause a "complete" verdict ends; 0: PAUSE_MS). Any part
    ``KEY=VALUE`` (anywhere after the detector) sets that ``[hearing]`` setting instead, e.g.
    ``smart_turn:turn_late_end=0.7``."""
    detector, *parts = spec.split(":")
    positional = [p for p in parts if "=" not in p]
    overrides = dict(_override(p, base) for p in parts if "=" in p)
    check, threshold, pause, late, decode, ask, hold = (positional + [""] * 7)[:7]
    if len(positional) > 7:
        raise ValueError(f"too many parts in {spec!r}")
    if detector == "silence":
        s = replace(base, turn_detector="silence", **overrides)
        s.validate()
        return "silence" + "".join(f":{k}={v}" for k, v in overrides.items()), s
    if detector != "smart_turn":
        raise ValueError(
            f"unknown detector {detector!r}"
            " (use smart_turn[:CHECK[:THRESHOLD[:PAUSE_MS[:LATE_MS[:DECODE_MS[:ASK_MS[:HOLD_MS]]]]]]] or silence)"
        )
    s = replace(
        base,
        turn_detector="smart_turn",
        turn_text_check=check or base.turn_text_check,
        turn_threshold=float(threshold) if threshold else base.turn_threshold,
        turn_pause_ms=int(pause) if pause else base.turn_pause_ms,
        turn_late_ms=int(late) if late else base.turn_late_ms,
        turn_decode_ms=int(decode) if decode else base.turn_decode_ms,
        turn_ask_ms=int(ask) if ask else base.turn_ask_ms,
        turn_hold_ms=int(hold) if hold else base.turn_hold_ms,
    )
    s = replace(s, **overrides)
    s.validate()
    label = f"smart_turn:{s.turn_text_check}:{s.turn_threshold:g}:{s.turn_pause_ms}:{s.turn_late_ms}"
    label += f":{s.turn_decode_ms}:{s.turn_ask_ms}:{s.turn_hold_ms}"
    return label + "".join(f":{k}={v}" for k, v in overrides.items()), s


def _override(part: str, base: HearingSettings) -> tuple[str, Any]:
    """``KEY=VALUE`` → (key, value of the setting's type)."""
    key, _, text = part.partition("=")
    if key not in {f.name for f in fields(base)}:
        raise ValueError(f"unknown [hearing] setting {key!r} in {part!r}")
    current = getattr(base, key)
    if isinstance(current, bool):
        return key, text.lower() in ("1", "true", "yes", "on")
    if isinstance(current, int):
        return key, int(text)
    if isinstance(current, float):
        return key, float(text)
    return key, text


def dump_asks(path: Path, name: str, outcomes: list[Outcome]) -> None:
    """Append every clip's questions (probability, speculative text, its end probability) as JSON
    lines to ``path``: run
    with threshold 1 (nothing ends early, every pause is asked), then ``evaluate_policies`` replays
    any verdict rule on them exactly (a rule can only end an utterance at a pause that was asked)."""
    import json

    with path.open("a") as fh:
        for o in outcomes:
            row = {
                "config": name,
                "clip": o.clip.name,
                "kind": o.clip.kind,
                "pause_s": o.clip.pause_s,
                "utterances": o.utterances,
                "asks": [[a.probability, a.text, a.end_prob] for a in o.ask_records],
            }
            fh.write(json.dumps(row) + "\n")


def evaluate_policies(path: Path) -> None:
    """Replay verdict rules on dumped questions: fallback share of complete turns and hesitations
    (pauses up to 1.2 s) kept whole, per text check and threshold (``words+end`` with the end
    probabilities of the dump; a dump written before they were kept has none, and the rule then
    falls back as the runtime does without them)."""
    import json

    from audio.hearing.settings import TURN_TEXT_CHECKS
    from audio.hearing.turn import turn_complete

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    table = []
    for check in TURN_TEXT_CHECKS:
        for threshold in (0.05, 0.1, 0.15, 0.2, 0.3, 0.5):
            waited = split = n_complete = whole = n_hes = 0
            for r in rows:
                verdicts = [
                    turn_complete(a[0], a[1], threshold, check, end_prob=a[2] if len(a) > 2 else None)
                    for a in r["asks"]
                ]
                early = r["utterances"] != 1 or any(verdicts[:-1])
                if r["kind"] == "complete":
                    n_complete += 1
                    split += early
                    waited += not early and not (verdicts and verdicts[-1])
                elif r["pause_s"] <= 1.2 + 1e-9:
                    n_hes += 1
                    whole += not early
            table.append(
                {
                    "check": check,
                    "threshold": f"{threshold:g}",
                    "fallback": f"{waited}/{n_complete}",
                    "split turns": f"{split}/{n_complete}",
                    "whole<=1.2s": f"{whole}/{n_hes}",
                }
            )
    print_table(table)


@dataclass(slots=True)
class ConfigRuns:
    """Every round's outcomes of one configuration, pooled (``--rounds``)."""

    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    cpu_s: float = 0.0
    """Process CPU time over its rounds (every thread: VAD, model, Whisper, the cross-check)."""
    round_medians: list[float] = field(default_factory=list)
    """Each round's complete-turn median latency (ms)."""

    def add(self, outcomes: list[Outcome], cpu_s: float) -> None:
        self.outcomes += outcomes
        self.cpu_s += cpu_s
        self.round_medians.append(_pct(complete_latencies_ms(outcomes), 50))

    def row(self, pauses: list[float]) -> dict[str, str]:
        """``summary`` over every round, with the CPU per utterance and, after more than one round,
        each round's median."""
        row = summary(self.name, self.outcomes, pauses)
        utts = sum(o.utterances for o in self.outcomes)
        row["cpu/utt"] = f"{1000 * self.cpu_s / max(1, utts):.0f} ms"
        if len(self.round_medians) > 1:
            row["median by round"] = "/".join(f"{m:.0f}" for m in self.round_medians)
        return row


def round_order(configs: list[str], round_index: int) -> list[str]:
    """The order of the configurations in one round: reversed every other round, so that a machine
    that speeds up or slows down during the run favours none of them."""
    return list(configs) if round_index % 2 == 0 else list(reversed(configs))


def _run_once(
    spec: str,
    base: HearingSettings,
    clips: list[Clip],
    transcriber: Transcriber,
    models: dict[tuple[str, str], TurnModel],
    round_no: int,
) -> tuple[str, HearingSettings, list[Outcome], float]:
    """One configuration over the clips: (its label, its settings, the outcomes, the process CPU
    seconds). ``models`` holds the end-of-turn models loaded so far, by file and int8 weights."""
    spec, pooled = _blas_pool(spec)
    name, settings = parse_config(spec, base)
    name += BLAS_POOL_SUFFIX if pooled else ""
    turn_model = _turn_model(settings, models) if settings.turn_detector == "smart_turn" else None
    start, cpu = time.monotonic(), time.process_time()
    with _blas_threads((os.cpu_count() or 1) if pooled else None):
        outcomes = asyncio.run(run_config(settings, clips, transcriber, turn_model))
    cpu_s = time.process_time() - cpu
    print(f"[{name}, round {round_no}: {time.monotonic() - start:.0f} s]")
    return name, settings, outcomes, cpu_s


def _turn_model(settings: HearingSettings, models: dict[tuple[str, str], TurnModel]) -> TurnModel:
    """The model ``settings`` run (``hearing.turn_model`` as ``turn_int8_weights`` says), loaded once."""
    from audio.hearing.turn_model import make_turn_model

    key = (settings.turn_model, settings.turn_int8_weights)
    if key not in models:
        model = make_turn_model(replace(settings, turn_detector="smart_turn"))
        assert model is not None
        model.load()
        print(f"[end-of-turn model: {model.loaded_path}]")
        models[key] = model
    return models[key]


def bench(
    directory: Path,
    configs: list[str],
    *,
    limit: int,
    hesitations: int,
    pauses: list[float],
    piper: bool,
    base: HearingSettings,
    asks_path: Path | None = None,
    rounds: int = 1,
) -> int:
    """Run every configuration over the same clips (``rounds`` times, interleaved) and print the table."""
    from audio.hearing.stt import make_transcriber

    clips = build_clips(directory, limit, hesitations, pauses, piper)
    n_complete = sum(c.kind == "complete" for c in clips)
    n_fragments = sum(c.kind == "fragment" for c in clips)
    print(
        f"{n_complete} complete turns, {n_fragments} prompt fragments,"
        f" {len(clips) - n_complete - n_fragments} hesitations, {len(configs)} configurations,"
        f" {rounds} round{'s' if rounds != 1 else ''}"
    )
    transcriber = make_transcriber(base)  # the runtime's: Whisper behind the speech gate
    transcriber.load()
    models: dict[tuple[str, str], TurnModel] = {}
    runs: dict[str, ConfigRuns] = {}
    for r in range(rounds):
        for spec in round_order(configs, r):
            name, settings, outcomes, cpu_s = _run_once(spec, base, clips, transcriber, models, r + 1)
            runs.setdefault(name, ConfigRuns(name)).add(outcomes, cpu_s)
            print_details(name, outcomes)
            if asks_path is not None and settings.turn_detector == "smart_turn":
                dump_asks(asks_path, name, outcomes)
    print()
    print_table([run.row(pauses) for run in runs.values()])
    print("median/p90: last speech frame → transcript; end median/p90: last speech frame → speech_ended")
    print("WER: the complete turns' transcripts against what was said")
    print("turns cut: complete turns that came as more than one transcript (between two sentences)")
    print(
        "fragments waited: telephone prompt fragments the set takes for sentences (PROMPT_FRAGMENTS),"
        " not complete turns: left out of the figures above; waiting for the fallback is right for them"
    )
    print(
        "whole 95 % interval: over the sentences, not the clips (a sentence's pauses mostly split together)"
    )
    print("cpu/utt: the process's CPU time per utterance (every thread), over all rounds")
    print("goals: median <= 300 ms, p90 <= 500 ms, >= 90 % of hesitations up to 1.2 s whole, <= 5 % fallback")
    return 0
