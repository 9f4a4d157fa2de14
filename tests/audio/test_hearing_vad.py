"""Endpointer on synthetic frame sequences, and the speech detector's gates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from audio.hearing.settings import HearingSettings
from audio.hearing.vad import (
    Endpointer,
    EndpointerEvent,
    SpeechDetector,
    SpeechPaused,
    SpeechStirred,
    TurnQuestion,
    UtteranceBegan,
    UtteranceComplete,
    UtterancePart,
    UtteranceRejected,
    frame_level_db,
    frame_levels_db,
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
        turn_detector="silence",
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


def test_the_first_voiced_frames_stir_once_before_the_start(settings: HearingSettings) -> None:
    """``stir_ms`` of speech in the start window (60 ms: two frames) says a start may be coming, once
    until the window falls under it again; the start itself (90 ms) follows as without it."""
    ep = Endpointer(settings, stir_ms=60)
    # A blip, two frames far apart (never two in one 240 ms window), then two close: a stir.
    events = run(ep, "." * 5 + "s" + "." * 10 + "s.s" + "." * 10)
    assert [(i, type(e)) for i, e in events] == [(18, SpeechStirred)]
    stirred = events[0][1]
    assert isinstance(stirred, SpeechStirred) and stirred.offset == 16 * FRAME  # the window's first speech
    # The window emptied: the next voice stirs again, and a start follows it with no second stir.
    more = run(ep, "." * 4 + "ssss" + "." * 20)
    assert [type(e) for _, e in more] == [SpeechStirred, UtteranceBegan, UtteranceComplete]
    assert more[1][1] == UtteranceBegan(offset=(29 + 4) * FRAME, pre_roll=5 * FRAME)
    assert [type(e) for _, e in run(Endpointer(settings), "." * 5 + "ss" + "." * 20)] == []  # off


def test_a_stir_as_long_as_the_start_never_comes_first(settings: HearingSettings) -> None:
    events = run(Endpointer(settings, stir_ms=90), "." * 5 + "ssss" + "." * 20)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceComplete]


def test_too_short(settings: HearingSettings) -> None:
    events = run(Endpointer(settings), "." * 10 + "sss" + "." * 12)
    assert [type(e) for _, e in events] == [UtteranceBegan, UtteranceRejected]
    rej = events[1][1]
    assert isinstance(rej, UtteranceRejected) and rej.reason == "too_short" and rej.speech_ms == 90


def samples_of(events: list[tuple[int, EndpointerEvent]]) -> list[int]:
    """Frame values of every part and the final rest, in order (each frame holds its index)."""
    out: list[int] = []
    for _, ev in events:
        if isinstance(ev, UtterancePart | UtteranceComplete):
            out += [int(v) for v in ev.audio[::FRAME]]
    return out


def long_settings(settings: HearingSettings) -> HearingSettings:
    return replace(settings, max_part_ms=3000, max_utterance_ms=30000)  # 100-frame parts


def test_long_speech_is_cut_into_parts_at_the_longest_pause(settings: HearingSettings) -> None:
    # 220 frames of talk with short pauses; the longest pause before frame 100 is at 80..83.
    talk = ["s"] * 220
    for i in (30, 31, 60, 80, 81, 82, 83, 95, 150, 151, 152, 190):
        talk[i] = "."
    pattern = "." * 5 + "".join(talk) + "." * 12
    ep = Endpointer(long_settings(settings))
    events = run(ep, pattern)
    kinds = [type(e) for _, e in events]
    assert kinds == [UtteranceBegan, UtterancePart, UtterancePart, UtteranceComplete]
    first, second = events[1][1], events[2][1]
    assert isinstance(first, UtterancePart) and isinstance(second, UtterancePart)
    assert (first.index, second.index) == (0, 1)
    # Each part ends in the middle of the longest pause before it reached 100 frames: stream
    # frames 85..88 (talk 80..83), then 155..157 (talk 150..152).
    assert int(first.audio[-1]) == 86
    assert int(second.audio[0]) == 87 and int(second.audio[-1]) == 156
    # Nothing lost, nothing twice: pre-roll, all the talk, the post-roll, in order.
    assert samples_of(events) == list(range(0, 5 + 220 + 2))
    done = events[-1][1]
    assert isinstance(done, UtteranceComplete)
    assert done.parts == 2
    assert done.earlier_samples == len(first.audio) + len(second.audio)
    assert done.speech_ms == 220 * 30
    assert not ep.in_speech


def test_part_without_any_pause_is_cut_at_the_quietest_frame(settings: HearingSettings) -> None:
    ep = Endpointer(long_settings(settings))
    levels = np.full(300, 0.5, dtype=np.float32)
    levels[90] = 0.01
    events: list[EndpointerEvent] = []
    for i in range(300):
        events += ep.process(np.full(FRAME, levels[i], dtype=np.float32), i < 280)
    part = next(e for e in events if isinstance(e, UtterancePart))
    assert len(part.audio) == 90 * FRAME  # cut just before the quiet frame
    assert part.speech_ratio == 1.0


def test_parts_never_exceed_whisper_window(
    settings: HearingSettings, caplog: pytest.LogCaptureFixture
) -> None:
    ep = Endpointer(replace(settings, max_part_ms=60000, max_utterance_ms=120000))
    assert "over Whisper's window" in caplog.text
    events = run(ep, "s" * 1000)
    part = next(e for _, e in events if isinstance(e, UtterancePart))
    assert len(part.audio) <= 28000 * 16


def test_rest_after_the_last_part_without_speech_is_empty(settings: HearingSettings) -> None:
    ep = Endpointer(long_settings(settings))
    # A part is cut at frame 100 in the pause at 97..99; speech never comes back.
    events = run(ep, "s" * 97 + "." * 20)
    kinds = [type(e) for _, e in events]
    assert kinds == [UtteranceBegan, UtterancePart, UtteranceComplete]
    done = events[-1][1]
    assert isinstance(done, UtteranceComplete) and len(done.audio) == 0 and done.parts == 1


def test_longest_utterance_ends_and_the_next_starts_without_a_gap(settings: HearingSettings) -> None:
    ep = Endpointer(replace(settings, max_utterance_ms=3000))  # 100 frames
    events = run(ep, "." * 5 + "s" * 300 + "." * 12)
    kinds = [type(e) for _, e in events]
    assert kinds == [UtteranceBegan, UtteranceComplete] * 4
    first_end = events[1][1]
    assert isinstance(first_end, UtteranceComplete) and first_end.speech_ms == 95 * 30
    # The utterances after the first take every frame the first did not have.
    assert samples_of(events) == list(range(0, 5 + 300 + 2))


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


# ---- turn-taking: the endpointer fed frames and the model's verdicts -------------------------------
def smart(settings: HearingSettings, decode_ms: int = 0) -> HearingSettings:
    """smart_turn: a 6-frame (180 ms) pause asks (``turn_ask_ms`` 0: at the pause's end), 30 frames
    (900 ms) of silence end anyway; the speculative decode starts with the question (0; a shorter
    ``decode_ms``: a ``SpeechPaused`` first)."""
    return replace(
        settings,
        turn_detector="smart_turn",
        turn_pause_ms=180,
        turn_hold_ms=0,
        turn_ask_ms=0,
        turn_fallback_ms=900,
        turn_decode_ms=decode_ms,
    )


def drive(
    ep: Endpointer, pattern: str, answers: dict[int, bool] | None = None
) -> list[tuple[int, EndpointerEvent]]:
    """Like ``run``, but a question asked at frame i is answered ``answers[k]`` (k: the k-th question,
    from 1) right after frame i + 2 (the model's latency); unanswered questions stay open."""
    answers = answers or {}
    out: list[tuple[int, EndpointerEvent]] = []
    pending: list[tuple[int, int]] = []  # (answer at frame, ask)
    for i, ch in enumerate(pattern):
        frame = np.full(FRAME, float(i), dtype=np.float32)
        events = ep.process(frame, ch == "s")
        for _, ask in [p for p in pending if p[0] == i]:
            events += ep.verdict(ask, answers[ask])
        out += [(i, ev) for ev in events]
        pending += [(i + 2, ev.ask) for ev in events if isinstance(ev, TurnQuestion) and ev.ask in answers]
    return out


def kinds(events: list[tuple[int, EndpointerEvent]]) -> list[type]:
    return [type(e) for _, e in events]


def test_complete_verdict_ends_the_turn_at_the_pause(settings: HearingSettings) -> None:
    events = drive(Endpointer(smart(settings)), "." * 10 + "s" * 20 + "." * 40, {1: True})
    assert kinds(events) == [UtteranceBegan, TurnQuestion, UtteranceComplete]
    (_, _), (iq, q), (ic, done) = events
    assert isinstance(q, TurnQuestion) and isinstance(done, UtteranceComplete)
    assert iq == 30 + 6 - 1  # the 6th silent frame asks
    assert ic == iq + 2 and done.end == "turn_complete" and done.asked == q.ask
    # The question's audio is exactly what the utterance sends to STT: the speculative decode is valid.
    assert np.array_equal(q.audio, done.audio) and q.speech_ratio == done.speech_ratio
    assert q.end_offset == done.end_offset == 30 * FRAME
    # The model sees everything up to the question (pre-roll, speech, the pause).
    assert q.context[-1] == float(iq) and len(q.context) == (iq + 1 - 5) * FRAME


def test_an_earlier_pause_starts_the_decode_and_the_question_asks_about_the_same_pause(
    settings: HearingSettings,
) -> None:
    """``turn_decode_ms`` 60: the 2nd silent frame raises ``SpeechPaused`` (the audio to decode), the
    6th the ``TurnQuestion`` with the same ask; the completion names that ask, and its audio is the
    paused audio with more of the pause (the post-roll): the same words, so that decode serves."""
    ep = Endpointer(replace(smart(settings, decode_ms=60), post_roll_ms=180))
    events = drive(ep, "." * 10 + "s" * 20 + "." * 40, {1: True})
    assert kinds(events) == [UtteranceBegan, SpeechPaused, TurnQuestion, UtteranceComplete]
    (_, _), (ip, paused), (iq, q), (_, done) = events
    assert (
        isinstance(paused, SpeechPaused)
        and isinstance(q, TurnQuestion)
        and isinstance(done, UtteranceComplete)
    )
    assert (ip, iq) == (30 + 2 - 1, 30 + 6 - 1) and paused.ask == q.ask == done.asked == 1
    assert len(paused.audio) == len(done.audio) - 4 * FRAME and np.array_equal(
        paused.audio, done.audio[: len(paused.audio)]
    )
    assert paused.speech_ratio == done.speech_ratio and paused.end_offset == done.end_offset == 30 * FRAME


def asked_and_completed(ep: Endpointer) -> tuple[int, TurnQuestion, int, UtteranceComplete]:
    """Speech, then a long pause whose one question is answered "complete": (the frame of the
    question, the question, the frame the turn ended at, the completion)."""
    events = drive(ep, "." * 10 + "s" * 20 + "." * 40, {1: True})
    assert kinds(events) == [UtteranceBegan, TurnQuestion, UtteranceComplete]
    (_, _), (iq, q), (ic, done) = events
    assert isinstance(q, TurnQuestion) and isinstance(done, UtteranceComplete)
    assert done.end == "turn_complete" and done.asked == q.ask
    return iq, q, ic, done


def test_a_question_asked_ahead_of_the_pause_end_judges_that_pause_and_ends_the_turn_there(
    settings: HearingSettings,
) -> None:
    """``turn_ask_ms`` 60 (pause 180): the 2nd silent frame asks, with the audio and context the
    6th would send if the pause goes on (the pause's own frames copied on); a "complete" verdict
    two frames later ends the turn at the 6th silent frame, not when it arrives."""
    iq, q, ic, done = asked_and_completed(
        Endpointer(replace(smart(settings), turn_ask_ms=60, post_roll_ms=180))
    )
    assert (iq, ic) == (30 + 2 - 1, 30 + 6 - 1)
    # The question's audio: the words and the two real pause frames, then copies of them to the
    # completion's length (its decode is the transcript: the same words).
    real = len(q.audio) - 4 * FRAME
    assert len(q.audio) == len(done.audio) and np.array_equal(q.audio[:real], done.audio[:real])
    assert q.audio[real - 1] == 31.0 and set(np.unique(q.audio[real:])) == {30.0, 31.0}
    assert q.speech_ratio == done.speech_ratio and q.end_offset == done.end_offset == 30 * FRAME
    # The model's context: up to the question, then four copied frames (the pause at 180 ms).
    assert len(q.context) == (iq + 1 - 5 + 4) * FRAME and q.context[(iq + 1 - 5) * FRAME - 1] == float(iq)
    assert set(np.unique(q.context[(iq + 1 - 5) * FRAME :])) == {30.0, 31.0}


def test_a_complete_verdict_ends_the_turn_only_once_the_pause_lasts_the_hold(
    settings: HearingSettings,
) -> None:
    """``turn_hold_ms`` 300 (pause 180, asked at 60 ms): a "complete" verdict answered at the 4th
    silent frame ends the turn at the 10th, not the 6th; a comma-length pause (8 frames) with that
    verdict does not end it, and the speech after it is the same utterance."""
    iq, q, ic, done = asked_and_completed(
        Endpointer(replace(smart(settings), turn_ask_ms=60, turn_hold_ms=300))
    )
    assert (iq, ic) == (30 + 2 - 1, 30 + 10 - 1)
    assert q.end_offset == done.end_offset == 30 * FRAME  # the words asked about are the words sent

    ep = Endpointer(replace(smart(settings), turn_ask_ms=60, turn_hold_ms=300))
    events = drive(ep, "." * 10 + "s" * 20 + "." * 8 + "s" * 10 + "." * 40, {1: True, 2: True})
    assert kinds(events) == [UtteranceBegan, TurnQuestion, TurnQuestion, UtteranceComplete]
    ended = events[-1][1]
    assert isinstance(ended, UtteranceComplete) and ended.asked == 2 and events[-1][0] == 48 + 10 - 1
    assert {int(v) for v in ended.audio} >= set(range(10, 48))  # both halves and the comma between them


def test_speech_before_the_pause_end_drops_a_question_asked_ahead_of_it(settings: HearingSettings) -> None:
    """Asked at 60 ms and answered "complete", a pause the user speaks on from the 5th silent frame
    does not end the turn; the next pause asks again."""
    ep = Endpointer(replace(smart(settings), turn_ask_ms=60))
    first = drive(ep, "." * 10 + "s" * 20 + "." * 4, {1: True})
    assert kinds(first) == [UtteranceBegan, TurnQuestion] and ep.open_question == 1
    assert run(ep, "s" * 5) == [] and ep.open_question is None and ep.in_speech
    events = drive(ep, "." * 40, {2: True})
    assert kinds(events) == [TurnQuestion, UtteranceComplete]
    (_, _), (ic, done) = events
    assert isinstance(done, UtteranceComplete) and done.asked == 2 and ic == 6 - 1
    assert len(done.audio) >= (20 + 4 + 5) * FRAME  # one utterance: speech, the pause, more speech


def test_speech_between_the_pause_and_its_question_opens_a_new_pause(settings: HearingSettings) -> None:
    """Speech after ``SpeechPaused`` and before the question: that pause is gone (no question
    about it, a verdict on it ignored); the next pause raises its own, with a new ask."""
    ep = Endpointer(smart(settings, decode_ms=60))
    first = run(ep, "." * 10 + "s" * 20 + "." * 3)
    (p1,) = [e for _, e in first if isinstance(e, SpeechPaused)]
    assert ep.open_question == p1.ask
    resumed = run(ep, "s" * 5)
    assert resumed == [] and ep.open_question is None and ep.verdict(p1.ask, True) == []
    events = drive(ep, "." * 40, {2: True})
    assert kinds(events) == [SpeechPaused, TurnQuestion, UtteranceComplete]
    done = events[-1][1]
    assert isinstance(done, UtteranceComplete) and done.asked == 2
    assert len(done.audio) >= (20 + 3 + 5) * FRAME  # one utterance: speech, the pause, more speech


def test_unfinished_verdict_waits_and_resumed_speech_is_the_same_utterance(settings: HearingSettings) -> None:
    pattern = "." * 10 + "s" * 20 + "." * 20 + "s" * 15 + "." * 40
    events = drive(Endpointer(smart(settings)), pattern, {1: False, 2: True})
    assert kinds(events) == [UtteranceBegan, TurnQuestion, TurnQuestion, UtteranceComplete]
    done = events[-1][1]
    assert isinstance(done, UtteranceComplete) and done.end == "turn_complete" and done.asked == 2
    values = {int(v) for v in done.audio}
    assert set(range(10, 65)) <= values  # both halves and the pause between them, in one utterance


def test_late_complete_verdict_after_speech_resumed_is_ignored(settings: HearingSettings) -> None:
    ep = Endpointer(smart(settings))
    events = run(ep, "." * 10 + "s" * 20 + "." * 6)
    (q,) = [e for _, e in events if isinstance(e, TurnQuestion)]
    assert ep.open_question == q.ask
    run(ep, "ss")  # the user goes on before the answer arrives
    assert ep.open_question is None and ep.verdict(q.ask, True) == [] and ep.in_speech


def test_a_complete_verdict_after_ms_ends_the_turn_once_the_pause_lasts_that_long(
    settings: HearingSettings,
) -> None:
    """The late check's verdict: ``after_ms`` of silence (15 frames) ends the utterance, with the
    question's audio (its decode is the transcript); speech first cancels it; a pause already that
    long ends at once."""
    ep = Endpointer(smart(settings))
    events = run(ep, "." * 10 + "s" * 20 + "." * 8)  # the question at the 6th silent frame
    (q,) = [e for _, e in events if isinstance(e, TurnQuestion)]
    assert ep.verdict(q.ask, True, after_ms=15 * 30) == []  # 8 silent frames so far: not yet
    ended = run(ep, "." * 10)
    (i, done), *rest = [(i, e) for i, e in ended if isinstance(e, UtteranceComplete)]
    assert not rest and i == 15 - 8 - 1  # the 15th silent frame
    assert done.end == "turn_complete" and done.asked == q.ask and np.array_equal(done.audio, q.audio)

    ep = Endpointer(smart(settings))
    events = run(ep, "." * 10 + "s" * 20 + "." * 8)
    (q,) = [e for _, e in events if isinstance(e, TurnQuestion)]
    assert ep.verdict(q.ask, True, after_ms=15 * 30) == []
    after = run(ep, "s" * 3 + "." * 25)  # the user goes on: the late verdict is gone, the fallback decides
    completes = [(i, e) for i, e in after if isinstance(e, UtteranceComplete)]
    assert completes == [] and ep.in_speech  # 25 < 30 silent frames: still open (a new question asked)

    ep = Endpointer(smart(settings))
    events = run(ep, "." * 10 + "s" * 20 + "." * 20)
    (q,) = [e for _, e in events if isinstance(e, TurnQuestion)]
    (late,) = ep.verdict(q.ask, True, after_ms=15 * 30)  # the decode came late: the pause is longer
    assert isinstance(late, UtteranceComplete) and late.end == "turn_complete"


def test_unanswered_or_unfinished_pause_ends_at_the_fallback(settings: HearingSettings) -> None:
    for answers in ({}, {1: False}):
        events = drive(Endpointer(smart(settings)), "." * 10 + "s" * 20 + "." * 40, answers)
        assert kinds(events) == [UtteranceBegan, TurnQuestion, UtteranceComplete]
        i, done = events[-1]
        assert isinstance(done, UtteranceComplete)
        assert i == 30 + 30 - 1 and done.end == "silence" and done.asked == 1  # the decode is still valid


def test_max_length_ends_with_max_length(settings: HearingSettings) -> None:
    events = drive(Endpointer(smart(replace(settings, max_utterance_ms=1500))), "s" * 80)
    done = [e for _, e in events if isinstance(e, UtteranceComplete)]
    assert done and done[0].end == "max_length" and done[0].asked is None


def test_no_question_without_real_speech(settings: HearingSettings) -> None:
    s = smart(replace(settings, min_utterance_ms=200))
    assert not [e for _, e in run(Endpointer(s), "." * 200) if isinstance(e, TurnQuestion)]
    # 4 frames (120 ms) of speech: an utterance, but too little speech to ask about.
    events = run(Endpointer(s), "." * 10 + "ssss" + "." * 40)
    assert kinds(events) == [UtteranceBegan, UtteranceRejected]


def test_one_question_per_pause(settings: HearingSettings) -> None:
    events = drive(Endpointer(smart(settings)), "." * 10 + "s" * 20 + "." * 25, {1: False})
    assert kinds(events) == [UtteranceBegan, TurnQuestion]  # asked once; still open (fallback at 30)


def test_silence_detector_never_asks(settings: HearingSettings) -> None:
    events = run(Endpointer(settings), "." * 10 + "s" * 20 + "." * 40)
    assert kinds(events) == [UtteranceBegan, UtteranceComplete]
    assert isinstance(events[-1][1], UtteranceComplete) and events[-1][1].end == "silence"


def test_the_detector_judges_its_view_and_the_utterance_keeps_the_samples() -> None:
    """Two views (the front end's cleaned audio, and the same gated by the residual-echo check): the
    VAD decides on the gated view, the utterance holds the cleaned samples -- so a word the gate
    attenuated (echo-like) is still in what Whisper hears once the user is speaking."""
    from audio.edges.wav import load_audio
    from audio.hearing.vad import FrameSegmenter
    from tests.audio.conftest import HEARING_SPEECH_DIR

    speech = load_audio(HEARING_SPEECH_DIR / "fsdd" / "7_jackson_0.wav", 16000)
    quiet = np.zeros(16000, dtype=np.float32)
    clip = np.concatenate([quiet, speech, quiet])
    # The view is silent: nothing starts, whatever the samples say.
    seg = FrameSegmenter(HearingSettings(turn_detector="silence"))
    assert not [e for e in seg.feed(clip, np.zeros_like(clip)) if isinstance(e, UtteranceBegan)]
    # The view hears the speech, the samples keep its first third only (fed in odd block sizes).
    half = clip.copy()
    half[16000 + len(speech) // 3 :] *= 0.001
    seg = FrameSegmenter(HearingSettings(turn_detector="silence"))
    events: list[EndpointerEvent] = []
    for a in range(0, len(clip), 700):
        events += seg.feed(half[a : a + 700], clip[a : a + 700])
    events += seg.feed(np.zeros(16000, np.float32))
    (done,) = [e for e in events if isinstance(e, UtteranceComplete)]
    energy = lambda x: float(np.sum(np.square(x, dtype=np.float64)))  # noqa: E731
    full, kept = energy(speech), energy(half[16000 : 16000 + len(speech)])
    assert full - kept > 0.2 * full  # the samples really lack the last two thirds' energy
    assert abs(energy(done.audio) - kept) < 0.03 * full  # and the utterance holds the samples


@pytest.mark.parametrize(("pause", "hold", "floor"), [(120, 240, 240), (120, 0, 120), (300, 240, 300)])
def test_the_turn_floor_is_the_hold_at_least_the_pause(pause: int, hold: int, floor: int) -> None:
    """``turn_floor_ms``: the least silence that ends a turn (the endpointer's hold, the floor
    ``bench stt --stages`` prints)."""
    assert replace(HearingSettings(), turn_pause_ms=pause, turn_hold_ms=hold).turn_floor_ms == floor


def test_frame_levels_are_each_frames_level_in_one_pass() -> None:
    """``frame_levels_db`` (offline analysis) gives ``frame_level_db`` of every whole frame: loud,
    quiet and silent frames (the -120 dB floor), a partial last frame left out."""
    rng = np.random.default_rng(0)
    gains = np.repeat(10 ** rng.uniform(-7.0, 0.0, 40), 160)
    x = (rng.standard_normal(len(gains)) * gains).astype(np.float32)
    x[:480] = 0.0
    x = np.concatenate([x, np.ones(100, np.float32)])
    levels = frame_levels_db(x, 160)
    assert len(levels) == 40 and levels[0] == -120.0
    expected = [frame_level_db(x[i * 160 : (i + 1) * 160]) for i in range(40)]
    assert np.allclose(levels, expected, atol=1e-9)
    assert levels.min() < -100.0 < -20.0 < levels.max()
