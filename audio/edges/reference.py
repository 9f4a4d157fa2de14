"""The far-end reference: what the speaker plays, with the time it is played.

Every sink can hand each rendered block to reference taps (``StreamSink.add_reference_tap``) with
the unix time its first frame reaches the speaker (from PortAudio's ``outputBufferDacTime`` on real
hardware, real time in simulation). A tap runs on the audio thread, so it only copies and enqueues:
``ReferenceQueue`` is that tap; the echo canceller (``audio.hearing.front_end``) and the simulated
room (``audio.edges.sim_room``) drain it from their own threads.

``TimedBuffer`` lays samples on a timeline: anchored at the first block's time and then advanced by
the sample count (so a clock that drifts against the writer's shows as drift, as it does on real
hardware), re-anchored when a block's time jumps by more than ``resync_s`` (an underrun, a reopened
device). ``take(n, t0)`` returns the samples of a span by time, zeros where there are none.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from audio.edges.wav import FloatArray

ReferenceTap = Callable[[FloatArray, float, int], None]
"""Called with (a copy of the rendered mono block, unix time its first frame is played, rate Hz)
from the audio thread: it must only copy and enqueue."""


@dataclass(frozen=True, slots=True)
class RenderedBlock:
    """One block as the speaker plays it."""

    samples: FloatArray
    play_time: float
    """Unix time its first frame reaches the speaker."""
    rate: int


class ReferenceQueue:
    """A bounded, thread-safe queue of rendered blocks: the tap side appends, a worker drains.

    When nobody drains it, the oldest blocks are dropped (``dropped`` counts them)."""

    def __init__(self, max_blocks: int = 500) -> None:
        self._blocks: deque[RenderedBlock] = deque(maxlen=max_blocks)
        self._lock = threading.Lock()
        self.dropped = 0
        self.last_time = 0.0
        """Play time of the newest block (0 = none yet)."""

    def __call__(self, block: FloatArray, play_time: float, rate: int) -> None:
        """The tap: enqueue a block (any thread)."""
        with self._lock:
            if len(self._blocks) == self._blocks.maxlen:
                self.dropped += 1
            self._blocks.append(RenderedBlock(block, play_time, rate))
            self.last_time = play_time

    def drain(self) -> list[RenderedBlock]:
        """Every block queued so far, oldest first."""
        with self._lock:
            blocks = list(self._blocks)
            self._blocks.clear()
        return blocks


class TimedBuffer:
    """Samples at ``rate`` on a timeline, taken by time (see the module docstring). Not
    thread-safe: one owner."""

    def __init__(self, rate: int, keep_s: float = 2.0, resync_s: float = 0.1) -> None:
        self.rate = rate
        self._keep = int(keep_s * rate)
        self._resync = resync_s
        self._samples = np.zeros(0, dtype=np.float32)
        self._start: float | None = None
        """Time of ``_samples[0]``."""
        self.resyncs = 0
        """Times the timeline was re-anchored after the first anchor."""

    @property
    def end_time(self) -> float | None:
        """Time just after the newest sample (None before the first block)."""
        if self._start is None:
            return None
        return self._start + len(self._samples) / self.rate

    def clear(self) -> None:
        """Forget everything, including the anchor."""
        self._samples = np.zeros(0, dtype=np.float32)
        self._start = None

    def append(self, samples: FloatArray, start_time: float) -> None:
        """Add samples whose first is played at ``start_time`` (contiguous unless it jumps)."""
        end = self.end_time
        if end is None or abs(start_time - end) > self._resync:
            if end is not None:
                self.resyncs += 1
            self._samples = np.asarray(samples, dtype=np.float32).copy()
            self._start = start_time
        else:
            self._samples = np.concatenate([self._samples, np.asarray(samples, dtype=np.float32)])
        extra = len(self._samples) - self._keep
        if extra > 0 and self._start is not None:
            self._samples = self._samples[extra:]
            self._start += extra / self.rate

    def held(self, n: int, start_time: float) -> int:
        """How many of the ``n`` samples from ``start_time`` on are held (the rest ``take`` fills
        with zeros)."""
        if self._start is None or n <= 0:
            return 0
        index = round((start_time - self._start) * self.rate)
        return max(0, min(len(self._samples), index + n) - max(0, index))

    def take(self, n: int, start_time: float) -> FloatArray:
        """The ``n`` samples from ``start_time`` on (zeros outside what is held)."""
        out = np.zeros(n, dtype=np.float32)
        if self._start is None or n <= 0:
            return out
        index = round((start_time - self._start) * self.rate)
        lo, hi = max(0, index), min(len(self._samples), index + n)
        if hi > lo:
            out[lo - index : hi - index] = self._samples[lo:hi]
        return out


class SampleClock:
    """A stream's time, advanced by its sample count and re-anchored only when the time reported
    with a block strays more than ``tolerance_s`` from it (a glitch, an overflow, a restart).

    A block's reported time (``time.time()`` in a callback, PortAudio's ADC time) jitters with
    scheduling by milliseconds; the samples themselves are contiguous. Taking the reference by the
    jittered time would feed the canceller a far end that skips and repeats samples: a linear echo
    path it cannot model. Pure: the times are given."""

    def __init__(self, rate: int, tolerance_s: float = 0.05) -> None:
        self.rate = rate
        self.tolerance_s = tolerance_s
        self._next: float | None = None
        self.resyncs = 0
        """Times the clock was re-anchored after the first anchor."""

    def stamp(self, n: int, reported: float) -> float:
        """The start time of the next ``n`` samples, reported to start at ``reported``."""
        if self._next is None or abs(reported - self._next) > self.tolerance_s:
            if self._next is not None:
                self.resyncs += 1
            self._next = reported
        start = self._next
        self._next = start + n / self.rate
        return start

    @property
    def next_time(self) -> float | None:
        """The time the next block is expected to start at (None before the first)."""
        return self._next

    def reset(self) -> None:
        """Forget the anchor (the stream was closed)."""
        self._next = None
