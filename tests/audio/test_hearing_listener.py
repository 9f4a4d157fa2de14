"""Listener end to end: SimulatedMicrophone → VAD → real Whisper → events."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pytest

from audio.edges.capture import SimulatedMicrophone
from audio.edges.wav import FloatArray, encode_wav
from audio.events import (
    AudioDeviceProblem,
    AudioEvent,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from audio.hearing.listener import Listener
from audio.hearing.settings import HearingSettings
from audio.hearing.stt import CancelToken, Transcription
from audio.hearing.wer import word_errors
from audio.hearing.whisper_stt import WhisperTranscriber
from tests.audio.conftest import hearing_room

SPEED = 4.0  # the simulated microphone runs 4x real time to keep the suite short
# At 4x the end-of-turn model's verdict (which waits for a decode) comes 4x later in audio time, so
# these tests use the fixed-silence endpoint; turn-taking runs at real time in test_hearing_turn_listener.

E = TypeVar("E")


class Recorder:
    """Collects events and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[AudioEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, ev: AudioEvent) -> None:
        self.events.append(ev)
        self._changed.set()

    async def wait_for(self, pred: Callable[[AudioEvent], bool], timeout: float = 20.0) -> AudioEvent:
        async def waiter() -> AudioEvent:
            while True:
                for ev in self.events:
                    if pred(ev):
                        return ev
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(waiter(), timeout)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def closes(ev: AudioEvent) -> bool:
    return isinstance(ev, Transcribed | UtteranceFailed)


def make(
    transcriber: WhisperTranscriber, settings: HearingSettings | None = None
) -> tuple[Listener, SimulatedMicrophone, Recorder]:
    s = settings or HearingSettings(turn_detector="silence", reopen_interval_s=0.1)
    mic = SimulatedMicrophone(speed=SPEED, noise_db=-70)
    rec = Recorder()
    counter = itertools.count(1)
    listener = Listener(s, mic, transcriber, rec, utterance_ids=lambda: f"u{next(counter)}")
    return listener, mic, rec


@pytest.fixture
def hearing_utterance(hearing_say: Callable[[str], FloatArray]) -> FloatArray:
    return hearing_say("Turn on the lights in the kitchen.")


