"""The sink base every output shares: the callback path, the software clock and the reference tap.

Every sink drives the same ``_callback(outdata, frames, time_info, status)`` (sounddevice's API): the
sounddevice sink (``audio.edges.sounddevice_sink``) from PortAudio's thread, the WAV and null sinks
(``audio.edges.sinks``) from ``ClockedOutputStream``, a software clock that pulls blocks in real time
exactly like a sound card. The callback asks the ``RenderFn`` for a block and the unix time its first
frame reaches the output, and hands a copy of the block with that time to every reference tap
(``audio.edges.reference``: the far end an echo canceller needs); taps only copy and enqueue.

Kept apart from ``audio.edges.sinks`` so the sounddevice sink and the sink factory do not import
each other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from audio.edges.reference import ReferenceTap
from audio.edges.wav import FloatArray
from audio.speaking.playback import PlaybackMark

_LOGGER = logging.getLogger(__name__)

MAX_LATE_S = 1.0
"""A block's reported play time may lie this far behind the callback's time (s): the software
clock's thread got to a block late (a loaded machine), the block still plays in its slot."""
CATCH_UP_S = 1.0
"""The software clock renders the blocks it is late for in a burst, up to this far behind (s);
beyond, it drops the lag (a jump in play times, like an underrun)."""

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


@dataclass(slots=True)
class StreamTime:
    """The ``time_info`` a callback gets (sounddevice field names; stream clock seconds). Not frozen:
    a frozen dataclass's ``__init__`` costs three ``object.__setattr__`` calls, 100 times a second."""

    currentTime: float
    outputBufferDacTime: float
    inputBufferAdcTime: float = 0.0
    monotonic: bool = False
    """The times are ``time.monotonic()`` (a ``ClockedOutputStream``): the sink then reads the lead
    from the monotonic clock next to the wall clock, so a thread held up between the stream's
    clock read and the callback does not shift the block's play time (a PortAudio stream's clock
    is its own: only the difference of its two times is used)."""


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
                # The block plays in its slot (``deadline``), as a sound card's would, however late
                # this thread got to it: the play times stay smooth on a loaded machine.
                self._callback(block, self.blocksize, StreamTime(now, deadline + self.latency, 0.0, True), 0)
            except Exception:
                _LOGGER.exception("output callback failed")
            deadline += period
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -CATCH_UP_S:
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
        self._taps: tuple[ReferenceTap, ...] = ()
        self.last_callback = 0.0

    def add_reference_tap(self, tap: ReferenceTap) -> None:
        """Hand every rendered block (a copy, silence included) with the unix time its first
        frame is played and the playback rate to ``tap``, from the audio thread."""
        self._taps = (*self._taps, tap)

    def remove_reference_tap(self, tap: ReferenceTap) -> None:
        """Stop handing blocks to ``tap``."""
        self._taps = tuple(t for t in self._taps if t is not tap)

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
            if dac > 0 and current > 0 and -MAX_LATE_S <= dac - current < 1.0:
                lead = dac - current
                if getattr(time_info, "monotonic", False):
                    lead = dac - time.monotonic()  # read beside the wall clock below
        except (AttributeError, TypeError):
            pass
        render = self._render
        play_time = time.time() + lead + delay_s
        marks = render(self._mono, play_time) if render is not None else []
        outdata[:] = self._mono[:, None]
        for tap in self._taps:
            tap(self._mono.copy(), play_time, self._rate)
        if marks or self._wants_all_blocks():
            self._after_block(self._mono, marks)

    def _wants_all_blocks(self) -> bool:
        return False

    def _after_block(self, block: FloatArray, marks: list[PlaybackMark]) -> None:
        """Hook for sinks that record what was played."""
