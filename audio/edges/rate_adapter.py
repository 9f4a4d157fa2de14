"""Pull-side sample-rate conversion for an output device that cannot run at the playback rate.

The playback queue renders at one rate, fixed when the speaker opens (audio is resampled to it when
synthesised). A device plugged in later may accept only its own rate (an ALSA ``hw:`` device of a
44.1 kHz USB DAC after the sink started at 48 kHz): the device then runs at its rate and
``PullResampler`` converts on the fly, rendering as many frames at the playback rate as each device
block needs (soxr's streaming resampler, low-latency quality: ~3 ms delay, fine for speech).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from audio.edges.wav import FloatArray

_MAX_PULLS = 64
"""Render calls per device block before the rest is filled with silence (never reached in practice)."""
_MIN_PULL = 128
"""Fewest input frames rendered at a time: soxr holds back output until it has a few."""


class PullResampler:
    """Turns a renderer at ``in_rate`` into exactly ``frames`` samples per call at ``out_rate``."""

    def __init__(self, in_rate: int, out_rate: int, quality: str = "LQ") -> None:
        import soxr

        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality=quality)
        self._fifo = np.zeros(0, dtype=np.float32)

    @property
    def pending_s(self) -> float:
        """Seconds of converted audio that will play before the next rendered sample."""
        return (len(self._fifo) + float(self._stream.delay())) / self.out_rate

    def pull(self, frames: int, produce: Callable[[int], FloatArray]) -> FloatArray:
        """``frames`` output samples; ``produce(n)`` renders ``n`` more input samples when needed."""
        for _ in range(_MAX_PULLS):
            short = frames - len(self._fifo)
            if short <= 0:
                break
            block = produce(max(_MIN_PULL, math.ceil(short * self.in_rate / self.out_rate)))
            converted = self._stream.resample_chunk(np.asarray(block, dtype=np.float32))
            self._fifo = np.concatenate([self._fifo, np.asarray(converted, dtype=np.float32)])
        if len(self._fifo) < frames:
            self._fifo = np.concatenate([self._fifo, np.zeros(frames - len(self._fifo), np.float32)])
        out, self._fifo = self._fifo[:frames], self._fifo[frames:]
        return out
