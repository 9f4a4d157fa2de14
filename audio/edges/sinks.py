"""Audio sinks: the speaker (sounddevice), WAV files and null, all pulled by one callback path.

Every sink drives the same ``_callback(outdata, frames, time_info, status)`` (sounddevice's API): the
sounddevice sink from PortAudio's thread, the WAV and null sinks from ``ClockedOutputStream``, a
software clock that pulls blocks in real time exactly like a sound card. The callback asks the
``RenderFn`` for a block and the unix time its first frame reaches the output.

``WavSink`` writes every reply to ``<wav_dir>/<say-id>.wav`` (from its first to its last sample,
silence inside the reply included; a stopped reply is cut where it stopped).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from audio.edges.wav import FloatArray, to_pcm16
from audio.speaking.playback import PlaybackMark
from audio.speaking.settings import SINKS, SpeakingSettings

_LOGGER = logging.getLogger(__name__)

RenderFn = Callable[[FloatArray, float], list[PlaybackMark]]
"""Fill a mono block; the float is the unix time its first frame reaches the output."""
ProblemFn = Callable[[bool, str], None]
"""Report an output device failure (False) or recovery (True) with a detail; any thread."""


class OutputDeviceUnavailable(RuntimeError):
    """The configured output device does not exist (the message lists the available outputs)."""


class AudioSink(Protocol):
    """Where speech goes. ``open`` starts pulling audio from ``render``; ``close`` stops."""

    @property
    def name(self) -> str:
        """Human-readable sink/device name."""
        ...

    @property
    def rate(self) -> int:
        """Output sample rate in Hz (valid after ``open``)."""
        ...

    @property
    def latency(self) -> float:
        """Seconds from a block being rendered until its first frame is heard (estimate)."""
        ...

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Start the output; raises ``OutputDeviceUnavailable`` when the device is missing."""
        ...

    def close(self) -> None:
        """Stop the output and release it."""
        ...


@dataclass(frozen=True, slots=True)
class StreamTime:
    """The ``time_info`` a callback gets (sounddevice field names; stream clock seconds)."""

    currentTime: float
    outputBufferDacTime: float
    inputBufferAdcTime: float = 0.0


