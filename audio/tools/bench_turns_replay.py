"""Offline replay of turn verdict rules: the bench's signals cached once, any rule scored in seconds.

``extract`` runs every bench clip (``audio.tools.bench_turns.build_clips``) through the runtime's
segmenter (VAD + endpointer, the pause asked at the shortest silence in ``ASK_FRAMES``) without a
clock and without ever ending a turn early, and at every pause after real speech records what a
verdict could use: the end-of-turn model's probability at each silence length of ``ASK_FRAMES`` the
pause lasted, and the speculative decode (text, the probability of a sentence mark after the last
word, decode time) of the audio at each length of ``DECODE_FRAMES``. One JSON file holds it all.

``replay`` then plays a verdict rule (``Rule``: when to ask, when to re-ask, which decode, and
``audio.hearing.turn.turn_complete``'s settings) over the cache: a clip's turn ends at the first pause
and silence length the rule calls complete (if the verdict, ``VERDICT_DELAY_MS`` after the question,
comes while the pause still goes on), else at the fallback silence. Complete turns: ended at their
final pause (and at which silence), split early, or waited for the fallback; hesitations: kept whole
or split. The latency of a complete turn is estimated from the silence it ended at plus the measured
model and decode times (offline, on whatever load the machine had): rank rules with it, measure them
with ``robot-face bench turns``.

    robot-face bench turns DIR --extract CACHE.json [--limit N --hesitations N]
    robot-face bench turns CACHE.json --replay-cache
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from audio.hearing.engine import Transcriber
from audio.hearing.settings import HearingSettings
from audio.hearing.turn import (
    END_MIN,
    LONG_SURE,
    SURE,
    late_complete,
    short_text,
    text_hint,
    turn_complete,
)
from audio.hearing.turn_model import TurnModel
from audio.hearing.vad import FrameSegmenter, TurnQuestion, UtteranceBegan, UtteranceComplete, UtterancePart
from audio.tools.bench_turns import RATE, Clip

ASK_FRAMES = (3, 4, 5, 6, 8, 10, 13, 17, 23, 33)
"""Silence lengths (30 ms frames) at which the model's probability is recorded."""
DECODE_FRAMES = (3, 6)
"""Silence lengths at which the speculative decode is recorded (the audio is cut to the post-roll)."""
VERDICT_DELAY_MS = 100
"""A verdict asked at a silence counts when the pause lasts this much longer (the model's time)."""
NOISE_DB = -65.0
"""The bench's room noise (``SimulatedMicrophone(noise_db=...)``)."""
PATIENT_FRAMES = (17, 20, 23, 27, 33)
"""Silences (frames) at which ``replay_cache`` tries a patient check."""
PATIENT_ENDS = (0.4, 0.5, 0.6, 0.7)
"""End probabilities the patient check is tried with."""
PATIENT_SURE = (1.01, 0.95, 0.9)
"""Model probabilities the patient check is tried with (above 1: the words alone)."""
LONG_ENDS = (0.5, 0.6, 0.7)
"""End probabilities ``replay_cache`` tries for a transcript of more than three words."""
LONG_SURES = (0.9, 0.95, 0.97, 1.01)
"""The model's probabilities with which such a transcript ends at ``END_MIN`` instead."""


