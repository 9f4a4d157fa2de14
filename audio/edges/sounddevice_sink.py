"""The speaker sink: a sounddevice OutputStream at the device's native rate, with device watchdog.

The device is chosen by exact name or case-insensitive substring. If the stream dies (device
unplugged: the stream goes inactive or its callback stops), the sink reports the problem, keeps the
playback clock running on a ``ClockedOutputStream`` (audio is dropped, replies still finish on time)
and tries to reopen the device every ``reopen_interval_s``; success is reported too.

PortAudio only rescans devices when it is re-initialised (``audio.edges.portaudio``). A reopen attempt
that cannot find or open the device refreshes the device list -- only while no stream of the process
is open (re-initialising would kill it: while the microphone is open the speaker waits for it to
close) -- and tries once more, so a speaker plugged in later or re-enumerated as a new device is
found without restarting the daemon. The stream is counted by the ``PortAudio`` helper while open.

The output stream stays open while idle (it plays silence), which would block every refresh the
microphone needs. So the watchdog cooperates: when a refresh was requested
(``PortAudio.refresh_wanted``) and nothing is playing (no reply open at the output for
``_QUIET_S``), it stops rendering, closes the stream (``stop`` plays out what is buffered), lets the
refresh happen and reopens. A reply queued meanwhile starts later by the time that takes (a refresh
plus a device open); audio is never cut. If the device cannot be reopened afterwards it is handled
like an unplugged one. Where the sound hardware can be read (Linux) this happens only after
something was plugged in or out, not every time a missing microphone is retried.

``wait_for_device`` (the daemon): a device missing at start is not an error but a device problem:
the sink starts on the software clock at ``FALLBACK_RATE`` (replies finish on time, unheard),
reports it, and the watchdog opens the device once it is plugged in; a device that is there but
will not open (busy, or refusing every rate and layout) is treated the same. Without it (``robot-face
say``, tests) ``open`` raises ``OutputDeviceUnavailable`` with the list of outputs.

The playback rate is fixed at the first open (replies are resampled to it when synthesised). A
device opened later that will not run at it (an ALSA ``hw:`` device of a 44.1 kHz USB DAC after a
start at 48 kHz; PortAudio's ``plug`` devices convert by themselves) is opened at its own rate and
the sink converts on the fly (``audio.edges.rate_adapter.PullResampler``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from audio.edges.portaudio import COMMON_RATES, PortAudio, shared
from audio.edges.rate_adapter import PullResampler
from audio.edges.stream_sink import (
    ClockedOutputStream,
    OutputDeviceUnavailable,
    ProblemFn,
    RenderFn,
    StreamSink,
)
from audio.edges.wav import FloatArray
from audio.speaking.playback import PlaybackMark

_LOGGER = logging.getLogger(__name__)
_STALL_S = 0.5
_QUIET_S = 0.3
"""Seconds without an open reply before the sink gives way to a requested device refresh."""
FALLBACK_RATE = 48000
"""Output rate (Hz) when the device was missing at start: what USB speakers and HDMI take."""


@dataclass(frozen=True, slots=True)
class OutputInfo:
    """An output device as PortAudio lists it."""

    index: int
    name: str
    rate: int
    """Its reported default rate, Hz."""
    channels: int
    """Its most output channels."""


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
        portaudio: PortAudio | None = None,
        wait_for_device: bool = False,
    ) -> None:
        super().__init__(rate=0, block_ms=block_ms)
        self.wait_for_device = wait_for_device
        """A device missing at ``open`` is reported and waited for instead of raised."""
        if backend is None:
            import sounddevice

            backend = sounddevice
        self._sd: Any = backend
        self._pa = portaudio or shared(backend)
        self._device = device
        self._latency_setting = latency
        self._reopen_interval = reopen_interval_s
        self._device_name = device or "default output"
        self._index: int | None = None
        self._output: OutputInfo | None = None
        self._converter: PullResampler | None = None
        self._down = False
        self._closed = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._switch = threading.Lock()
        self._render_gate = threading.Lock()
        self._held = False
        self._open_replies: set[int] = set()
        self._quiet_since = time.monotonic()

    @property
    def name(self) -> str:
        """The device's name."""
        return self._device_name

    def resolve(self) -> OutputInfo:
        """The configured output as PortAudio lists it; raises ``OutputDeviceUnavailable``."""
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
        return OutputInfo(
            index,
            str(info["name"]),
            int(float(info.get("default_samplerate", 48000))),
            int(info.get("max_output_channels", 2)),
        )

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Open the device at its native rate and start the watchdog. A missing device gets one
        device-list refresh (if allowed); then ``OutputDeviceUnavailable`` is raised or, with
        ``wait_for_device``, reported while the sink runs on the software clock. A device that is
        listed but will not open is handled the same."""
        missing = ""
        with self._pa.lock:
            try:
                found = self._pa.with_refresh(self.resolve, "the speaker", OutputDeviceUnavailable)
            except OutputDeviceUnavailable as err:
                if not self.wait_for_device:
                    raise
                missing = str(err)
            self._closed.clear()
            self._held = False
            self._open_replies.clear()
            self._quiet_since = time.monotonic()
            if not missing:
                self._output = found
                self._index, self._device_name = found.index, found.name
                self._down = False
                try:
                    super().open(render, report)
                except Exception as err:
                    self._release_stream()
                    if not self.wait_for_device:
                        raise OutputDeviceUnavailable(str(err)) from err
                    # Present but busy or refusing every rate and layout: wait for it as if missing.
                    missing = str(err)
            if missing:
                self._rate = self._rate or FALLBACK_RATE
                self._render, self._report = render, report
                self._fall_back()  # no watchdog yet: nothing else touches the stream
        if missing:
            detail = f"{missing}; waiting for it (replies are not heard until it is plugged in)"
            _LOGGER.warning("speaker: %s", detail)
            report(False, detail)
        else:
            _LOGGER.info(
                "speaker output: %s at %d Hz, latency %.0f ms",
                self._device_name,
                self._rate,
                self._latency * 1000,
            )
        self._watchdog = threading.Thread(target=self._watch, name="speaker-watchdog", daemon=True)
        self._watchdog.start()

    def close(self) -> None:
        """Stop the watchdog and the stream."""
        self._closed.set()
        if self._watchdog is not None:
            self._watchdog.join(timeout=2.0)
            self._watchdog = None
        with self._switch:
            self._release_stream()

    def _release_stream(self) -> None:
        """Stop and close the current stream (device or clocked) and stop counting it."""
        stream, self._stream = self._stream, None
        if stream is not None:
            self._pa.close_stream(stream)

    def _make_stream(self) -> Any:
        """Open the device at the playback rate, else at its own rate or a common one with
        conversion. The first open (no playback rate yet) sets the playback rate to the one the
        device opened at."""
        errors: list[str] = []
        native = self._output.rate if self._output else 0
        # Mono, else stereo (some devices only open so), else all channels (an HDMI ``hw:`` device).
        layouts = dict.fromkeys((1, 2, self._output.channels if self._output else 2))
        for rate in dict.fromkeys(r for r in (self._rate, native, *COMMON_RATES) if r > 0):
            convert = self._rate not in (0, rate)
            for channels in layouts:
                kwargs: dict[str, Any] = {
                    "device": self._index,
                    "samplerate": rate,
                    "channels": channels,
                    "blocksize": max(16, int(rate * self._block_ms / 1000)),
                    "dtype": "float32",
                    "latency": _latency_arg(self._latency_setting),
                    "callback": self._converting_callback if convert else self._callback,
                }
                try:
                    stream = self._pa.open_stream(functools.partial(self._sd.OutputStream, **kwargs))
                except Exception as err:
                    errors.append(f"{rate} Hz {channels} ch: {err}")
                    continue
                self._converter = PullResampler(self._rate, rate) if convert else None
                self._rate = self._rate or rate  # the first open sets the playback rate
                if convert:
                    _LOGGER.info(
                        "output device %r does not take %d Hz: playing at %d Hz, converted",
                        self._device_name,
                        self._rate,
                        rate,
                    )
                return stream
        raise RuntimeError(f"cannot open output device {self._device_name!r}: {'; '.join(errors)}")

    def _open_device(self) -> Any:
        """Find the device and create (not start) its stream; if that fails, refresh the device
        list (when allowed) and try once more. The caller holds ``_switch``."""

        def attempt() -> Any:
            self._output = self.resolve()
            self._index, self._device_name = self._output.index, self._output.name
            return self._make_stream()

        return self._pa.with_refresh(attempt, f"output device {self._device_name!r}")

    def _start_device_stream(self, stream: Any) -> None:
        """Make ``stream`` current and start it (closing it again if it will not start)."""
        self._stream = stream
        self._latency = float(getattr(stream, "latency", 0.0) or 0.0)
        self.last_callback = time.monotonic()
        try:
            stream.start()
        except Exception:
            self._release_stream()
            raise

    # ---- audio thread ---------------------------------------------------------------------------
    def _callback(
        self, outdata: np.ndarray, frames: int, time_info: Any, status: Any, delay_s: float = 0.0
    ) -> None:
        """Render as usual, or play silence without rendering while the stream is being swapped."""
        with self._render_gate:
            if self._held:
                outdata.fill(0.0)
                self.last_callback = time.monotonic()
                return
            super()._callback(outdata, frames, time_info, status, delay_s)

    def _converting_callback(self, outdata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        """The device runs at another rate: render at the playback rate and convert."""
        converter = self._converter
        if converter is None:  # swapped meanwhile; this stream is being replaced
            outdata.fill(0.0)
            return

        def produce(n: int) -> FloatArray:
            block = np.zeros((n, 1), dtype=np.float32)
            self._callback(block, n, time_info, status, converter.pending_s)
            return block[:, 0]

        outdata[:] = converter.pull(frames, produce)[:, None]

    def _after_block(self, block: FloatArray, marks: list[PlaybackMark]) -> None:
        for mark in marks:
            if mark.kind == "reply_started":
                self._open_replies.add(mark.reply)
            elif mark.kind == "reply_finished":
                self._open_replies.discard(mark.reply)
        self._quiet_since = time.monotonic()

    def _idle(self) -> bool:
        """Nothing is playing: no reply open at the output for ``_QUIET_S``."""
        return not self._open_replies and time.monotonic() - self._quiet_since >= _QUIET_S

    # ---- watchdog -------------------------------------------------------------------------------
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
                    if self._pa.refresh_wanted(own_streams=1) and self._idle():
                        self._give_way_for_refresh()
                    continue
                self._fail_over()
                next_try = time.monotonic() + self._reopen_interval
            elif time.monotonic() >= next_try:
                next_try = time.monotonic() + self._reopen_interval
                self._try_reopen()

    def _give_way_for_refresh(self) -> None:
        """Someone needs a device refresh and we are idle: pause rendering, close our stream, let the
        refresh happen, reopen. A reply queued meanwhile waits (it is delayed, never cut)."""
        detail = ""
        with self._switch:
            if self._closed.is_set():
                return
            with self._render_gate:
                if not self._idle():
                    return
                self._held = True
            try:
                self._release_stream()  # stop() plays out what is buffered (silence) first
                self._pa.refresh_devices()
                self._start_device_stream(self._open_device())
            except Exception as err:
                detail = f"output device {self._device_name!r} lost after a device refresh ({err}); reopening"
                self._fall_back()
            finally:
                with self._render_gate:
                    self._held = False
        if detail:
            _LOGGER.warning("%s", detail)
            self._report(False, detail)

    def _fail_over(self) -> None:
        detail = f"output device {self._device_name!r} stopped (unplugged?); reopening"
        _LOGGER.warning("%s", detail)
        with self._switch:
            self._fall_back()
        self._report(False, detail)

    def _fall_back(self) -> None:
        """Drop the device stream and keep the playback clock running in software (``_switch`` held)."""
        self._release_stream()
        self._down = True
        self._stream = ClockedOutputStream(self._rate, self.blocksize, self._callback)
        self._stream.start()

    def _try_reopen(self) -> None:
        with self._switch:
            if self._closed.is_set():
                return
            try:
                stream = self._open_device()
            except Exception as err:
                _LOGGER.debug("reopen of %r failed: %s", self._device_name, err)
                if self._stream is None or not getattr(self._stream, "active", False):
                    self._release_stream()
                    self._stream = ClockedOutputStream(self._rate, self.blocksize, self._callback)
                    self._stream.start()
                return
            fallback, self._stream = self._stream, None
            if fallback is not None:
                fallback.stop()
            try:
                self._start_device_stream(stream)
            except Exception as err:
                _LOGGER.debug("reopened %r but it will not start: %s", self._device_name, err)
                self._fall_back()
                return
            self._down = False
        _LOGGER.info("output device %r is back", self._device_name)
        self._report(True, f"output device {self._device_name!r} reopened")
