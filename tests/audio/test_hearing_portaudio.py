"""Device-list refresh (audio.edges.portaudio) and the microphone: hot-plugged microphones are found
without a restart, PortAudio is never re-initialised under an open stream. The speaker's side is in
``test_speaking_device.py``; the fake is ``tests/audio/fake_portaudio.py``.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

from audio.edges.capture import MicrophoneUnavailable, SoundDeviceMicrophone
from audio.edges.portaudio import PortAudio, shared
from audio.edges.sounddevice_sink import SoundDeviceSink
from audio.edges.wav import FloatArray
from audio.events import AudioDeviceProblem, AudioEvent
from audio.hearing.listener import Listener
from audio.hearing.settings import HearingSettings
from audio.speaking.playback import PlaybackQueue
from tests.audio.fake_portaudio import FakePortAudio, Hardware, NoSpeech, mic, tone_queue, usb_mic, wait_until


# ---- the helper -----------------------------------------------------------------------------------
def test_fake_portaudio_freezes_the_device_list_until_reinitialised(fake_pa: FakePortAudio) -> None:
    fake_pa.plug(usb_mic())
    assert "USB Mic" not in fake_pa.names()
    assert shared(fake_pa).refresh_devices()
    assert "USB Mic" in fake_pa.names()


def test_no_refresh_while_a_stream_is_open(fake_pa: FakePortAudio) -> None:
    pa = PortAudio(fake_pa, min_interval_s=0.0, hardware=fake_pa.signature)
    blocks: list[int] = []
    stream = pa.open_stream(
        lambda: fake_pa.InputStream(
            device=0, samplerate=16000, callback=lambda data, *a: blocks.append(len(data))
        )
    )
    stream.start()
    fake_pa.plug(usb_mic())
    assert pa.open_streams == 1
    assert not pa.refresh_devices()
    assert fake_pa.terminate_times == [] and "USB Mic" not in fake_pa.names()
    seen = len(blocks)
    wait_until(lambda: len(blocks) > seen + 3)  # the open stream was left alone and keeps running
    assert stream.active and not stream.killed
    pa.close_stream(stream)
    assert stream.closed and pa.open_streams == 0
    assert pa.refresh_devices()
    assert "USB Mic" in fake_pa.names() and len(fake_pa.terminate_times) == 1


def test_refresh_is_rate_limited(fake_pa: FakePortAudio) -> None:
    now = [100.0]
    pa = PortAudio(fake_pa, min_interval_s=2.0, clock=lambda: now[0], hardware=lambda: None)
    assert pa.refresh_devices()
    now[0] += 1.9
    assert not pa.refresh_devices()
    assert fake_pa.initializations == 2  # the import-time one and the first refresh
    now[0] += 0.1
    assert pa.refresh_devices()
    assert fake_pa.initializations == 3 and pa.refreshes == 2


def test_refused_refresh_is_a_request_that_expires(fake_pa: FakePortAudio) -> None:
    now = [0.0]
    pa = PortAudio(
        fake_pa, min_interval_s=0.0, request_ttl_s=5.0, clock=lambda: now[0], hardware=fake_pa.signature
    )
    stream = pa.open_stream(lambda: fake_pa.OutputStream(device=1, samplerate=48000, callback=print))
    assert not pa.refresh_wanted(own_streams=1)
    assert not pa.refresh_devices()  # refused: a stream is open
    assert pa.refresh_wanted(own_streams=1) and not pa.refresh_wanted(own_streams=0)
    now[0] += 5.1
    assert not pa.refresh_wanted(own_streams=1)
    pa.close_stream(stream)


def test_refresh_only_when_sound_hardware_was_plugged_in_or_out(fake_pa: FakePortAudio) -> None:
    pa = PortAudio(fake_pa, min_interval_s=0.0, hardware=fake_pa.signature)
    assert pa.hardware_changed() is True and pa.refresh_devices()  # first: what PortAudio saw is unknown
    assert pa.hardware_changed() is False and not pa.refresh_devices()  # nothing new to find
    assert fake_pa.initializations == 2
    stream = pa.open_stream(lambda: fake_pa.OutputStream(device=1, samplerate=48000, callback=print))
    assert not pa.refresh_devices() and not pa.refresh_wanted(own_streams=1)  # not even a request
    fake_pa.plug(usb_mic())
    assert not pa.refresh_devices()  # now a request (a stream is open)
    assert pa.refresh_wanted(own_streams=1) and pa.refresh_wanted(own_streams=1, require_change=True)
    pa.close_stream(stream)
    assert pa.refresh_devices() and "USB Mic" in fake_pa.names()
    fake_pa.unplug("USB Mic")
    assert pa.refresh_devices() and "USB Mic" not in fake_pa.names()
    # Where the hardware cannot be read, every allowed refresh runs, but nobody waiting for
    # evidence of a change (the microphone) is asked to give way.
    blind = PortAudio(fake_pa, min_interval_s=0.0, hardware=lambda: None)
    assert blind.hardware_changed() is None and blind.refresh_devices() and blind.refresh_devices()
    stream = blind.open_stream(lambda: fake_pa.OutputStream(device=1, samplerate=48000, callback=print))
    assert not blind.refresh_devices()
    assert blind.refresh_wanted(own_streams=1) and not blind.refresh_wanted(
        own_streams=1, require_change=True
    )
    blind.close_stream(stream)


def test_a_rescan_is_logged_only_when_the_device_list_changed(
    fake_pa: FakePortAudio, caplog: pytest.LogCaptureFixture
) -> None:
    pa = PortAudio(fake_pa, min_interval_s=0.0, hardware=lambda: None)  # rescans every time
    with caplog.at_level("INFO", logger="audio.edges.portaudio"):
        assert pa.refresh_devices() and pa.refresh_devices()
        assert not caplog.records  # a device that stays missing does not fill the log
        fake_pa.plug(usb_mic())
        assert pa.refresh_devices()
    assert [r.getMessage() for r in caplog.records] == [
        "audio devices changed: now 'Built-in Mic', 'USB Speaker', 'USB Mic'"
    ]


def test_backend_without_reinitialisation_is_never_refreshed() -> None:
    pa = PortAudio(SimpleNamespace(query_devices=list))
    assert not pa.can_refresh and not pa.refresh_devices() and not pa.refresh_wanted(5)


# ---- the microphone -------------------------------------------------------------------------------
def test_missing_microphone_is_reported_then_found_after_it_is_plugged_in(fake_pa: FakePortAudio) -> None:
    m = mic("USB Mic")
    with pytest.raises(MicrophoneUnavailable) as info:
        m.open(lambda block: None, lambda detail: None)
    message = str(info.value)
    assert "'USB Mic' not found" in message and "available input devices: 'Built-in Mic'" in message
    assert fake_pa.initializations == 2  # it did look again before giving up

    fake_pa.plug(usb_mic())
    assert "USB Mic" not in fake_pa.names()  # PortAudio has not rescanned yet
    blocks: list[FloatArray] = []
    assert m.open(blocks.append, lambda detail: None) == 16000
    try:
        wait_until(lambda: len(blocks) >= 3)
        assert fake_pa.streams[-1].hardware.name == "USB Mic"
        assert shared(fake_pa).open_streams == 1
    finally:
        m.close()
    assert shared(fake_pa).open_streams == 0 and fake_pa.streams[-1].closed


def test_a_two_channel_48_khz_only_microphone_opens_and_gives_its_first_channel(
    fake_pa: FakePortAudio,
) -> None:
    """A two-microphone HAT as an ALSA ``hw:`` device: stereo only, 48 kHz only."""
    fake_pa.plug(Hardware("2-mic HAT", inputs=2, rate=48000, rates=(48000,), all_channels=True, level=0.25))
    fake_pa._terminate()
    fake_pa._initialize()
    m = mic("2-mic HAT")
    blocks: list[FloatArray] = []
    assert m.open(blocks.append, lambda detail: None) == 48000  # the Listener resamples from here
    try:
        wait_until(lambda: len(blocks) >= 3)
        stream = fake_pa.streams[-1]
        assert stream.hardware.name == "2-mic HAT" and stream.channels == 2
        assert all(b.ndim == 1 and len(b) == 48000 * 30 // 1000 for b in blocks)
        assert all(np.all(b == np.float32(0.25)) for b in blocks)  # the first channel only
    finally:
        m.close()
    assert shared(fake_pa).open_streams == 0


def test_devices_that_report_a_default_rate_they_cannot_run_at_still_open(fake_pa: FakePortAudio) -> None:
    """ALSA ``hw:`` devices may report 44.1 kHz and run only at 48 kHz: the common rates are tried."""
    fake_pa.plug(Hardware("HAT Mic", inputs=1, rate=44100, rates=(48000,)))
    fake_pa.plug(Hardware("HAT Speaker", outputs=2, rate=44100, rates=(48000,)))
    fake_pa._terminate()
    fake_pa._initialize()
    m = mic("HAT Mic")
    assert m.open(lambda block: None, lambda detail: None) == 48000
    m.close()
    queue = PlaybackQueue(rate=48000)
    sink = SoundDeviceSink("HAT Speaker", reopen_interval_s=0.05, backend=fake_pa)
    sink.open(lambda out, t0: queue.render(out), lambda ok, detail: None)
    try:
        assert fake_pa.streams[-1].samplerate == 48000 and fake_pa.streams[-1].active
        assert sink.rate == 48000  # replies are made at the rate it runs at: nothing to convert
    finally:
        sink.close()
    assert shared(fake_pa).open_streams == 0


def test_a_speaker_that_opens_only_with_all_its_channels_plays_on_them(fake_pa: FakePortAudio) -> None:
    """An HDMI output as an ALSA ``hw:`` device: eight channels or nothing."""
    fake_pa.plug(Hardware("HDMI 0", outputs=8, rate=48000, all_channels=True))
    fake_pa._terminate()
    fake_pa._initialize()
    queue, frames = tone_queue(48000, 0.2)
    sink = SoundDeviceSink("HDMI 0", reopen_interval_s=0.05, backend=fake_pa)
    sink.open(lambda out, t0: queue.render(out), lambda ok, detail: None)
    try:
        stream = fake_pa.streams[-1]
        assert stream.hardware.name == "HDMI 0" and stream.channels == 8 and stream.active
        wait_until(lambda: not queue.busy)
    finally:
        sink.close()
    heard = np.concatenate([b for _, b in stream.recorded])
    assert int(np.count_nonzero(heard == 0.5)) == frames  # the whole reply


def test_microphone_does_not_refresh_while_another_stream_is_open(fake_pa: FakePortAudio) -> None:
    builtin = mic("Built-in")
    heard: list[FloatArray] = []
    builtin.open(heard.append, lambda detail: None)
    try:
        fake_pa.plug(usb_mic())
        with pytest.raises(MicrophoneUnavailable, match="available input devices: 'Built-in Mic'"):
            mic("USB Mic").open(lambda block: None, lambda detail: None)
        assert fake_pa.terminate_times == []
        seen = len(heard)
        wait_until(lambda: len(heard) > seen + 3)  # the open microphone was not disturbed
    finally:
        builtin.close()
    usb = mic("USB Mic")
    usb.open(lambda block: None, lambda detail: None)
    usb.close()
    assert len(fake_pa.terminate_times) == 1


async def test_listener_reports_missing_mic_and_opens_it_when_plugged_in_or_replugged(
    fake_pa: FakePortAudio,
) -> None:
    events: list[AudioEvent] = []
    settings = HearingSettings(input_device="USB Mic", reopen_interval_s=0.05)
    listener = Listener(settings, SoundDeviceMicrophone(settings), NoSpeech(), events.append)

    async def problem(ok: bool, after: int = 0) -> AudioDeviceProblem:
        for _ in range(200):
            found = [e for e in events[after:] if isinstance(e, AudioDeviceProblem) and e.ok is ok]
            if found:
                return found[0]
            await asyncio.sleep(0.02)
        raise AssertionError(f"no AudioDeviceProblem(ok={ok}) after event {after}")

    await listener.open()
    try:
        missing = await problem(False)
        assert missing.direction == "input" and "'USB Mic' not found" in missing.detail
        assert "available input devices: 'Built-in Mic'" in missing.detail
        await asyncio.sleep(0.2)
        assert not any(isinstance(e, AudioDeviceProblem) and e.ok for e in events)

        fake_pa.plug(usb_mic())
        await problem(True)
        assert fake_pa.streams[-1].hardware.name == "USB Mic" and fake_pa.streams[-1].active

        # Pulled out, then back in: it re-enumerates as a new device the old list cannot open.
        mark = len(events)
        fake_pa.unplug("USB Mic")
        lost = await problem(False, mark)
        assert "stopped" in lost.detail
        fake_pa.plug(usb_mic())
        await problem(True, mark)
        assert fake_pa.streams[-1].active and fake_pa.plugged(fake_pa.streams[-1].hardware)
    finally:
        await listener.aclose()
    assert shared(fake_pa).open_streams == 0
