"""The speaker device (audio.edges.sounddevice_sink) on the fake PortAudio: unplugged and replugged,
missing or busy at start, devices that take only their own rate or all their channels, and giving
way to the microphone's device-list refresh.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import numpy as np
import pytest

from audio.edges.capture import MicrophoneUnavailable, SoundDeviceMicrophone
from audio.edges.portaudio import shared
from audio.edges.sinks import OutputDeviceUnavailable
from audio.edges.sounddevice_sink import SoundDeviceSink
from audio.edges.wav import FloatArray
from audio.events import AudioDeviceProblem, AudioEvent
from audio.hearing.listener import Listener
from audio.hearing.settings import HearingSettings
from audio.speaking.playback import PlaybackMark, PlaybackQueue, QueuedPiece
from tests.audio.fake_portaudio import (
    FakePortAudio,
    Hardware,
    NoSpeech,
    mic,
    tone_queue,
    usb_mic,
    usb_speaker,
    wait_until,
)


# ---- the speaker ----------------------------------------------------------------------------------
def _play_whole(queue: PlaybackQueue, say_id: str, samples: FloatArray) -> None:
    """Queue one reply, wait until it has been played out, and a little longer (the device's buffer)."""
    piece = QueuedPiece(say_id, 1, samples, 0, 5, ())
    assert queue.push(piece, queue.generation) and queue.push_end(say_id, 1, queue.generation)
    wait_until(lambda: not queue.busy)
    time.sleep(0.1)


def _open_sink(
    fake: FakePortAudio, render: Callable[[FloatArray, float], list[PlaybackMark]]
) -> tuple[SoundDeviceSink, list[tuple[bool, str]]]:
    reports: list[tuple[bool, str]] = []
    sink = SoundDeviceSink("USB Speaker", reopen_interval_s=0.05, backend=fake)
    sink.open(render, lambda ok, detail: reports.append((ok, detail)))
    return sink, reports


def test_idle_speaker_gives_way_so_a_missing_microphone_is_found(fake_pa: FakePortAudio) -> None:
    queue = PlaybackQueue(rate=48000)
    sink, reports = _open_sink(fake_pa, lambda out, t0: queue.render(out))
    try:
        assert shared(fake_pa).open_streams == 1
        m = mic("USB Mic")
        fake_pa.plug(usb_mic())
        with pytest.raises(MicrophoneUnavailable):
            m.open(lambda block: None, lambda detail: None)  # refused: the speaker's stream is open
        assert fake_pa.terminate_times == []
        wait_until(lambda: len(fake_pa.terminate_times) == 1)  # the idle speaker let it happen
        first, second = [s for s in fake_pa.streams if s.kind == "output"]
        assert first.closed and not first.killed
        wait_until(lambda: second.active and len(second.recorded) > 5)  # and reopened the speaker
        m.open(lambda block: None, lambda detail: None)
        m.close()
        time.sleep(0.3)
        assert len(fake_pa.terminate_times) == 1  # no request left: no more refreshes
        assert reports == []  # not a device problem
    finally:
        sink.close()
    assert shared(fake_pa).open_streams == 0


def test_a_microphone_missing_for_long_makes_the_speaker_give_way_once_per_plug_in(
    fake_pa: FakePortAudio,
) -> None:
    sink, reports = _open_sink(fake_pa, lambda out, t0: PlaybackQueue(rate=48000).render(out))
    m = mic("USB Mic")
    try:
        for _ in range(8):  # the listener retries a missing microphone every reopen_interval_s
            with pytest.raises(MicrophoneUnavailable):
                m.open(lambda block: None, lambda detail: None)
            time.sleep(0.1)
        assert len(fake_pa.terminate_times) == 1  # the first one (unknown list), then no churn
        assert len([s for s in fake_pa.streams if s.kind == "output"]) == 2
        fake_pa.plug(usb_mic())
        with pytest.raises(MicrophoneUnavailable):
            m.open(lambda block: None, lambda detail: None)  # refused: the speaker's stream is open
        wait_until(lambda: len(fake_pa.terminate_times) == 2)  # the idle speaker gave way
        m.open(lambda block: None, lambda detail: None)
        m.close()
        assert reports == []
    finally:
        sink.close()


def test_speaker_waits_for_the_reply_to_finish_before_giving_way(fake_pa: FakePortAudio) -> None:
    queue, frames = tone_queue(48000, 0.6)
    sink, _ = _open_sink(fake_pa, lambda out, t0: queue.render(out))
    try:
        wait_until(lambda: any(b.any() for _, b in fake_pa.recorded()))  # the reply is playing
        with pytest.raises(MicrophoneUnavailable):
            mic("USB Mic").open(lambda block: None, lambda detail: None)
        time.sleep(0.3)
        assert fake_pa.terminate_times == []  # not while playing
        wait_until(lambda: len(fake_pa.terminate_times) == 1)
        wait_until(lambda: len(fake_pa.recorded()) > 0 and not queue.busy)
    finally:
        sink.close()
    played = fake_pa.recorded()
    audio = np.concatenate([b for _, b in played])
    tone = np.flatnonzero(audio == 0.5)
    assert len(tone) == frames  # the whole reply was heard...
    assert tone[-1] - tone[0] == frames - 1  # ...in one piece
    last_tone_block = max(t for t, b in played if b.any())
    assert fake_pa.terminate_times[0] > last_tone_block  # the refresh came after it


def test_speaker_replugged_as_a_new_device_is_reopened_after_a_refresh(fake_pa: FakePortAudio) -> None:
    sink, reports = _open_sink(fake_pa, lambda out, t0: PlaybackQueue(rate=48000).render(out))
    try:
        fake_pa.unplug("USB Speaker")
        wait_until(lambda: any(not ok for ok, _ in reports))
        assert shared(fake_pa).open_streams == 0  # the dead stream was released
        fake_pa.plug(usb_speaker())
        wait_until(lambda: any(ok for ok, _ in reports))
        assert len(fake_pa.terminate_times) >= 1  # only a refresh makes the new device openable
        newest = fake_pa.streams[-1]
        assert newest.kind == "output" and newest.active and fake_pa.plugged(newest.hardware)
        assert shared(fake_pa).open_streams == 1
    finally:
        sink.close()
    assert shared(fake_pa).open_streams == 0


def test_a_speaker_plugged_in_later_that_only_takes_its_own_rate_plays_converted(
    fake_pa: FakePortAudio,
) -> None:
    """Missing at start, the sink runs at 48 kHz; the speaker plugged in later is an ALSA ``hw:``
    device that opens only at 44.1 kHz: it is opened at that rate and hears the reply whole, at the
    right pitch and length."""
    fake_pa.unplug("USB Speaker")
    queue = PlaybackQueue(rate=48000, volume=1.0)
    frames = 48000 // 2
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(frames) / 48000)).astype(np.float32)
    reports: list[tuple[bool, str]] = []
    sink = SoundDeviceSink("Desk Speaker", reopen_interval_s=0.05, backend=fake_pa, wait_for_device=True)
    sink.open(lambda out, t0: queue.render(out), lambda ok, d: reports.append((ok, d)))
    try:
        assert sink.rate == 48000 and reports and not reports[0][0]
        fake_pa.plug(Hardware("Desk Speaker", outputs=2, rate=44100, rates=(44100,)))
        wait_until(lambda: any(ok for ok, _ in reports))
        speaker = fake_pa.streams[-1]
        assert speaker.kind == "output" and speaker.active and speaker.samplerate == 44100
        assert sink.rate == 48000  # replies are still synthesised at the playback rate
        _play_whole(queue, "r", tone)
    finally:
        sink.close()
    heard = np.concatenate([b for _, b in speaker.recorded])
    loud = np.flatnonzero(np.abs(heard) > 0.05)
    assert abs((loud[-1] - loud[0]) - 44100 // 2) < 100  # half a second at the device's rate
    middle = heard[loud[0] + 2000 : loud[-1] - 2000]
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    assert abs(np.argmax(spectrum) * 44100 / len(middle) - 440) < 3  # not 479 Hz (48 kHz played as 44.1)
    assert np.abs(np.diff(middle)).max() < 0.5 * 2 * np.pi * 440 / 44100 * 1.2  # no clicks between blocks


def test_a_speaker_busy_at_start_is_waited_for_by_the_daemon_and_raised_elsewhere(
    fake_pa: FakePortAudio,
) -> None:
    """Another program holds the speaker (listed, will not open): ``robot-face say`` gets the error;
    the daemon's sink reports it, runs on the software clock and plays once the device is free."""
    held = next(hw for hw in fake_pa.hardware if hw.name == "USB Speaker")
    held.busy = True
    plain = SoundDeviceSink("USB Speaker", backend=fake_pa)
    with pytest.raises(
        OutputDeviceUnavailable, match=r"cannot open output device 'USB Speaker'.*Device unavailable"
    ):
        plain.open(lambda out, t0: [], lambda ok, d: None)
    assert shared(fake_pa).open_streams == 0

    queue, frames = tone_queue(48000, 0.3)
    reports: list[tuple[bool, str]] = []
    sink = SoundDeviceSink("USB Speaker", reopen_interval_s=0.05, backend=fake_pa, wait_for_device=True)
    sink.open(lambda out, t0: queue.render(out), lambda ok, d: reports.append((ok, d)))
    try:
        assert reports and not reports[0][0]
        assert "Device unavailable" in reports[0][1] and "waiting for it" in reports[0][1]
        wait_until(lambda: not queue.busy)  # the reply finishes on the software clock, unheard
        held.busy = False
        wait_until(lambda: any(ok for ok, _ in reports))
        speaker = fake_pa.streams[-1]
        assert speaker.kind == "output" and speaker.active and speaker.hardware is held
        _play_whole(queue, "r2", np.full(frames, 0.25, np.float32))
    finally:
        sink.close()
    heard = np.concatenate([b for _, b in speaker.recorded])
    assert np.count_nonzero(np.abs(heard) > 0.1) >= frames * 0.9  # the second reply was heard whole
    assert shared(fake_pa).open_streams == 0


async def test_open_microphone_gives_way_once_a_missing_speaker_is_plugged_in(
    fake_pa: FakePortAudio, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Awake (microphone open), the speaker missing since start: the daemon's sink waits on the
    software clock; only when a speaker is plugged in does the microphone pause for the rescan."""
    caplog.set_level(logging.DEBUG, logger="audio")  # a failure shows what each side did (seen once
    # in CI, 2026-12-06: no reopen in 30 s; not reproduced since)
    monkeypatch.setattr(Listener, "watch_interval_s", 0.05)
    events: list[AudioEvent] = []
    settings = HearingSettings(input_device="Built-in", reopen_interval_s=0.05)
    listener = Listener(settings, SoundDeviceMicrophone(settings), NoSpeech(), events.append)
    await listener.open()
    reports: list[tuple[bool, str]] = []
    queue, _ = tone_queue(48000, 0.3)
    sink = SoundDeviceSink("Desk Speaker", reopen_interval_s=0.05, backend=fake_pa, wait_for_device=True)
    try:
        await asyncio.to_thread(
            sink.open, lambda out, t0: queue.render(out), lambda ok, d: reports.append((ok, d))
        )
        assert reports and not reports[0][0] and "'Desk Speaker' not found" in reports[0][1]
        assert "waiting for it" in reports[0][1] and sink.rate == 48000
        for _ in range(100):  # the reply runs on the software clock: finishes on time, unheard
            if not queue.busy:
                break
            await asyncio.sleep(0.02)
        assert not queue.busy
        await asyncio.sleep(0.6)
        # At most the first rescan (PortAudio's list at import is unknown); none while nothing changes.
        first = len(fake_pa.terminate_times)
        assert first <= 1
        await asyncio.sleep(0.5)
        assert len(fake_pa.terminate_times) == first
        seen = listener.heard_samples
        await asyncio.sleep(0.2)
        assert listener.heard_samples > seen  # the microphone keeps hearing

        fake_pa.plug(Hardware("Desk Speaker", outputs=2, rate=44100))
        deadline = time.monotonic() + 30.0  # the reopen runs on a worker thread (slow on a loaded machine)
        while not any(ok for ok, _ in reports) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        story = "\n".join(f"{r.threadName} {r.name}: {r.getMessage()}" for r in caplog.records[-60:])
        assert reports[-1] == (True, "output device 'Desk Speaker' reopened"), (
            f"{reports}; PortAudio refreshes {len(fake_pa.terminate_times)}, "
            f"requested {shared(fake_pa)._requested_at}, streams {shared(fake_pa).open_streams}\n{story}"
        )
        assert len(fake_pa.terminate_times) == first + 1
        speakers = [s for s in fake_pa.streams if s.kind == "output" and s.hardware.name == "Desk Speaker"]
        assert speakers and speakers[-1].active and speakers[-1].samplerate == 48000
        seen = listener.heard_samples
        await asyncio.sleep(0.2)
        assert listener.heard_samples > seen  # and the microphone was reopened
        assert not [e for e in events if isinstance(e, AudioDeviceProblem)]  # a pause, not a problem
    finally:
        await asyncio.to_thread(sink.close)
        await listener.aclose()
    assert shared(fake_pa).open_streams == 0
