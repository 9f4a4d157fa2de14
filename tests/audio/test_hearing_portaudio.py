"""Device-list refresh (audio.portaudio): hot-plugged microphones and speakers are found without a restart.

``FakePortAudio`` is a fake ``sounddevice`` module that behaves like PortAudio where it matters: the
device list is frozen at ``_initialize()`` (a device plugged into ``hardware`` later only shows up
after ``_terminate()`` + ``_initialize()``), a stale list entry whose hardware is gone cannot be
opened, streams pull/push their callbacks in real time from their own thread and die when their
device is unplugged, and ``_terminate()`` kills every stream that is not closed (counted in
``streams_open_at_terminate``, which every test checks stays 0). ``signature()`` stands in for
``/proc/asound/cards``: it changes whenever a device is plugged in or out.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from audio.capture import MicrophoneUnavailable, SoundDeviceMicrophone
from audio.events import AudioDeviceProblem, AudioEvent
from audio.hearing_settings import HearingSettings
from audio.listener import Listener
from audio.playback import PlaybackMark, PlaybackQueue, QueuedPiece
from audio.portaudio import PortAudio, shared
from audio.sinks import OutputDeviceUnavailable, StreamTime
from audio.sounddevice_sink import SoundDeviceSink
from audio.stt import Transcription
from audio.wav import FloatArray


# ---- the fake PortAudio ---------------------------------------------------------------------------
class FakePortAudioError(Exception):
    """Like sounddevice.PortAudioError."""


@dataclass(eq=False)
class Hardware:
    """A physical device (identity matters: a re-plugged device is a new ``Hardware``)."""

    name: str
    inputs: int = 0
    outputs: int = 0
    rate: int = 48000
    level: float = 0.1
    """What an input device "hears" (constant sample value)."""
    rates: tuple[int, ...] | None = None
    """The only rates it opens at (an ALSA ``hw:`` device); None = any (a ``plug`` device converts)."""
    all_channels: bool = False
    """Opens only with all its channels (an ALSA ``hw:`` device), not fewer."""
    busy: bool = False
    """Held by another program (an ALSA ``hw:`` device opens once): listed, but will not open."""


class FakeStream:
    """Input or output stream with sounddevice's API, driven by a real-time thread."""

    def __init__(
        self,
        owner: FakePortAudio,
        kind: str,
        *,
        device: int | None = None,
        samplerate: float,
        channels: int = 1,
        blocksize: int = 0,
        callback: Callable[..., None],
        finished_callback: Callable[[], None] | None = None,
        **_: Any,
    ) -> None:
        if not owner.initialized:
            raise FakePortAudioError("PortAudio not initialized [PaErrorCode -10000]")
        if device is None:
            device = owner.default.device[0 if kind == "input" else 1]
        if device is None or not 0 <= device < len(owner.visible):
            raise FakePortAudioError(f"Error opening {kind} stream: Invalid device [PaErrorCode -9996]")
        hw = owner.visible[device]
        if not owner.plugged(hw):
            raise FakePortAudioError(f"Error opening {kind} stream: Device unavailable [PaErrorCode -9985]")
        if hw.busy:
            raise FakePortAudioError(f"Error opening {kind} stream: Device unavailable [PaErrorCode -9985]")
        if channels > (hw.inputs if kind == "input" else hw.outputs):
            raise FakePortAudioError("Invalid number of channels [PaErrorCode -9998]")
        if hw.all_channels and channels != (hw.inputs if kind == "input" else hw.outputs):
            raise FakePortAudioError("Invalid number of channels [PaErrorCode -9998]")
        if hw.rates is not None and int(samplerate) not in hw.rates:
            raise FakePortAudioError("Invalid sample rate [PaErrorCode -9997]")
        self.owner, self.kind, self.hardware = owner, kind, hw
        self.samplerate = float(samplerate)
        self.channels = channels
        self.blocksize = blocksize or int(samplerate // 100)
        self.latency = 0.01
        self.closed = self.killed = False
        self.recorded: list[tuple[float, np.ndarray]] = []
        self._callback, self._finished = callback, finished_callback
        self._active = False
        self._state = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        owner.streams.append(self)

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        if self.closed or self.killed:
            raise FakePortAudioError("Stream is closed [PaErrorCode -9988]")
        self._active = True
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period = self.blocksize / self.samplerate
        next_t = time.monotonic()
        while not self._stop.is_set():
            if self.killed or not self.owner.plugged(self.hardware):
                self._end()  # the device vanished: the stream dies
                return
            now = time.monotonic()
            if self.kind == "input":
                data = np.full((self.blocksize, self.channels), self.hardware.level, np.float32)
                data[:, 1:] = -1.0  # other channels differ (a playback reference, another mic)
                self._callback(data, self.blocksize, None, SimpleNamespace(input_overflow=False))
            else:
                out = np.zeros((self.blocksize, self.channels), np.float32)
                self._callback(out, self.blocksize, StreamTime(now, now + self.latency), 0)
                self.recorded.append((time.time() + self.latency, out[:, 0].copy()))
            next_t += period
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def _end(self) -> None:
        with self._state:
            was_active, self._active = self._active, False
        if was_active and self._finished is not None:
            self._finished()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        self._end()

    def close(self) -> None:
        self.stop()
        if self.killed:
            raise FakePortAudioError("PortAudio not initialized [PaErrorCode -10000]")
        self.closed = True


class FakePortAudio:
    """Module-like fake: ``query_devices``, ``default``, ``InputStream``, ``OutputStream``,
    ``_initialize``/``_terminate``; ``hardware`` is what is physically plugged in."""

    PortAudioError = FakePortAudioError

    def __init__(self, hardware: list[Hardware]) -> None:
        self.hardware = list(hardware)
        self.visible: list[Hardware] = []
        self.default = SimpleNamespace(device=[None, None])
        self.initialized = 0
        self.initializations = 0
        self.terminate_times: list[float] = []
        self.streams_open_at_terminate = 0
        self.streams: list[FakeStream] = []
        self._initialize()

    def plugged(self, hw: Hardware) -> bool:
        return any(h is hw for h in self.hardware)

    def signature(self) -> str:
        """What is plugged in (like ``/proc/asound/cards``: a re-plugged device reads differently)."""
        return " ".join(f"{h.name}@{id(h)}" for h in self.hardware)

    def plug(self, hw: Hardware) -> Hardware:
        self.hardware.append(hw)
        return hw

    def unplug(self, name: str) -> None:
        self.hardware = [h for h in self.hardware if h.name != name]

    def _initialize(self) -> None:
        self.initialized += 1
        self.initializations += 1
        self.visible = list(self.hardware)  # PortAudio enumerates here, and only here
        ins = [i for i, h in enumerate(self.visible) if h.inputs]
        outs = [i for i, h in enumerate(self.visible) if h.outputs]
        self.default.device = [ins[0] if ins else -1, outs[0] if outs else -1]

    def _terminate(self) -> None:
        if not self.initialized:
            raise FakePortAudioError("PortAudio not initialized")
        self.initialized -= 1
        self.terminate_times.append(time.time())
        for stream in self.streams:
            if not stream.closed and not stream.killed:
                self.streams_open_at_terminate += 1
                stream.killed = True  # Pa_Terminate closes it under its owner's feet
        self.visible = []

    def query_devices(self, device: int | None = None, kind: str | None = None) -> Any:
        if not self.initialized:
            raise FakePortAudioError("PortAudio not initialized")
        infos = [
            {
                "name": h.name,
                "max_input_channels": h.inputs,
                "max_output_channels": h.outputs,
                "default_samplerate": float(h.rate),
            }
            for h in self.visible
        ]
        if device is None and kind is None:
            return infos
        if device is None:
            device = self.default.device[0 if kind == "input" else 1]
        info = infos[device]
        if kind == "input" and not info["max_input_channels"]:
            raise ValueError(f"No input device matching {device!r}")
        return info

    def InputStream(self, **kwargs: Any) -> FakeStream:
        return FakeStream(self, "input", **kwargs)

    def OutputStream(self, **kwargs: Any) -> FakeStream:
        return FakeStream(self, "output", **kwargs)

    def names(self) -> list[str]:
        return [h.name for h in self.visible]


@pytest.fixture
def fake_pa(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePortAudio]:
    """A fake PortAudio with a built-in mic and a speaker, installed as ``sounddevice``."""
    fake = FakePortAudio(
        [Hardware("Built-in Mic", inputs=2, rate=16000), Hardware("USB Speaker", outputs=2, rate=48000)]
    )
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    shared(fake).min_interval_s = 0.0  # tests control the rate limit explicitly
    shared(fake).hardware = fake.signature
    yield fake
    assert fake.streams_open_at_terminate == 0, "PortAudio was terminated under an open stream"


def usb_mic() -> Hardware:
    return Hardware("USB Mic", inputs=1, rate=16000)


def wait_until(pred: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def mic(name: str) -> SoundDeviceMicrophone:
    return SoundDeviceMicrophone(HearingSettings(input_device=name))


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
    with caplog.at_level("INFO", logger="audio.portaudio"):
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
    queue, frames = _tone_queue(48000, 0.2)
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


class _NoSpeech:
    def load(self) -> None: ...

    def transcribe(self, samples: FloatArray, speech_ratio: float | None = None) -> Transcription:
        raise AssertionError("nothing should be transcribed")

    def set_language(self, lang: str) -> None: ...


async def test_listener_reports_missing_mic_and_opens_it_when_plugged_in_or_replugged(
    fake_pa: FakePortAudio,
) -> None:
    events: list[AudioEvent] = []
    settings = HearingSettings(input_device="USB Mic", reopen_interval_s=0.05)
    listener = Listener(settings, SoundDeviceMicrophone(settings), _NoSpeech(), events.append)

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


# ---- the speaker ----------------------------------------------------------------------------------
def _tone_queue(rate: int, seconds: float, level: float = 0.5) -> tuple[PlaybackQueue, int]:
    queue = PlaybackQueue(rate=rate, volume=1.0)
    frames = int(rate * seconds)
    piece = QueuedPiece("r", 1, np.full(frames, level, np.float32), 0, 5, ())
    assert queue.push(piece, queue.generation) and queue.push_end("r", 1, queue.generation)
    return queue, frames


def _open_sink(
    fake: FakePortAudio, render: Callable[[FloatArray, float], list[PlaybackMark]]
) -> tuple[SoundDeviceSink, list[tuple[bool, str]]]:
    reports: list[tuple[bool, str]] = []
    sink = SoundDeviceSink("USB Speaker", reopen_interval_s=0.05, backend=fake)
    sink.open(render, lambda ok, detail: reports.append((ok, detail)))
    return sink, reports


def _played(fake: FakePortAudio) -> list[tuple[float, np.ndarray]]:
    blocks = [b for s in fake.streams if s.kind == "output" for b in s.recorded]
    return sorted(blocks, key=lambda b: b[0])


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
    queue, frames = _tone_queue(48000, 0.6)
    sink, _ = _open_sink(fake_pa, lambda out, t0: queue.render(out))
    try:
        wait_until(lambda: any(b.any() for _, b in _played(fake_pa)))  # the reply is playing
        with pytest.raises(MicrophoneUnavailable):
            mic("USB Mic").open(lambda block: None, lambda detail: None)
        time.sleep(0.3)
        assert fake_pa.terminate_times == []  # not while playing
        wait_until(lambda: len(fake_pa.terminate_times) == 1)
        wait_until(lambda: len(_played(fake_pa)) > 0 and not queue.busy)
    finally:
        sink.close()
    played = _played(fake_pa)
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
        fake_pa.plug(Hardware("USB Speaker", outputs=2, rate=48000))
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
        piece = QueuedPiece("r", 1, tone, 0, 5, ())
        assert queue.push(piece, queue.generation) and queue.push_end("r", 1, queue.generation)
        wait_until(lambda: not queue.busy)
        time.sleep(0.1)
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

    queue, frames = _tone_queue(48000, 0.3)
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
        piece = QueuedPiece("r2", 1, np.full(frames, 0.25, np.float32), 0, 5, ())
        assert queue.push(piece, queue.generation) and queue.push_end("r2", 1, queue.generation)
        wait_until(lambda: not queue.busy)
        time.sleep(0.1)
    finally:
        sink.close()
    heard = np.concatenate([b for _, b in speaker.recorded])
    assert np.count_nonzero(np.abs(heard) > 0.1) >= frames * 0.9  # the second reply was heard whole
    assert shared(fake_pa).open_streams == 0


async def test_open_microphone_gives_way_once_a_missing_speaker_is_plugged_in(
    fake_pa: FakePortAudio, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Awake (microphone open), the speaker missing since start: the daemon's sink waits on the
    software clock; only when a speaker is plugged in does the microphone pause for the rescan."""
    monkeypatch.setattr(Listener, "watch_interval_s", 0.05)
    events: list[AudioEvent] = []
    settings = HearingSettings(input_device="Built-in", reopen_interval_s=0.05)
    listener = Listener(settings, SoundDeviceMicrophone(settings), _NoSpeech(), events.append)
    await listener.open()
    reports: list[tuple[bool, str]] = []
    queue, _ = _tone_queue(48000, 0.3)
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
        for _ in range(150):
            if any(ok for ok, _ in reports):
                break
            await asyncio.sleep(0.02)
        assert reports[-1] == (True, "output device 'Desk Speaker' reopened")
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