async def test_wav_gives_ordered_events(
    hearing_transcriber: WhisperTranscriber, hearing_utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    await listener.open()  # safe twice
    assert mic.feed(encode_wav(hearing_utterance, 16000))
    done = await rec.wait_for(closes)
    await listener.aclose()
    assert [type(e) for e in rec.events] == [SpeechStarted, SpeechEnded, Transcribed]
    assert {e.utterance for e in rec.events} == {"u1"}  # type: ignore[union-attr]
    assert isinstance(done, Transcribed)
    assert "lights" in done.text.lower() and "kitchen" in done.text.lower()
    assert 0.4 <= done.confidence <= 1.0
    assert done.language == "en"
    started, ended = rec.events[0], rec.events[1]
    assert isinstance(started, SpeechStarted) and isinstance(ended, SpeechEnded)
    # (timestamps are derived from sample positions, so at 4x speed only their order vs decode holds)
    assert started.ts <= done.ts and ended.ts <= done.ts
    assert ended.audio_ms >= len(hearing_utterance) * 1000 // 16000 - 100


async def test_two_utterances_are_closed_in_order(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    mic.feed(
        np.concatenate([hearing_say("Yes."), np.zeros(16000, np.float32), hearing_say("What time is it?")])
    )
    await rec.wait_for(lambda e: closes(e) and e.utterance == "u2")  # type: ignore[union-attr]
    await listener.aclose()
    for uid in ("u1", "u2"):
        mine = [e for e in rec.events if getattr(e, "utterance", None) == uid]
        assert isinstance(mine[0], SpeechStarted)
        assert sum(closes(e) for e in mine) == 1 and closes(mine[-1])
    texts = [e.text.lower() for e in rec.of(Transcribed)]
    assert "yes" in texts[0] and "time" in texts[1]


async def test_close_mid_utterance_is_interrupted(
    hearing_transcriber: WhisperTranscriber, hearing_utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    mic.feed(hearing_utterance)
    await rec.wait_for(lambda e: isinstance(e, SpeechStarted))
    await listener.close()
    assert [type(e) for e in rec.events] == [SpeechStarted, UtteranceFailed]
    failed = rec.events[1]
    assert isinstance(failed, UtteranceFailed) and failed.reason == "interrupted" and failed.utterance == "u1"
    # Nothing is heard while closed: fed audio is dropped.
    assert not mic.feed(hearing_utterance)
    await asyncio.sleep(0.3)
    assert len(rec.events) == 2
    await listener.aclose()


async def test_half_duplex_discards_while_speaking(
    hearing_transcriber: WhisperTranscriber, hearing_utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    listener.set_speaking(True)
    mic.feed(hearing_utterance)
    while mic.pending_samples:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    assert rec.events == []
    assert listener.discarded_samples >= len(hearing_utterance)
    # An utterance in progress when the device starts speaking is interrupted.
    listener.set_speaking(False)
    await asyncio.sleep(0.2)  # past the speaking tail (300 ms of audio at 4x)
    mic.feed(hearing_utterance)
    await rec.wait_for(lambda e: isinstance(e, SpeechStarted))
    listener.set_speaking(True)
    failed = await rec.wait_for(closes)
    assert isinstance(failed, UtteranceFailed) and failed.reason == "interrupted"
    await listener.aclose()


async def test_noise_only_gives_no_transcript(hearing_transcriber: WhisperTranscriber) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    rng = np.random.default_rng(5)
    mic.feed((rng.standard_normal(16000 * 2) * 10 ** (-60 / 20)).astype(np.float32))
    while mic.pending_samples:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.4)
    await listener.aclose()
    assert rec.of(SpeechStarted) == []


async def test_stt_error_is_reported(hearing_utterance: FloatArray) -> None:
    unloaded = WhisperTranscriber(HearingSettings())  # load() never called: transcribe raises
    listener, mic, rec = make(unloaded)
    await listener.open()
    mic.feed(hearing_utterance)
    failed = await rec.wait_for(closes)
    await listener.aclose()
    assert isinstance(failed, UtteranceFailed) and failed.reason == "stt_error"
    assert "load()" in failed.detail
    assert [type(e) for e in rec.events] == [SpeechStarted, SpeechEnded, UtteranceFailed]


async def test_unplugged_microphone_is_reopened(
    hearing_transcriber: WhisperTranscriber, hearing_utterance: FloatArray
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    await listener.open()
    mic.feed(hearing_utterance)
    await rec.wait_for(lambda e: isinstance(e, SpeechStarted))
    mic.unplug()
    lost = await rec.wait_for(lambda e: isinstance(e, AudioDeviceProblem))
    assert isinstance(lost, AudioDeviceProblem) and not lost.ok and lost.direction == "input"
    failed = await rec.wait_for(closes)
    assert isinstance(failed, UtteranceFailed) and failed.reason == "interrupted"
    await asyncio.sleep(0.3)  # several reopen attempts fail while unplugged
    assert mic.is_open is False
    mic.replug()
    back = await rec.wait_for(lambda e: isinstance(e, AudioDeviceProblem) and e.ok)
    assert isinstance(back, AudioDeviceProblem)
    mic.feed(hearing_utterance)
    done = await rec.wait_for(lambda e: isinstance(e, Transcribed))
    assert "kitchen" in done.text.lower()  # type: ignore[union-attr]
    await listener.aclose()


async def test_missing_device_at_open_is_reported_and_retried(
    hearing_transcriber: WhisperTranscriber,
) -> None:
    listener, mic, rec = make(hearing_transcriber)
    mic.unplug()
    await listener.open()
    first = await rec.wait_for(lambda e: isinstance(e, AudioDeviceProblem))
    assert isinstance(first, AudioDeviceProblem) and not first.ok and "simulated microphone" in first.detail
    mic.replug()
    await rec.wait_for(lambda e: isinstance(e, AudioDeviceProblem) and e.ok)
    assert mic.is_open
    await listener.aclose()
    assert not mic.is_open


class SlowMicrophone(SimulatedMicrophone):
    """A microphone whose open blocks like a PortAudio device refresh on a Pi (``delay_s``)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(speed=SPEED, noise_db=-70)
        self.delay_s = delay_s
        self.opens = 0

    def open(self, on_audio: Callable[[FloatArray], None], on_lost: Callable[[str], None]) -> int:
        import time

        self.opens += 1
        time.sleep(self.delay_s)
        return super().open(on_audio, on_lost)


async def test_slow_device_open_does_not_block_the_event_loop(
    hearing_transcriber: WhisperTranscriber,
) -> None:
    mic = SlowMicrophone(delay_s=0.6)
    listener = Listener(
        HearingSettings(turn_detector="silence", reopen_interval_s=0.1), mic, hearing_transcriber, Recorder()
    )
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    task = asyncio.create_task(ticker())
    await listener.open()
    task.cancel()
    assert mic.is_open and mic.opens == 1
    assert ticks >= 5, ticks  # a blocking open would have frozen the loop for 0.6 s: 0 ticks
    await listener.aclose()
    assert not mic.is_open


async def test_close_during_a_slow_open_leaves_the_device_closed(
    hearing_transcriber: WhisperTranscriber,
) -> None:
    mic = SlowMicrophone(delay_s=0.4)
    rec = Recorder()
    listener = Listener(
        HearingSettings(turn_detector="silence", reopen_interval_s=0.1), mic, hearing_transcriber, rec
    )
    opening = asyncio.create_task(listener.open())
    await asyncio.sleep(0.1)  # the open is blocked in the mic-io thread
    await listener.close()  # queued behind the open: closes what it produced
    await opening
    assert not mic.is_open and mic.opens == 1
    # reopened while a reopen attempt is still opening: exactly one live stream, the newest
    mic.unplug()
    await listener.open()
    await asyncio.sleep(0.15)  # the reopen loop is now inside a slow open
    mic.replug()
    await listener.close()
    await listener.open()
    assert mic.is_open
    await rec.wait_for(lambda e: isinstance(e, AudioDeviceProblem) and not e.ok)
    await listener.aclose()
    assert not mic.is_open


class CallLog:
    """Wraps a transcriber and records when each decode started (the real model does the work)."""

    def __init__(self, inner: WhisperTranscriber, rec: Recorder) -> None:
        self.inner = inner
        self.rec = rec
        self.started: list[int] = []
        """For each decode, how many events had been emitted when it started."""

    def load(self) -> None:
        self.inner.load()

    def set_language(self, lang: str) -> None:
        self.inner.set_language(lang)

    def transcribe(
        self, samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        self.started.append(len(self.rec.events))
        return self.inner.transcribe(samples, speech_ratio, cancel)


def make_logged(
    transcriber: WhisperTranscriber, max_part_ms: int
) -> tuple[Listener, SimulatedMicrophone, Recorder, CallLog]:
    """A Listener with short parts whose decodes are logged."""
    settings = HearingSettings(turn_detector="silence", reopen_interval_s=0.1, max_part_ms=max_part_ms)
    rec = Recorder()
    log = CallLog(transcriber, rec)
    mic = SimulatedMicrophone(speed=SPEED, noise_db=-70)
    return Listener(settings, mic, log, rec, utterance_ids=lambda: "u1"), mic, rec, log


async def test_long_speech_is_transcribed_in_parts_into_one_transcript(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    sentences = [
        "Once upon a time there was a little robot.",
        "It lived in a small house by the sea.",
        "Every morning it watched the boats go out.",
    ]
    pause = np.zeros(8000, np.float32)  # 0.5 s: shorter than the end-of-speech silence
    audio = np.concatenate([x for s in sentences for x in (hearing_say(s), pause)])
    listener, mic, rec, log = make_logged(hearing_transcriber, max_part_ms=5000)
    await listener.open()
    mic.feed(audio)
    done = await rec.wait_for(closes)
    await listener.aclose()
    assert [type(e) for e in rec.events] == [SpeechStarted, SpeechEnded, Transcribed]
    assert isinstance(done, Transcribed)
    reference = " ".join(sentences)
    assert word_errors(reference, done.text) <= 2, done.text
    assert done.confidence >= 0.4
    ended = rec.events[1]
    assert isinstance(ended, SpeechEnded) and ended.audio_ms >= len(audio) * 1000 // 16000 - 600
    # Parts were decoded while the speaker was still talking: before SpeechEnded (event 2) was out.
    assert len(log.started) >= 2 and log.started[0] == 1


async def test_long_speech_interrupted_after_a_part_gives_no_transcript(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    said = hearing_say("Once upon a time there was a little robot.")
    pause = np.zeros(8000, np.float32)
    listener, mic, rec, log = make_logged(hearing_transcriber, max_part_ms=3000)
    await listener.open()
    mic.feed(np.concatenate([said, pause] * 4))
    for _ in range(200):
        if log.started:
            break
        await asyncio.sleep(0.02)
    assert log.started, "no part was decoded while the speaker talked"
    listener.set_speaking(True)  # half-duplex: the device starts a reply mid-utterance
    failed = await rec.wait_for(closes)
    await asyncio.sleep(1.0)  # a part decode still running must not produce a transcript
    await listener.aclose()
    assert isinstance(failed, UtteranceFailed) and failed.reason == "interrupted"
    assert [type(e) for e in rec.events] == [SpeechStarted, UtteranceFailed]


@pytest.mark.parametrize("measured", [True, False])
async def test_the_rooms_echo_of_a_reply_is_not_heard_as_the_user(
    measured: bool,
    hearing_transcriber: WhisperTranscriber,
    hearing_say: Callable[[str], FloatArray],
) -> None:
    """The reply ends; a tiled room rings with it for most of a second (RT60 1.2 s, the microphone
    next to the speaker). The measured tail drops that echo and still hears the user who answers
    after it; a fixed 300 ms tail (``speaking_tail_max_ms = 0``) lets the echo through as speech."""
    reply = hearing_say("Shall we play a game together?")
    wet = hearing_room(np.concatenate([reply, np.zeros(24000, np.float32)]), 1.2, -3.0)
    wet *= 0.9 / np.abs(wet).max()
    echo = wet[len(reply) :]
    settings = HearingSettings(
        turn_detector="silence", reopen_interval_s=0.1, speaking_tail_max_ms=1000 if measured else 0
    )
    listener, mic, rec = make(hearing_transcriber, settings)
    await listener.open()
    await asyncio.sleep(0.15)  # the quiet room before the reply (0.6 s of audio at 4x)
    listener.set_speaking(True)
    after = np.concatenate([echo, np.zeros(8000, np.float32), hearing_say("Yes please.")])
    mic.feed(np.concatenate([wet[: len(reply)], after]))  # what the microphone hears, seamless
    while mic.pending_samples > len(after):
        await asyncio.sleep(0.002)
    listener.set_speaking(False)  # playback finished (within a block or two): the echo goes on
    done = await rec.wait_for(lambda e: isinstance(e, Transcribed) and "yes" in e.text.lower())
    await listener.aclose()
    assert isinstance(done, Transcribed)
    before = rec.events[: rec.events.index(done)]
    echoes = [e for e in before if isinstance(e, SpeechStarted) and e.utterance != done.utterance]
    if measured:
        assert [type(e) for e in before] == [SpeechStarted, SpeechEnded]  # only the user's answer
        assert listener.discarded_samples > len(reply) + 16000 * 400 // 1000  # more than 300 ms after
    else:
        assert echoes  # the echo was taken for speech first
