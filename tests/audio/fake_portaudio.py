"""A fake ``sounddevice`` module that behaves like PortAudio where it matters (gpiozero's
``pins/mock.py`` for audio devices).

The device list is frozen at ``_initialize()`` (a device plugged into ``hardware`` later only shows
up after ``_terminate()`` + ``_initialize()``), a stale list entry whose hardware is gone cannot be
opened, streams pull/push their callbacks in real time from their own thread and die when their
device is unplugged, and ``_terminate()`` kills every stream that is not closed (counted in
``streams_open_at_terminate``, which the ``fake_pa`` fixture checks stays 0). ``signature()`` stands
in for ``/proc/asound/cards``: it changes whenever a device is plugged in or out. ``Hardware``
models ALSA ``hw:`` devices too: fixed rates, all channels only, busy. Output streams report their
device's ``latency`` and record every block with the unix time it is heard (``recorded()``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from audio.edges.capture import SoundDeviceMicrophone
from audio.edges.portaudio import shared
from audio.edges.sinks import StreamTime
from audio.edges.wav import FloatArray
from audio.hearing.settings import HearingSettings
from audio.hearing.stt import CancelToken, Transcription
from audio.speaking.playback import PlaybackQueue, QueuedPiece


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
    latency: float = 0.01
    """Output latency, s: a block is heard this long after its callback (``stream.latency``)."""


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
        self.latency = hw.latency
        self.closed = self.killed = False
        self.recorded: list[tuple[float, np.ndarray]] = []
        """Output: (unix time its first sample is heard, mono block) for every block played."""
        self.called: list[float] = []
        """Unix time each output callback began (``recorded[i]`` came from ``called[i]``)."""
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
                self.called.append(time.time())
                self._callback(out, self.blocksize, StreamTime(now, now + self.latency), 0)
                # Handed to the device when the callback returns, heard ``latency`` later.
                self.recorded.append((time.time() + self.latency, out[:, 0].copy()))
            next_t += period
            if self.kind == "output" and next_t < time.monotonic() - 0.2:
                next_t = time.monotonic()  # far behind (machine stalled): the DAC underran, resync
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

    def recorded(self) -> list[tuple[float, np.ndarray]]:
        """Every block played by every output stream, in the order it was heard."""
        blocks = [b for s in self.streams if s.kind == "output" for b in s.recorded]
        return sorted(blocks, key=lambda b: b[0])

    def first_call_after(self, ts: float) -> tuple[float, float]:
        """(began, heard) of the first output callback that began at or after unix time ``ts``: the
        first block a change made at ``ts`` can reach, wherever a busy machine delayed its thread."""
        calls = [
            (called, heard)
            for s in self.streams
            if s.kind == "output"
            for called, (heard, _) in zip(s.called, s.recorded, strict=False)
            if called >= ts
        ]
        if not calls:
            raise AssertionError(f"no output callback began after {ts}")
        return min(calls)


def shared_fake(hardware: list[Hardware]) -> FakePortAudio:
    """A ``FakePortAudio`` whose shared ``PortAudio`` helper refreshes whenever its hardware changed
    (no rate limit; ``signature()`` stands in for the sound cards)."""
    fake = FakePortAudio(hardware)
    shared(fake).min_interval_s = 0.0  # tests control the rate limit explicitly
    shared(fake).hardware = fake.signature
    return fake


def usb_mic() -> Hardware:
    return Hardware("USB Mic", inputs=1, rate=16000)


def usb_speaker(latency: float = 0.01) -> Hardware:
    """A 48 kHz stereo USB speaker (a new one each call: a re-plugged device is a new ``Hardware``)."""
    return Hardware("USB Speaker", outputs=2, rate=48000, latency=latency)


def wait_until(pred: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def mic(name: str) -> SoundDeviceMicrophone:
    return SoundDeviceMicrophone(HearingSettings(input_device=name))


class NoSpeech:
    """A transcriber for tests where nothing may be transcribed."""

    def load(self) -> None: ...

    def transcribe(
        self, samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        raise AssertionError("nothing should be transcribed")

    def set_language(self, lang: str) -> None: ...


def tone_queue(rate: int, seconds: float, level: float = 0.5) -> tuple[PlaybackQueue, int]:
    """A playback queue holding one reply: a constant ``level`` for ``seconds``."""
    queue = PlaybackQueue(rate=rate, volume=1.0)
    frames = int(rate * seconds)
    piece = QueuedPiece("r", 1, np.full(frames, level, np.float32), 0, 5, ())
    assert queue.push(piece, queue.generation) and queue.push_end("r", 1, queue.generation)
    return queue, frames
