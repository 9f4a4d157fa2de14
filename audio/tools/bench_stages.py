"""``robot-face bench stt --stages``: what each stage of hearing one utterance costs on this machine.

At the end-of-turn question (``hearing.turn_ask_ms`` of silence) the device starts the whole decode
(``WhisperTranscriber.transcribe``: the encoder, then the greedy pass beside the beam search, the
cross-check recogniser and the voice probability on a third thread) and asks the end-of-turn model
beside it. On a small board they share few cores, so the time from the last word to the transcript
is bounded by their summed CPU: ``pause + sum / cores`` however they are scheduled. This times each
stage alone, one at a time, prints that floor beside the whole decode as the device runs it (the
model not running beside it), and so says which stage a faster turn has to take time from
(docs/hearing.md, "Where the time goes").

Every stage runs on one thread (``hearing.stt_threads`` 1, onnxruntime sessions of one thread), so
a stage alone takes as much wall time as CPU; it is timed by the wall clock because the Whisper
passes run on CTranslate2's own worker thread, where the calling thread's CPU time would miss them.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.engine import Engine
from audio.hearing.turn_model import SmartTurnModel
from audio.hearing.whisper_stt import WhisperTranscriber

TURN_MODEL = "end-of-turn model"
WHOLE = "whole decode (wall, as run)"


@dataclass(frozen=True, slots=True)
class StageTable:
    """Per stage, the milliseconds of each utterance (each stage alone; the whole decode as run)."""

    stages: dict[str, list[float]]
    whole: list[float]

    def cpu_sum(self) -> float:
        """Summed median CPU of every stage, in ms: what one question costs the machine."""
        return sum(statistics.median(v) for v in self.stages.values())


def _alone_ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def time_stages(
    stt: WhisperTranscriber,
    model: SmartTurnModel | None,
    utterances: Sequence[FloatArray],
    *,
    idle_s: float = 0.2,
    whole: Engine | None = None,
) -> StageTable:
    """Each stage of each utterance alone (``idle_s`` before each utterance's whole decode, so work
    it leaves running ends first), then the whole ``transcribe`` of ``whole`` (the device's
    engine: ``stt`` behind the speech gate; None: ``stt`` itself); the first utterance is run once
    untimed (warm-up)."""
    engine: Engine = whole if whole is not None else stt
    stages: dict[str, list[float]] = {}
    walls: list[float] = []
    for i, audio in enumerate([utterances[0], *utterances]):
        named = list(stt.stages(audio))
        if model is not None:
            named.append((TURN_MODEL, functools.partial(model.predict, audio)))
        costs = [(name, _alone_ms(fn)) for name, fn in named]
        time.sleep(idle_s)
        start = time.perf_counter()
        engine.transcribe(audio)
        if i == 0:
            continue
        walls.append((time.perf_counter() - start) * 1000.0)
        for name, ms in costs:
            stages.setdefault(name, []).append(ms)
    return StageTable(stages, walls)


def print_stages(table: StageTable, question_ms: int, pause_ms: int, cores: int | None = None) -> None:
    """The stage table, the summed CPU and the floor it sets on ``cores`` for work that starts at
    ``question_ms`` of the pause (``turn_ask_ms``) and a turn that cannot end before ``pause_ms``
    (``HearingSettings.turn_floor_ms``: the hold)."""
    cores = cores or os.cpu_count() or 1
    print(f"{'stage (alone, on one thread)':36s} {'median ms':>10s} {'p90 ms':>8s}")
    for name, values in [*table.stages.items(), (WHOLE, table.whole)]:
        p90 = float(np.percentile(values, 90))
        print(f"{name:36s} {statistics.median(values):10.0f} {p90:8.0f}")
    total = table.cpu_sum()
    work = question_ms + total / cores
    print(
        f"summed CPU per question: {total:.0f} ms; asked at {question_ms} ms of the pause, on {cores} "
        f"cores the transcript comes at least {question_ms} + {total:.0f}/{cores} = {work:.0f} ms "
        f"after the last word, and never before the {pause_ms} ms pause: {max(pause_ms, work):.0f} ms "
        "(the turn goal: 300)"
    )