class ClockedOutputStream:
    """A software output stream: pulls ``callback`` block by block at ``samplerate`` in real time.

    Same constructor/callback API as ``sounddevice.OutputStream`` (subset); what the callback writes
    is handed to ``on_block`` (or dropped).
    """

    def __init__(
        self,
        samplerate: float,
        blocksize: int,
        callback: Callable[[np.ndarray, int, Any, Any], None],
        channels: int = 1,
        latency: float = 0.0,
        **_: Any,
    ) -> None:
        self.samplerate = float(samplerate)
        self.blocksize = int(blocksize)
        self.channels = channels
        self.latency = float(latency)
        self._callback = callback
        self._running = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        """True while the clock thread is pulling."""
        return self._running.is_set()

    def start(self) -> None:
        """Start pulling blocks."""
        if self._thread is not None:
            return
        self._running.set()
        self._thread = threading.Thread(target=self._run, name="clocked-output", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop pulling (joins the clock thread)."""
        self._running.clear()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)

    abort = stop

    def close(self) -> None:
        """Stop and release."""
        self.stop()

    def _run(self) -> None:
        period = self.blocksize / self.samplerate
        block = np.zeros((self.blocksize, self.channels), dtype=np.float32)
        deadline = time.monotonic()
        while self._running.is_set():
            now = time.monotonic()
            try:
                self._callback(block, self.blocksize, StreamTime(now, now + self.latency), 0)
            except Exception:
                _LOGGER.exception("output callback failed")
            deadline += period
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.2:
                deadline = time.monotonic()  # we fell far behind (machine stalled): resync


class StreamSink:
    """Base of all sinks: owns a callback-driven stream and turns its callbacks into rendered blocks."""

    def __init__(self, rate: int, block_ms: int) -> None:
        self._rate = rate
        self._block_ms = block_ms
        self._render: RenderFn | None = None
        self._report: ProblemFn = lambda ok, detail: None
        self._stream: Any = None
        self._latency = 0.0
        self._mono = np.zeros(0, dtype=np.float32)
        self.last_callback = 0.0

    @property
    def name(self) -> str:
        """Sink name."""
        return type(self).__name__

    @property
    def rate(self) -> int:
        """Output sample rate in Hz."""
        return self._rate

    @property
    def latency(self) -> float:
        """Output latency estimate in seconds."""
        return self._latency

    @property
    def blocksize(self) -> int:
        """Frames per callback block."""
        return max(16, int(self._rate * self._block_ms / 1000))

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Start pulling from ``render``."""
        self._render = render
        self._report = report
        self.last_callback = time.monotonic()
        self._stream = self._make_stream()
        self._latency = float(getattr(self._stream, "latency", 0.0) or 0.0)
        self._stream.start()

    def close(self) -> None:
        """Stop the stream."""
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.stop()
                stream.close()
            except Exception as err:
                _LOGGER.debug("closing output stream: %s", err)

    def _make_stream(self) -> Any:
        return ClockedOutputStream(self._rate, self.blocksize, self._callback)

    def _callback(
        self, outdata: np.ndarray, frames: int, time_info: Any, status: Any, delay_s: float = 0.0
    ) -> None:
        """The one audio callback every sink runs (PortAudio thread or clock thread); ``delay_s``:
        audio still waiting between this block and the device (a rate converter's)."""
        self.last_callback = time.monotonic()
        if len(self._mono) != frames:
            self._mono = np.zeros(frames, dtype=np.float32)
        lead = self._latency
        try:
            dac = float(time_info.outputBufferDacTime)
            current = float(time_info.currentTime)
            if dac > 0 and current > 0 and 0.0 <= dac - current < 1.0:
                lead = dac - current
        except (AttributeError, TypeError):
            pass
        render = self._render
        marks = render(self._mono, time.time() + lead + delay_s) if render is not None else []
        outdata[:] = self._mono[:, None]
        if marks or self._wants_all_blocks():
            self._after_block(self._mono, marks)

    def _wants_all_blocks(self) -> bool:
        return False

    def _after_block(self, block: FloatArray, marks: list[PlaybackMark]) -> None:
        """Hook for sinks that record what was played."""


class NullSink(StreamSink):
    """Discards audio, paced in real time (simulation)."""

    def __init__(self, rate: int = 22050, block_ms: int = 10) -> None:
        super().__init__(rate, block_ms)


class WavSink(StreamSink):
    """Writes each reply to ``<directory>/<say-id>.wav`` (16-bit mono), paced in real time."""

    def __init__(self, directory: str | Path, rate: int = 22050, block_ms: int = 10) -> None:
        super().__init__(rate, block_ms)
        self.directory = Path(directory)
        self._writer: wave.Wave_write | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Sink name with its directory."""
        return f"WavSink({self.directory})"

    def path_for(self, say: str) -> Path:
        """The file reply ``say`` is written to."""
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", say)[:120] or "reply"
        return self.directory / f"{safe}.wav"

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Create the directory and start the clock."""
        self.directory.mkdir(parents=True, exist_ok=True)
        super().open(render, report)

    def close(self) -> None:
        """Stop the clock and close an unfinished file."""
        super().close()
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def _wants_all_blocks(self) -> bool:
        return self._writer is not None

    def _after_block(self, block: FloatArray, marks: list[PlaybackMark]) -> None:
        with self._lock:
            pos = 0
            for mark in marks:
                if mark.kind == "reply_started":
                    self._close_writer()
                    self._writer = wave.open(str(self.path_for(mark.say)), "wb")  # noqa: SIM115 - spans blocks
                    self._writer.setnchannels(1)
                    self._writer.setsampwidth(2)
                    self._writer.setframerate(self._rate)
                    pos = mark.frame
                elif mark.kind == "reply_finished" and self._writer is not None:
                    self._writer.writeframes(to_pcm16(block[pos : mark.frame]))
                    self._close_writer()
                    pos = mark.frame
            if self._writer is not None:
                self._writer.writeframes(to_pcm16(block[pos:]))

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def make_sink(settings: SpeakingSettings, backend: Any = None, *, wait_for_device: bool = False) -> AudioSink:
    """The sink named by ``settings.sink``: "sounddevice", "wav" or "null" (no fallback).
    ``wait_for_device``: a missing output device is reported and waited for, not raised (daemon)."""
    if settings.sink == "sounddevice":
        from audio.edges.sounddevice_sink import SoundDeviceSink

        return SoundDeviceSink(
            settings.output_device,
            block_ms=settings.block_ms,
            latency=settings.latency,
            reopen_interval_s=settings.reopen_interval_s,
            backend=backend,
            wait_for_device=wait_for_device,
        )
    if settings.sink == "wav":
        if not settings.wav_dir:
            raise ValueError("speaking.sink = 'wav' needs speaking.wav_dir")
        return WavSink(settings.wav_dir, rate=settings.sim_rate, block_ms=settings.block_ms)
    if settings.sink == "null":
        return NullSink(rate=settings.sim_rate, block_ms=settings.block_ms)
    raise ValueError(f"unknown speaking.sink {settings.sink!r}: use one of {', '.join(SINKS)}")


def __getattr__(name: str) -> object:
    """``from audio.edges.sinks import SoundDeviceSink`` without importing sounddevice eagerly."""
    if name == "SoundDeviceSink":
        from audio.edges.sounddevice_sink import SoundDeviceSink

        return SoundDeviceSink
    raise AttributeError(name)
