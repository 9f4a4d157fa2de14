"""Speaker through the real Piper voice: event order and timing, streaming, stop, errors."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audio.edges.sinks import NullSink, OutputDeviceUnavailable, WavSink, make_sink
from audio.edges.wav import read_wav
from audio.events import (
    AudioDeviceProblem,
    AudioEvent,
    PlaybackFinished,
    PlaybackStarted,
    SentencePlaying,
)
from audio.speaking.settings import SpeakingSettings
from audio.speaking.speaker import Speaker
from audio.speaking.tts import VoiceNotFound
from tests.audio.fake_portaudio import FakePortAudio, usb_speaker

TEXT = "Hello there, how are you today? I am fine, thank you. See you soon!"


class Recorder:
    """Collects events with their arrival time."""

    def __init__(self) -> None:
        self.events: list[tuple[float, AudioEvent]] = []

    def __call__(self, event: AudioEvent) -> None:
        self.events.append((time.time(), event))

    def of(self, say: str) -> list[AudioEvent]:
        return [e for _, e in self.events if getattr(e, "say", None) == say]

    async def finished(self, say: str, timeout: float = 30.0) -> PlaybackFinished:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.of(say):
                if isinstance(e, PlaybackFinished):
                    return e
            await asyncio.sleep(0.01)
        raise AssertionError(f"no PlaybackFinished for {say}: {self.of(say)}")

    async def first(self, kind: type, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _, e in self.events:
                if isinstance(e, kind):
                    return e
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {kind.__name__}")


async def _speaker(out: Any, rec: Recorder, **kw: Any) -> Speaker:
    speaker = Speaker(SpeakingSettings(**kw), out, rec)
    await speaker.start()
    return speaker


def _stream(speaker: Speaker, say: str, text: str) -> None:
    words = text.split(" ")
    for i, w in enumerate(words):
        speaker.speak(say, w if i == 0 else " " + w, final=False)
    speaker.speak(say, "", final=True)


async def test_events_in_order_with_real_timing_and_covering_offsets(speaking_voice: Any) -> None:
    rec = Recorder()
    speaker = await _speaker(NullSink(), rec)
    try:
        t0 = time.time()
        _stream(speaker, "r1", TEXT)
        assert speaker.busy
        fin = await rec.finished("r1")
    finally:
        await speaker.aclose()
    events = rec.of("r1")
    assert isinstance(events[0], PlaybackStarted)
    assert isinstance(events[-1], PlaybackFinished) and not events[-1].interrupted
    pieces = [e for e in events[1:-1] if isinstance(e, SentencePlaying)]
    assert len(pieces) == len(events) - 2 >= 3
    assert events[0].ts == pieces[0].ts and events[0].ts - t0 < 2.0
    # Offsets are contiguous and cover the whole text.
    assert pieces[0].start == 0 and pieces[-1].end == len(TEXT)
    gaps = [t.gap_s for t in speaker.piece_log if t.say == "r1"]
    assert len(gaps) == len(pieces) and gaps[0] == 0.0
    for (a, b), gap in zip(itertools.pairwise(pieces), gaps[1:], strict=True):
        assert a.end == b.start
        # back to back at the output: the next piece starts where the previous one ended, plus any
        # underrun the queue measured (none when synthesis keeps up); one 10 ms block of slack
        assert abs(b.ts - (a.ts + a.duration + gap)) < 0.011
    total = sum(p.duration for p in pieces) + sum(gaps)
    assert abs(fin.ts - events[0].ts - total) < 0.011
    # Real-time pacing: each event arrives when it happens at the output.
    for arrived, e in rec.events:
        assert -0.005 < arrived - e.ts < 0.2
    for p in pieces:  # lip-sync timeline: monotonic, contiguous, spans the piece's audio
        assert p.visemes[0].start == 0.0 and abs(p.visemes[-1].end - p.duration) < 0.02
        for cue, after in zip(p.visemes, p.visemes[1:], strict=False):
            assert cue.start < cue.end == after.start
        assert {"mbp", "aa", "ee", "oo"} & {c.viseme for c in p.visemes}
    assert not speaker.busy


async def test_replies_play_in_order_and_empty_reply_only_finishes(speaking_voice: Any) -> None:
    rec = Recorder()
    speaker = await _speaker(NullSink(), rec)
    try:
        speaker.speak("a", "One moment, please", final=False)
        speaker.speak("b", "Second.", final=True)
        speaker.speak("e", "   ", final=True)
        await asyncio.sleep(0.3)
        speaker.speak("a", ". Done.", final=True)
        await rec.finished("e")
    finally:
        await speaker.aclose()
    order = [
        (type(e).__name__, getattr(e, "say", None))
        for _, e in rec.events
        if not isinstance(e, SentencePlaying)
    ]
    assert order == [
        ("PlaybackStarted", "a"),
        ("PlaybackFinished", "a"),
        ("PlaybackStarted", "b"),
        ("PlaybackFinished", "b"),
        ("PlaybackFinished", "e"),
    ]
    a_pieces = [e for e in rec.of("a") if isinstance(e, SentencePlaying)]
    assert a_pieces[-1].end == len("One moment, please. Done.")


def _transcribe(whisper: Any, path: Path) -> str:
    audio, rate = read_wav(path)
    from audio.edges.wav import resample

    segments, _ = whisper.transcribe(resample(audio, rate, 16000), language="en", beam_size=1)
    return " ".join(s.text for s in segments)


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() or c == " " else " " for c in text).split()


async def test_streamed_chunks_sound_like_one_shot(
    tmp_path: Path, speaking_voice: Any, speaking_whisper: Any
) -> None:
    rec = Recorder()
    speaker = await _speaker(WavSink(tmp_path), rec, sink="wav", wav_dir=str(tmp_path))
    try:
        words = TEXT.split(" ")
        for i, w in enumerate(words):  # streamed like an LLM, with pauses mid-sentence
            speaker.speak("streamed", w if i == 0 else " " + w, final=i == len(words) - 1)
            await asyncio.sleep(0.02)
        speaker.speak("oneshot", TEXT, final=True)
        await rec.finished("oneshot")
    finally:
        await speaker.aclose()
    streamed, rate = read_wav(tmp_path / "streamed.wav")
    oneshot, rate2 = read_wav(tmp_path / "oneshot.wav")
    assert rate == rate2 == 22050
    assert abs(len(streamed) - len(oneshot)) / len(oneshot) < 0.1
    expected = _words(TEXT)
    for name in ("streamed", "oneshot"):
        heard = _words(_transcribe(speaking_whisper, tmp_path / f"{name}.wav"))
        matches = sum(1 for w in expected if w in heard)
        assert matches >= len(expected) - 2, (name, heard)
        assert len(heard) <= len(expected) + 2, (name, heard)  # nothing spoken twice


async def test_stop_silences_output_fast_and_drops_queued_replies(
    fake_pa: FakePortAudio, speaking_voice: Any
) -> None:
    rec = Recorder()
    sink = make_sink(SpeakingSettings(output_device="usb"), backend=fake_pa)
    speaker = await _speaker(sink, rec)
    try:
        assert speaker.sample_rate == 48000
        speaker.speak("long", TEXT + " " + TEXT, final=True)
        speaker.speak("queued", "You will never hear this.", final=True)
        speaker.speak("open", "Nor this", final=False)
        await rec.first(PlaybackStarted)
        await asyncio.sleep(0.4)
        t_stop = time.time()
        speaker.stop()
        t_stopped = time.time()
        fin = await rec.finished("long")
        await rec.finished("queued")
        await rec.finished("open")
        await asyncio.sleep(0.1)
        assert not speaker.busy
        speaker.speak("after", "Still working.", final=True)
        after = await rec.finished("after")
    finally:
        await speaker.aclose()
    # Fast: the fade (8 ms) ends within the first block the output renders after the stop. Measured
    # from that block, not from the wall clock: beside another pytest worker the fake's callback thread
    # is sometimes 50 ms late, as a real one under load would be (a CI run failed on that).
    began, heard = fake_pa.first_call_after(t_stopped)
    block_s = 0.01 + 0.003  # the fake's 10 ms block, and the time stamps' rounding
    assert began - t_stopped < 1.0, "the output stopped calling back"
    assert fin.interrupted and t_stop <= fin.ts <= heard + block_s, (
        f"finished {fin.ts - t_stop:.3f} s after stop, the first block after it heard at {heard - t_stop:.3f} s"
    )
    for say in ("queued", "open"):
        events = rec.of(say)
        assert [type(e) for e in events] == [PlaybackFinished] and events[0].interrupted  # type: ignore[union-attr]
    assert not after.interrupted
    blocks = fake_pa.recorded()
    after_started = next(e.ts for e in rec.of("after") if isinstance(e, PlaybackStarted))
    assert after_started > t_stop + 0.1
    loud_before = [b for t, b in blocks if t_stop - 0.3 < t < t_stop and np.abs(b).max() > 0.01]
    assert loud_before, "speech was playing before stop"
    audible_after = [
        t + np.nonzero(np.abs(b) > 1e-3)[0][-1] / 48000
        for t, b in blocks
        if t_stop <= t < after_started and np.abs(b).max() > 1e-3
    ]
    silent_at = max(audible_after, default=t_stop)
    assert silent_at <= heard + block_s, (
        f"still audible {silent_at - heard:.3f} s into the first block after stop"
    )


async def test_a_hold_keeps_the_next_reply_silent_until_the_sleep_behind_it_is_decided(
    speaking_voice: Any,
) -> None:
    """A goodbye with a sleep behind it: with 150 ms of output latency the next reply's start used to
    sound before the goodbye's end was heard and the sleep's stop could reach the output."""
    fake = FakePortAudio([usb_speaker(latency=0.15)])
    rec = Recorder()
    decide: dict[str, Any] = {}

    def emit(event: AudioEvent) -> None:  # the core's part: asleep → stop + release, ignored → release
        rec(event)
        if isinstance(event, PlaybackFinished) and event.say in decide:
            decide.pop(event.say)()

    sink = make_sink(SpeakingSettings(output_device="usb"), backend=fake)
    speaker = Speaker(SpeakingSettings(), sink, emit)
    await speaker.start()
    try:

        def fall_asleep() -> None:
            speaker.stop()
            speaker.release("bye")

        decide["bye"] = fall_asleep  # the device falls asleep
        speaker.speak("bye", "Bye.", final=True)
        speaker.hold("bye")
        speaker.speak("next", "You should never hear this.", final=True)
        bye = await rec.finished("bye")
        nxt = await rec.finished("next")
        await asyncio.sleep(0.3)
        decide["a"] = lambda: speaker.release("a")  # the sleep is ignored: play on
        speaker.speak("a", "Okay.", final=True)
        speaker.hold("a")
        speaker.speak("b", "Let us play.", final=True)
        a = await rec.finished("a")
        b = await rec.finished("b")
    finally:
        await speaker.aclose()
    assert not bye.interrupted and nxt.interrupted
    assert [type(e) for e in rec.of("next")] == [PlaybackFinished]
    heard_after_bye = [
        t for t, block in fake.recorded() if bye.ts + 0.011 < t < a.ts - 1.0 and np.abs(block).max() > 1e-3
    ]
    assert heard_after_bye == [], f"{len(heard_after_bye)} audible blocks after the goodbye"
    b_started = next(e for e in rec.of("b") if isinstance(e, PlaybackStarted))
    assert not a.interrupted and not b.interrupted and b_started.ts >= a.ts


async def test_a_hold_after_a_stopped_reply_holds_at_once(speaking_voice: Any) -> None:
    rec = Recorder()
    speaker = await _speaker(NullSink(), rec)
    try:
        speaker.speak("long", TEXT, final=True)
        await rec.first(PlaybackStarted)
        speaker.stop()
        speaker.hold("long", at_once=True)  # the sleep still waits for it: what comes next must wait too
        speaker.speak("next", "Wait for it.", final=True)
        await rec.finished("long")
        await asyncio.sleep(0.5)
        assert rec.of("next") == []
        speaker.release("long")
        assert not (await rec.finished("next")).interrupted
    finally:
        await speaker.aclose()


async def test_missing_output_device_is_a_clear_error(fake_pa: FakePortAudio, speaking_voice: Any) -> None:
    rec = Recorder()
    with pytest.raises(OutputDeviceUnavailable) as err:
        await _speaker(make_sink(SpeakingSettings(output_device="HDMI"), backend=fake_pa), rec)
    assert "'HDMI'" in str(err.value) and "USB Speaker" in str(err.value)
    assert "Built-in Mic" not in str(err.value)
    speaker = await _speaker(make_sink(SpeakingSettings(output_device="USB Speaker"), backend=fake_pa), rec)
    try:
        speaker.speak("x", "Okay.", final=True)
        assert not (await rec.finished("x")).interrupted
    finally:
        await speaker.aclose()


async def test_unplugged_device_is_reported_and_reopened(fake_pa: FakePortAudio, speaking_voice: Any) -> None:
    rec = Recorder()
    settings = SpeakingSettings(reopen_interval_s=0.2)
    speaker = await _speaker(make_sink(settings, backend=fake_pa), rec, reopen_interval_s=0.2)
    try:
        speaker.speak("r", "This sentence is cut off by the cable.", final=True)
        await rec.first(PlaybackStarted)
        fake_pa.unplug("USB Speaker")  # its stream dies
        problem = await rec.first(AudioDeviceProblem)
        assert problem.direction == "output" and not problem.ok and "USB Speaker" in problem.detail
        assert not (await rec.finished("r")).interrupted  # the reply still ends, on time
        fake_pa.plug(usb_speaker())  # a new device: only a rescan makes it openable
        deadline = time.monotonic() + 5
        while not any(isinstance(e, AudioDeviceProblem) and e.ok for _, e in rec.events):
            assert time.monotonic() < deadline, "device not reopened"
            await asyncio.sleep(0.05)
        speaker.speak("s", "Back again.", final=True)
        await rec.finished("s")
    finally:
        await speaker.aclose()
    outputs = [s for s in fake_pa.streams if s.kind == "output"]
    assert len(outputs) >= 2 and fake_pa.plugged(outputs[-1].hardware)
    assert any(np.abs(b).max() > 0.01 for _, b in outputs[-1].recorded)


async def test_bad_voice_is_a_clear_error_and_the_old_voice_stays(
    tmp_path: Path, speaking_voice: Any
) -> None:
    rec = Recorder()
    with pytest.raises(VoiceNotFound, match=r"nope\.onnx"):
        await _speaker(NullSink(), rec, voice=str(tmp_path / "nope.onnx"))
    # A second model file for "xx" (a copy of joe under another name): switching loads it, no restart.
    model = speaking_voice.path
    (tmp_path / "xx.onnx").symlink_to(model)
    (tmp_path / "xx.onnx.json").symlink_to(f"{model}.json")
    speaker = await _speaker(
        NullSink(), rec, voices={"xx": str(tmp_path / "xx.onnx"), "yy": "/missing/yy.onnx"}
    )
    try:
        assert speaker.voice_path == model
        with pytest.raises(VoiceNotFound, match=r"yy\.onnx"):
            await speaker.set_voice("/missing/yy.onnx")
        with pytest.raises(VoiceNotFound):
            await speaker.set_voice(str(tmp_path / "other.onnx"))
        assert speaker.voice_path == model
        await speaker.set_voice("xx")  # the file stem of a configured voice
        assert speaker.voice_path == tmp_path / "xx.onnx"
        speaker.set_volume(0.3)
        speaker.speak("v", "Switched.", final=True)
        assert not (await rec.finished("v")).interrupted
        await speaker.set_voice("")
        assert speaker.voice_path == model
    finally:
        await speaker.aclose()


async def test_aclose_finishes_open_replies(speaking_voice: Any) -> None:
    rec = Recorder()
    speaker = await _speaker(NullSink(), rec)
    speaker.speak("open", "This reply never gets, its final chunk", final=False)
    await rec.first(PlaybackStarted)
    speaker.speak("next", "Queued.", final=True)
    await speaker.aclose()
    assert [type(e) for e in rec.of("open")][-1] is PlaybackFinished
    assert [(type(e), e.interrupted) for e in rec.of("next")] == [(PlaybackFinished, True)]  # type: ignore[union-attr]


async def test_speaker_whose_start_failed_closes_replies_instead_of_hanging(fake_pa: FakePortAudio) -> None:
    rec = Recorder()
    speaker = Speaker(
        SpeakingSettings(output_device="HDMI"),
        make_sink(SpeakingSettings(output_device="HDMI"), backend=fake_pa),
        rec,
    )
    with pytest.raises(OutputDeviceUnavailable):
        await speaker.start()
    speaker.speak("x", "Hello", final=False)
    # Every chunk it is given ends at once (the core publishes the reply's first finish only).
    assert [(type(e), e.interrupted) for e in rec.of("x")] == [(PlaybackFinished, True)]  # type: ignore[union-attr]
    speaker.stop()
    await speaker.aclose()
    assert not speaker.busy
