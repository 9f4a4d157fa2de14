"""The listener in full duplex: it hears the user over the device's own voice only while its source
says the canceller can be trusted; a fall back to half duplex interrupts what it heard over a reply.

The source is the simulated microphone with the duplex mode a ``FrontEndSource`` reports (what the
echo canceller does is tested in test_duplex_front_end/test_duplex_guard, and end to end in
tests/e2e/test_barge_in.py)."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest

from audio.edges.capture import SimulatedMicrophone
from audio.edges.wav import FloatArray
from audio.events import (
    BargeInSuspected,
    DuplexChanged,
    EchoRemoval,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from audio.hearing.listener import NOT_CONVERGED, Listener, _barge_in_settings, duplex_of
from audio.hearing.settings import HearingSettings
from audio.hearing.vad import Endpointer, UtteranceBegan
from audio.hearing.whisper_stt import WhisperTranscriber
from tests.audio.test_hearing_listener import SPEED, Recorder, closes


class DuplexMicrophone(SimulatedMicrophone):
    """The simulated microphone, with the duplex mode and fault a ``FrontEndSource`` reports."""

    def __init__(self) -> None:
        super().__init__(speed=SPEED, noise_db=-70)
        self.duplex = "full"
        self.fault_reason: str | None = None
        self.removal_db: float | None = None


def make(transcriber: WhisperTranscriber, early_ms: int = 60) -> tuple[Listener, DuplexMicrophone, Recorder]:
    settings = HearingSettings(
        turn_detector="silence", echo_cancellation="webrtc", early_duck_speech_ms=early_ms
    )
    mic = DuplexMicrophone()
    rec = Recorder()
    counter = itertools.count(1)
    listener = Listener(settings, mic, transcriber, rec, utterance_ids=lambda: f"u{next(counter)}")
    return listener, mic, rec


@pytest.fixture
def utterance(hearing_say: object) -> FloatArray:
    return hearing_say("Actually, stop. I want to do something else.")  # type: ignore[operator]


async def test_full_duplex_hears_the_user_over_a_reply(
    hearing_transcriber: WhisperTranscriber, utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    listener.set_speaking(True)
    mic.feed(utterance)
    done = await rec.wait_for(closes)
    await listener.aclose()
    assert rec.events[0] == DuplexChanged("full", "", rec.events[0].ts)
    started = [e for e in rec.events if isinstance(e, SpeechStarted)]
    assert len(started) == 1 and started[0].over_playback
    assert isinstance(done, Transcribed) and "stop" in done.text.lower()
    assert listener.discarded_samples == 0
    # Its first voiced frames were said before the start (the core ducks the reply early), once.
    kinds = [type(e) for e in rec.events if isinstance(e, BargeInSuspected | SpeechStarted)]
    assert kinds == [BargeInSuspected, SpeechStarted]
    suspected = rec.of(BargeInSuspected)[0]
    assert abs(suspected.ts - started[0].ts) < 0.3  # both stamped at the user's first voiced frames


async def test_without_the_early_duck_only_the_start_is_said(
    hearing_transcriber: WhisperTranscriber, utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber, early_ms=0)
    await listener.open()
    listener.set_speaking(True)
    mic.feed(utterance)
    await rec.wait_for(closes)
    await listener.aclose()
    assert len(rec.of(SpeechStarted)) == 1 and rec.of(BargeInSuspected) == []


async def test_speech_when_the_device_is_silent_is_not_over_playback(
    hearing_transcriber: WhisperTranscriber, utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    mic.feed(utterance)
    await rec.wait_for(closes)
    await listener.aclose()
    started = [e for e in rec.events if isinstance(e, SpeechStarted)]
    assert len(started) == 1 and not started[0].over_playback
    assert rec.of(BargeInSuspected) == []  # no reply to duck: nothing suspected


async def test_half_until_converged_and_a_fall_back_interrupts_the_barge_in(
    hearing_transcriber: WhisperTranscriber, utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    mic.duplex = "half"  # not converged yet: half duplex, said with its reason
    await listener.open()
    listener.set_speaking(True)
    mic.feed(utterance[: len(utterance) // 3])
    while mic.pending_samples:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    assert [e for e in rec.events if not isinstance(e, DuplexChanged)] == []
    assert rec.events == [DuplexChanged("half", NOT_CONVERGED, rec.events[0].ts)]
    assert listener.discarded_samples > 0
    mic.duplex = "full"  # converged mid-reply: the next speech is heard
    mic.feed(utterance)
    await rec.wait_for(lambda e: isinstance(e, SpeechStarted))
    mic.duplex, mic.fault_reason = "half", "the speaker's reference stopped"
    failed = await rec.wait_for(closes)
    await listener.aclose()
    assert isinstance(failed, UtteranceFailed) and failed.reason == "interrupted"
    assert "reference stopped" in failed.detail
    changes = [e for e in rec.events if isinstance(e, DuplexChanged)]
    assert [(c.mode, c.reason) for c in changes] == [
        ("half", NOT_CONVERGED),
        ("full", ""),
        ("half", "the speaker's reference stopped"),
    ]
    assert not any(isinstance(e, Transcribed) for e in rec.events)


async def test_the_cancellers_removal_is_said_when_measured_and_when_it_moves(
    hearing_transcriber: WhisperTranscriber,
) -> None:
    """Said when first measured and when it moves by 2 dB or more; not measured again (a
    re-convergence) is not said: the last figure holds."""
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    quiet = np.zeros(1600, dtype=np.float32)

    async def heard(removal: float | None, said: int) -> list[float]:
        """The removals said once a block was heard with ``removal`` (``said`` of them by then)."""
        mic.removal_db = removal
        mic.feed(quiet)
        while mic.pending_samples:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        await rec.wait_for(lambda _: len(rec.of(EchoRemoval)) >= said, timeout=5.0)
        return [e.removed_db for e in rec.of(EchoRemoval)]

    assert await heard(None, 0) == []
    assert await heard(44.04, 1) == [44.0]
    assert await heard(45.5, 1) == [44.0]  # moved less than 2 dB
    assert await heard(None, 1) == [44.0]  # re-converging: the last figure holds
    assert await heard(6.0, 2) == [44.0, 6.0]
    await listener.aclose()


def test_without_a_canceller_the_reason_says_why() -> None:
    mic = SimulatedMicrophone()
    assert duplex_of(mic, "off") == ("half", "echo cancellation is off (hearing.echo_cancellation)")
    mode, reason = duplex_of(mic, "webrtc")
    assert mode == "half" and "did not start" in reason
    assert duplex_of(mic, "system")[0] == "half"


def test_the_start_over_a_reply_needs_barge_in_speech_ms() -> None:
    """A 150 ms burst of speech starts an utterance normally, not over a reply (250 ms needed)."""
    settings = HearingSettings(barge_in_speech_ms=250)  # not the default: a clear margin to 150 ms
    frame = np.zeros(settings.sample_rate * settings.block_ms // 1000, dtype=np.float32)

    def began(endpointer: Endpointer, speech_frames: int) -> bool:
        flags = [False] * 10 + [True] * speech_frames + [False] * 20
        return any(isinstance(e, UtteranceBegan) for f in flags for e in endpointer.process(frame, f))

    assert began(Endpointer(settings), 5)  # 150 ms
    assert not began(Endpointer(_barge_in_settings(settings)), 5)
    assert began(Endpointer(_barge_in_settings(settings)), 9)  # 270 ms
