"""The speaker sink: a sounddevice OutputStream at the device's native rate, with device watchdog.

The device is chosen by exact name or case-insensitive substring. If the stream dies (device
unplugged: the stream goes inactive or its callback stops), the sink reports the problem, keeps the
playback clock running on a ``ClockedOutputStream`` (audio is dropped, replies still finish on time)
and tries to reopen the device every ``reopen_interval_s``; success is reported too.
Note: PortAudio only rescans devices on re-initialisation, which we do not force (it would also
break any input stream of the process), so a device that re-enumerates under a new index is found by
name on the next successful query.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from audio.sinks import ClockedOutputStream, ProblemFn, RenderFn, StreamSink

_LOGGER = logging.getLogger(__name__)
_STALL_S = 0.5


def _latency_arg(latency: str) -> str | float:
    try:
        return float(latency)
    except ValueError:
        return latency


class SoundDeviceSink(StreamSink):
    """Plays through a PortAudio output device (``backend`` = the sounddevice module or a fake)."""

    def __init__(
        self,
        device: str | None = None,
        *,
        block_ms: int = 10,
        latency: str = "low",
        reopen_interval_s: float = 1.0,
        backend: Any = None,
    ) -> None:
        super().__init__(rate=0, block_ms=block_ms)
        if backend is None:
            import sounddevice

            backend = sounddevice
        self._sd: Any = backend
        self._device = device
        self._latency_setting = latency
        self._reopen_interval = reopen_interval_s
        self._device_name = device or "default output"
        self._index: int | None = None
        self._down = False
        self._closed = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._switch = threading.Lock()

    @property
    def name(self) -> str:
        """The device's name."""
        return self._device_name

    def resolve(self) -> tuple[int, str, int]:
        """(index, name, native rate) of the configured output; raises ``OutputDeviceUnavailable``."""
        from audio.sinks import OutputDeviceUnavailable

        devices = list(self._sd.query_devices())
        outputs = [(i, d) for i, d in enumerate(devices) if int(d.get("max_output_channels", 0)) > 0]
        listing = ", ".join(repr(d["name"]) for _, d in outputs) or "none"
        chosen: tuple[int, dict[str, Any]] | None = None
        if self._device is None:
            default = self._sd.default.device
            index = default[1] if isinstance(default, list | tuple) else default
            chosen = next(((i, d) for i, d in outputs if i == index), outputs[0] if outputs else None)
            if chosen is None:
                raise OutputDeviceUnavailable(f"no audio output device; available outputs: {listing}")
        else:
            wanted = self._device.lower()
            exact = [(i, d) for i, d in outputs if str(d["name"]).lower() == wanted]
            partial = [(i, d) for i, d in outputs if wanted in str(d["name"]).lower()]
            found = exact or partial
            if not found:
                raise OutputDeviceUnavailable(
                    f"output device {self._device!r} not found; available outputs: {listing}"
                )
            chosen = found[0]
        index, info = chosen
        return index, str(info["name"]), int(float(info.get("default_samplerate", 48000)))

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Open the device at its native rate and start the watchdog."""
        index, name, rate = self.resolve()
        self._index, self._device_name = index, name
        if self._rate == 0:
            self._rate = rate
        self._closed.clear()
        super().open(render, report)
        _LOGGER.info("speaker output: %s at %d Hz, latency %.0f ms", name, self._rate, self._latency * 1000)
        self._watchdog = threading.Thread(target=self._watch, name="speaker-watchdog", daemon=True)
        self._watchdog.start()

    def close(self) -> None:
        """Stop the watchdog and the stream."""
        self._closed.set()
        if self._watchdog is not None:
            self._watchdog.join(timeout=2.0)
            self._watchdog = None
        with self._switch:
            super().close()

    def _make_stream(self) -> Any:
        kwargs: dict[str, Any] = {
            "device": self._index,
            "samplerate": self._rate,
            "blocksize": self.blocksize,
            "dtype": "float32",
            "latency": _latency_arg(self._latency_setting),
            "callback": self._callback,
        }
        try:
            return self._sd.OutputStream(channels=1, **kwargs)
        except Exception as err:  # some devices only open in stereo
            _LOGGER.debug("mono output failed (%s), trying stereo", err)
            return self._sd.OutputStream(channels=2, **kwargs)

    def _healthy(self) -> bool:
        stream = self._stream
        if stream is None or not bool(getattr(stream, "active", False)):
            return False
        stall = max(_STALL_S, 5 * self._block_ms / 1000 + self._latency)
        return time.monotonic() - self.last_callback < stall

    def _watch(self) -> None:
        next_try = 0.0
        while not self._closed.wait(0.1):
            if not self._down:
                if self._healthy():
                    continue
                self._fail_over()
                next_try = time.monotonic() + self._reopen_interval
            elif time.monotonic() >= next_try:
                next_try = time.monotonic() + self._reopen_interval
                self._try_reopen()

    def _fail_over(self) -> None:
        detail = f"output device {self._device_name!r} stopped (unplugged?); reopening"
        _LOGGER.warning("%s", detail)
        with self._switch:
            StreamSink.close(self)
            self._down = True
            self._stream = ClockedOutputStream(self._rate, self.blocksize, self._callback)
            self._stream.start()
        self._report(False, detail)

    def _try_reopen(self) -> None:
        try:
            index, name, _ = self.resolve()
            self._index, self._device_name = index, name
            with self._switch:
                fallback = self._stream
                stream = self._make_stream()
                if fallback is not None:
                    fallback.stop()
                self._stream = stream
                self._latency = float(getattr(stream, "latency", 0.0) or 0.0)
                self.last_callback = time.monotonic()
                stream.start()
                self._down = False
        except Exception as err:
            _LOGGER.debug("reopen of %r failed: %s", self._device_name, err)
            with self._switch:
                if self._stream is None or not getattr(self._stream, "active", False):
                    self._stream = ClockedOutputStream(self._rate, self.blocksize, self._callback)
                    self._stream.start()
            return
        _LOGGER.info("output device %r is back", self._device_name)
        self._report(True, f"output device {self._device_name!r} reopened")