def _stream(audio: np.ndarray, fallback_ms: int, rng: np.random.Generator) -> np.ndarray:
    lead = np.zeros(RATE // 2, np.float32)
    tail = np.zeros(RATE * (fallback_ms + 600) // 1000, np.float32)
    x = np.concatenate([lead, audio.astype(np.float32), tail])
    return (x + rng.standard_normal(len(x)).astype(np.float32) * 10 ** (NOISE_DB / 20)).astype(np.float32)


@dataclass(slots=True)
class _Pause:
    utterance: int
    start: int
    """Stream sample just after the last speech frame."""
    utt_start: int
    run: int = 0
    resumed: bool = False
    probs: dict[int, float] | None = None
    model_ms: dict[int, float] | None = None
    decodes: dict[int, dict[str, Any]] | None = None


def extract_clip(
    clip: Clip, settings: HearingSettings, stt: Transcriber, model: TurnModel, rng: np.random.Generator
) -> dict[str, Any]:
    """The cached signals of one clip (see the module doc)."""
    fms = settings.block_ms
    flen = RATE * fms // 1000
    x = _stream(clip.audio, settings.turn_fallback_ms, rng)
    seg = FrameSegmenter(settings)
    pauses: list[_Pause] = []
    open_pause: _Pause | None = None
    utterances, utt_start, parts = 0, 0, 0
    for i in range(len(x) // flen):
        frame = x[i * flen : (i + 1) * flen]
        speech = seg.detector.is_speech(frame)
        events = seg.endpointer.process(frame, speech)
        pos = (i + 1) * flen
        if open_pause is not None:
            if speech:
                open_pause.resumed, open_pause = True, None
            else:
                open_pause.run += 1
                _observe(open_pause, x, pos, stt, model)
        for ev in events:
            if isinstance(ev, UtteranceBegan):
                utterances += 1
                utt_start = ev.offset - ev.pre_roll
            elif isinstance(ev, UtterancePart):
                parts += 1
            elif isinstance(ev, TurnQuestion):
                open_pause = _Pause(utterances, ev.end_offset, utt_start, run=settings.turn_pause_ms // fms)
                open_pause.probs, open_pause.model_ms, open_pause.decodes = {}, {}, {}
                pauses.append(open_pause)
                _observe(open_pause, x, pos, stt, model)
            elif isinstance(ev, UtteranceComplete):
                open_pause = None
    return {
        "clip": clip.name,
        "text": clip.text,
        "kind": clip.kind,
        "pause_s": clip.pause_s,
        "voice": clip.voice,
        "utterances": utterances,
        "parts": parts,
        "pauses": [
            {
                "utterance": p.utterance,
                "run": p.run,
                "resumed": p.resumed,
                "probs": p.probs,
                "model_ms": p.model_ms,
                "decodes": p.decodes,
            }
            for p in pauses
        ],
    }


def _observe(p: _Pause, x: np.ndarray, pos: int, stt: Transcriber, model: TurnModel) -> None:
    """At silence ``p.run`` (stream position ``pos``): the model's answer and the decode, if due."""
    assert p.probs is not None and p.model_ms is not None and p.decodes is not None
    if p.run in ASK_FRAMES:
        verdict = model.predict(x[p.utt_start : pos][-8 * RATE :])
        p.probs[p.run], p.model_ms[p.run] = verdict.probability, verdict.cpu_ms
    if p.run in DECODE_FRAMES:
        t0 = time.monotonic()
        res = stt.transcribe(x[p.utt_start : pos], None)
        p.decodes[p.run] = {
            "text": res.text,
            "end_prob": res.end_prob,
            "decode_ms": (time.monotonic() - t0) * 1000.0,
        }


def extract(clips: list[Clip], stt: Transcriber, model: TurnModel, base: HearingSettings, out: Path) -> None:
    """Cache every clip's signals to ``out`` (JSON)."""
    settings = replace(  # every pause asked at its own silences (the cache's), none ahead of them
        base,
        turn_detector="smart_turn",
        turn_pause_ms=ASK_FRAMES[0] * base.block_ms,
        turn_ask_ms=0,
        turn_decode_ms=0,
    )
    rng = np.random.default_rng(1)
    rows = []
    start = time.monotonic()
    for n, clip in enumerate(clips, 1):
        rows.append(extract_clip(clip, settings, stt, model, rng))
        if n % 10 == 0:
            print(f"[{n}/{len(clips)} clips, {time.monotonic() - start:.0f} s]", flush=True)
    out.write_text(json.dumps({"block_ms": base.block_ms, "clips": rows}))


# ---------------------------------------------------------------------------------------- replay
@dataclass(frozen=True, slots=True)
class Rule:
    """A verdict rule: ask the model at silence ``ask`` (frames), again at ``reask``; the decode taken
    at ``decode`` frames gives the text; ``turn_complete`` with ``threshold``/``check``/``end_min``."""

    ask: int = 4
    reask: tuple[int, ...] = ()
    decode: int = 3
    threshold: float = 0.3
    check: str = "words+end"
    end_min: float = END_MIN
    sure: float = SURE
    late: int = 0
    """The late text check: at this silence (frames; 0 = none) a transcript that ends like a sentence
    with ``end_prob >= late_end`` ends the turn whatever the model said."""
    late_end: float = 1.01
    patient: int = 0
    """The patient check: at this longer silence (frames; 0 = none) the late check's words rule with
    the lower ``patient_end`` ends the turn, or the model's answer to the question (``ask``) at
    least ``patient_sure`` with words not ending on a word no sentence ends on (docs/hearing.md: "A
    late check for the model alone"; neither is in the runtime)."""
    patient_end: float = 1.01
    patient_sure: float = 1.01
    """The patient check also ends a turn the model called complete with at least this probability
    whatever the decoder's end probability (a transcript not ending on a word no sentence ends on)."""
    hold: int = 0
    """A "complete" verdict ends the turn only once the pause has lasted this long (frames;
    ``hearing.turn_hold_ms``)."""
    short_hold: int = 0
    """The same for a short transcript (frames; ``hearing.turn_short_hold_ms``, ``turn.short_text``)."""
    long_end: float = 0.0
    """The end probability a longer transcript needs unless the model says ``long_sure``
    (``hearing.turn_long_end``; 0 = ``end_min`` for every length, as before 2026-12-07)."""
    long_sure: float = LONG_SURE
    """The model's probability with which a longer transcript ends at ``end_min`` after all
    (``hearing.turn_long_sure``)."""

    def label(self) -> str:
        re = "+".join(str(r) for r in self.reask) or "-"
        late = f" L{self.late}@{self.late_end:g}" if self.late else ""
        late += f" P{self.patient}@{self.patient_end:g}" if self.patient else ""
        late += f"/{self.patient_sure:g}" if self.patient and self.patient_sure <= 1.0 else ""
        late += f" H{self.hold}" if self.hold else ""
        late += f" S{self.short_hold}" if self.short_hold > self.hold else ""
        late += f" l{self.long_end:g}/{self.long_sure:g}" if self.long_end > self.end_min else ""
        return (
            f"ask{self.ask} re{re} dec{self.decode} {self.check} t{self.threshold:g} e{self.end_min:g} "
            f"s{self.sure:g}{late}"
        )


@dataclass(slots=True)
class ClipResult:
    kind: str
    whole: bool
    """Hesitation: one utterance; complete turn: not split before its last pause."""
    fallback: bool
    latency_ms: float | None


def _decision(rule: Rule, pause: dict[str, Any], frame_ms: int) -> tuple[int, float] | None:
    """(silence frames, estimated ms to the verdict) at which ``rule`` ends the turn in ``pause``."""
    decodes = pause["decodes"]
    dec = decodes.get(str(rule.decode)) or decodes.get(rule.decode)
    text = dec["text"] if dec else None
    end_prob = dec["end_prob"] if dec else None
    decoded_at = rule.decode * frame_ms + (dec["decode_ms"] if dec else 0.0)
    hold = max(rule.hold, rule.short_hold) if short_text(text) else rule.hold
    for r in (rule.ask, *rule.reask):
        prob = pause["probs"].get(str(r), pause["probs"].get(r))
        if prob is None:
            return None  # the pause ended before this silence
        if turn_complete(
            prob,
            text,
            rule.threshold,
            rule.check,
            end_prob=end_prob,
            end_min=rule.end_min,
            sure=rule.sure,
            long_end_min=rule.long_end,
            long_sure=rule.long_sure,
        ):
            model_ms = pause["model_ms"].get(str(r), 100.0)
            ready = max(r * frame_ms + model_ms, decoded_at, hold * frame_ms)
            ends_at = max(r * frame_ms + VERDICT_DELAY_MS, hold * frame_ms + 1)
            if pause["resumed"] and ends_at > pause["run"] * frame_ms:
                continue  # the answer (or the hold) comes after speech resumed: stale
            return r, ready
    # The late and patient checks, in that order: the words alone, or (patient) a sure model.
    first = pause["probs"].get(str(rule.ask), pause["probs"].get(rule.ask))
    open_ok = text is not None and text_hint(text) in ("final", "open") and first is not None
    for after, least, sure in (
        (rule.late, rule.late_end, SURE),
        (rule.patient, rule.patient_end, rule.patient_sure),
    ):
        at = max(after, hold) if after else 0  # a short text's late verdict waits for its hold too
        if not at or (pause["resumed"] and pause["run"] <= at):
            continue  # off, or speech resumed before that silence
        if late_complete(text, end_prob, least) or (open_ok and first >= sure):
            return at, max(at * frame_ms, decoded_at)
    return None


def replay_clip(rule: Rule, clip: dict[str, Any], frame_ms: int) -> ClipResult:
    """What ``rule`` makes of one cached clip."""
    pauses = clip["pauses"]
    final = [p for p in pauses if not p["resumed"] and p["utterance"] == clip["utterances"]]
    last = final[-1] if final else None
    for p in pauses:
        hit = _decision(rule, p, frame_ms)
        if p is last:
            if clip["kind"] == "hesitation":
                return ClipResult("hesitation", clip["utterances"] == 1, False, None)
            if hit is None:
                return ClipResult(clip["kind"], clip["utterances"] == 1, True, None)
            return ClipResult(clip["kind"], clip["utterances"] == 1, False, hit[1])
        if hit is not None:
            return ClipResult(clip["kind"], False, False, None)
    return ClipResult(clip["kind"], False, clip["kind"] == "complete", None)


def score(rule: Rule, clips: list[dict[str, Any]], frame_ms: int, max_pause_s: float = 1.2) -> dict[str, Any]:
    """Figures of ``rule`` over ``clips``: complete turns' estimated latency, splits, fallbacks; the
    share of hesitations up to ``max_pause_s`` kept whole."""
    res = [(c, replay_clip(rule, c, frame_ms)) for c in clips]
    comp = [r for c, r in res if c["kind"] == "complete"]
    hes = [r for c, r in res if c["kind"] == "hesitation" and c["pause_s"] <= max_pause_s + 1e-9]
    lat = [r.latency_ms for r in comp if r.latency_ms is not None]
    lat_all = lat + [1500.0 + 300.0] * sum(r.fallback for r in comp)
    return {
        "rule": rule.label(),
        "turns": len(comp),
        "split": sum(not r.whole for r in comp),
        "fallback": sum(r.fallback for r in comp),
        "est median": float(np.median(lat_all)) if lat_all else float("nan"),
        "est p90": float(np.percentile(lat_all, 90)) if lat_all else float("nan"),
        "hes": len(hes),
        "whole": sum(r.whole for r in hes),
    }


def load(path: Path) -> tuple[int, list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    return int(data["block_ms"]), list(data["clips"])


def speaker(clip: dict[str, Any]) -> str:
    """The speaker group of a clip: Allison Smith (Asterisk), Piper, or the other real readers."""
    name = str(clip["clip"])
    if name.startswith("piper:"):
        return "piper"
    return "allison" if name.startswith("asterisk") else "others"


PREVIOUS = Rule(ask=6, decode=6, threshold=0.5, check="words+punctuation")
"""The rule before ``words+end``: a 180 ms pause, the text's own punctuation, threshold 0.5."""


def default_rule(settings: HearingSettings) -> Rule:
    """The rule the runtime runs with ``settings`` (the decode of the cache nearest its pause)."""
    fms = settings.block_ms
    ask = max(1, settings.turn_pause_ms // fms)
    decode = max(f for f in DECODE_FRAMES if f <= ask) if ask >= DECODE_FRAMES[0] else DECODE_FRAMES[0]
    words_end = settings.turn_text_check == "words+end"
    late = -(-settings.turn_late_ms // fms) if words_end else 0
    return Rule(
        ask,
        (),
        decode,
        settings.turn_threshold,
        settings.turn_text_check,
        END_MIN,
        SURE,
        late,
        settings.turn_late_end,
        hold=-(-settings.turn_floor_ms // fms),
        short_hold=-(-settings.turn_short_floor_ms // fms),
        long_end=settings.turn_long_end if words_end else 0.0,
        long_sure=settings.turn_long_sure,
    )


def rules() -> Iterable[Rule]:
    """The rules ``replay_cache`` compares: the previous one, the model alone, and ``words+end`` over
    a grid of pauses, re-asks, thresholds, end probabilities and "sure" overrides."""
    yield PREVIOUS
    yield replace(PREVIOUS, check="off")
    for ask, reask, threshold, end_min, sure in itertools.product(
        (3, 4, 5, 6),
        ((), (10,), (13,), (10, 17), (13, 23), (17, 33)),
        (0.2, 0.3, 0.5, 0.7),
        (0.2, 0.3, 0.4, 0.5, 0.6),
        (0.9, 0.97, 1.01),
    ):
        yield Rule(ask, reask, 3 if ask < 6 else 6, threshold, "words+end", end_min, sure)
    for ask, threshold, end_min, late, late_end in itertools.product(
        (3, 4, 5), (0.2, 0.3, 0.5), (0.3, 0.4, 0.5, 0.6), (13, 17, 23), (0.6, 0.7, 0.8, 0.9, 0.95)
    ):
        yield Rule(ask, (), 3, threshold, "words+end", end_min, SURE, late, late_end)


def fmt(row: dict[str, Any]) -> str:
    """One printed line of ``score``."""
    turns = row["turns"]
    return (
        f"{row['rule']:<72} split {row['split']:>2}/{turns:<3} fallback {row['fallback']:>2}/{turns:<3} "
        f"est {row['est median']:>5.0f}/{row['est p90']:>5.0f} ms  whole {row['whole']:>3}/{row['hes']:<3}"
    )


def cost(row: dict[str, Any]) -> float:
    """What tuning minimises: the share of complete turns split or waiting for the fallback plus the
    share of hesitations split (equal weight), then the estimated median latency as a tie-break."""
    bad = (row["split"] + row["fallback"]) / max(1, row["turns"])
    miss = (row["hes"] - row["whole"]) / max(1, row["hes"])
    return bad + miss + row["est median"] / 1e5


def replay_cache(path: Path, settings: HearingSettings | None = None) -> None:
    """Tune on one speaker group and report on the others (both ways: Allison Smith's Asterisk
    prompts, and the other real readers with Piper), then on all clips: the best rules of each
    tuning, the previous rule and the runtime's default, side by side."""
    frame_ms, clips = load(path)
    groups = {"allison": [c for c in clips if speaker(c) == "allison"]}
    groups["others+piper"] = [c for c in clips if speaker(c) != "allison"]
    grid = list(rules())
    default = default_rule(settings or HearingSettings())
    for tune_name, tune in groups.items():
        held_name, held = next((n, g) for n, g in groups.items() if n != tune_name)
        best = sorted(grid, key=lambda r: cost(score(r, tune, frame_ms)))[:3]
        print(f"== tuned on {tune_name} ({len(tune)} clips), held out {held_name} ({len(held)} clips)")
        for r in [PREVIOUS, default, *best]:
            tag = "previous" if r == PREVIOUS else "default" if r == default else "best"
            print(f"  {tag:<8} tune {fmt(score(r, tune, frame_ms))}")
            print(f"  {'':<8} held {fmt(score(r, held, frame_ms))[72:]}")
    print(f"== all ({len(clips)} clips)")
    for r in [PREVIOUS, replace(PREVIOUS, check="off"), replace(default, late=0), default]:
        print("  " + fmt(score(r, clips, frame_ms)))
    print(
        "== the runtime's rule with another end probability for a longer sentence (l: end / the model's sure)"
    )
    for long_end, long_sure in [(0.0, LONG_SURE), *itertools.product(LONG_ENDS, LONG_SURES)]:
        rule = replace(default, long_end=long_end, long_sure=long_sure)
        print("  " + fmt(score(rule, clips, frame_ms)))
    print(
        "== the runtime's rule with other patient checks (a longer silence, a lower end probability, a sure model)"
    )
    for patient, least, sure in itertools.product(PATIENT_FRAMES, PATIENT_ENDS, PATIENT_SURE):
        rule = replace(default, patient=patient, patient_end=least, patient_sure=sure)
        print("  " + fmt(score(rule, clips, frame_ms)))
