"""Endpointer on synthetic frame sequences, and the speech detector's gates."""

from __future__ import annotations

import numpy as np
import pytest

from audio.hearing_settings import HearingSettings
from audio.vad import (
    Endpointer,
    EndpointerEvent,
    SpeechDetector,
    UtteranceBegan,
    UtteranceComplete,
    UtteranceRejected,
)

FRAME = 480  # 30 ms at 16 kHz


def run(ep: Endpointer, pattern: str) -> list[tuple[int, EndpointerEvent]]:
    """Feed frames described by a string ('s' speech, '.' silence); frame i holds the value i."""
    out = []
    for i, ch in enumerate(pattern):
        frame = np.full(FRAME, float(i), dtype=np.float32)
        out += [(i, ev) for ev in ep.process(frame, ch == "s")]
    return out


@pytest.fixture
def settings() -> HearingSettings:
    return HearingSettings(
        start_window_ms=240,
        start_speech_ms=90,
        end_silence_ms=300,
        pre_roll_ms=150,
        post_roll_ms=60,
        min_utterance_ms=100,
        max_utterance_ms=3000,
    )


def test_silence_gives_nothing(settings: HearingSettings) -> None:
    assert run(Endpointer(settings), "." * 200) == []


def test_utterance_with_pre_roll_and_post_roll(settings: HearingSettings) -> None:
    events = run(Endpointer(settings), "." * 20 + "s" * 20 + "." * 15)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceComplete]
    (i0, began), (i1, done) = events
    assert isinstance(began, UtteranceBegan) and isinstance(done, UtteranceComplete)
    assert i0 == 22  # third speech frame triggers (90 ms)
    assert began.offset == 20 * FRAME  # first speech sample, not the trigger frame
    assert began.pre_roll == 5 * FRAME  # 150 ms pre-roll
    assert i1 == 20 + 20 + 10 - 1  # 300 ms of silence ends it
    values = sorted({int(v) for v in done.audio})
    # pre-roll (frames 15..19) + speech (20..39) + post-roll 60 ms (40, 41)
    assert values == list(range(15, 42))
    assert done.speech_ms == 20 * 30
    assert done.speech_ratio == 1.0
    assert done.end_offset == 40 * FRAME


def test_pause_shorter_than_end_silence_does_not_split(settings: HearingSettings) -> None:
    pattern = "." * 10 + "s" * 15 + "." * 8 + "s" * 15 + "." * 12  # 240 ms pause < 300 ms
    events = run(Endpointer(settings), pattern)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceComplete]
    done = events[1][1]
    assert isinstance(done, UtteranceComplete)
    assert done.speech_ms == 38 * 30
    assert 0.7 < done.speech_ratio < 0.8


def test_pause_longer_than_end_silence_splits(settings: HearingSettings) -> None:
    pattern = "." * 10 + "s" * 15 + "." * 12 + "s" * 15 + "." * 12
    kinds = [type(e) for _, e in run(Endpointer(settings), pattern)]
    assert kinds == [UtteranceBegan, UtteranceComplete, UtteranceBegan, UtteranceComplete]


def test_isolated_blips_do_not_start(settings: HearingSettings) -> None:
    assert run(Endpointer(settings), ("s." * 2 + "." * 10) * 10) == []


def test_too_short(settings: HearingSettings) -> None:
    events = run(Endpointer(settings), "." * 10 + "sss" + "." * 12)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceRejected]
    rej = events[1][1]
    assert isinstance(rej, UtteranceRejected) and rej.reason == "too_short" and rej.speech_ms == 90


def test_too_long_then_waits_for_silence(settings: HearingSettings) -> None:
    ep = Endpointer(settings)
    events = run(ep, "." * 5 + "s" * 150)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceRejected]
    assert isinstance(events[1][1], UtteranceRejected) and events[1][1].reason == "too_long"
    assert not ep.in_speech
    # Still talking: nothing new starts until end_silence of quiet, then it listens again.
    assert run(ep, "s" * 30) == []
    again = run(ep, "." * 10 + "." * 5 + "s" * 10 + "." * 12)
    assert [type(e) for _, e in again] == [UtteranceBegan, UtteranceComplete]


def test_flush_ends_utterance(settings: HearingSettings) -> None:
    ep = Endpointer(settings)
    run(ep, "." * 5 + "s" * 10)
    assert ep.in_speech
    (done,) = ep.flush()
    assert isinstance(done, UtteranceComplete)
    assert ep.flush() == []


def test_detector_rejects_quiet_and_steady_noise() -> None:
    det = SpeechDetector(HearingSettings(vad_aggressiveness=0))
    rng = np.random.default_rng(0)
    quiet = [
        det.is_speech((rng.standard_normal(FRAME) * 10 ** (-62 / 20)).astype(np.float32)) for _ in range(50)
    ]
    assert not any(quiet)  # below the -55 dBFS energy gate
    det = SpeechDetector(HearingSettings(vad_aggressiveness=0))
    noise = [
        det.is_speech((rng.standard_normal(FRAME) * 10 ** (-35 / 20)).astype(np.float32)) for _ in range(400)
    ]
    assert sum(noise[-100:]) == 0  # the floor adapts to steady noise
    assert det.noise_floor_db > -45


def test_detector_accepts_speech(hearing_say) -> None:  # type: ignore[no-untyped-def]
    det = SpeechDetector(HearingSettings())
    audio = hearing_say("Hello there, how are you?")
    flags = [det.is_speech(audio[i : i + FRAME]) for i in range(0, len(audio) - FRAME, FRAME)]
    assert sum(flags) / len(flags) > 0.5
