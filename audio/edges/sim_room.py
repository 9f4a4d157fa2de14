"""A simulated room: what the simulated microphone hears of the device's own speaker.

On real hardware the microphone sits centimetres from the speaker and hears every reply: delayed by
the output and input buffers and the air, quieter, smeared by the room's reverberation, a little
distorted by a small speaker driven hard, and on a clock that drifts against the speaker's (two
crystals, tens of ppm apart). ``SimRoom`` is that echo path, pure and deterministic for a seed:

    rendered block (sink rate) → soft clip (speaker) → resample to the microphone rate with clock
    drift (fractional) → convolve with the room's impulse response (direct path delayed and
    attenuated, then an exponentially decaying noise tail with the configured RT60) → echo block

``RoomEcho`` glues it to the real-time simulation (thread-safe): the sink's reference tap hands it
every rendered block with its play time (``on_rendered``), the simulated microphone takes the echo
of the span it is capturing (``take``) and mixes it with what ``sim/audio`` feeds.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from audio.edges.reference import ReferenceQueue, TimedBuffer
from audio.edges.wav import FloatArray
from audio.settings_checks import Check, raise_first_failed

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimRoomSettings:
    """The simulated echo path of ``--simulate`` (TOML table ``[sim_room]``)."""

    enabled: bool = True
    """In simulation (``device.simulate``) the microphone hears the device's own speaker through
    this room, mixed with what ``sim/audio`` feeds, so every simulated run (the end-to-end tests,
    the demo) exercises the echo: in half duplex the echo tail must swallow it, in full duplex the
    canceller and the residual-echo gate (default true; false = a microphone that hears only
    ``sim/audio``)."""

    delay_ms: float = 40.0
    """Delay from a sample reaching the speaker to its direct echo at the microphone, in ms
    (buffers plus air; default 40.0)."""

    echo_db: float = -6.0
    """Level of the direct echo relative to what the speaker plays, in dB (default -6.0)."""

    rt60_s: float = 0.3
    """Reverberation time of the tail (its energy falls 60 dB in this time), in seconds; 0 = no
    tail (default 0.3)."""

    tail_db: float = -6.0
    """Energy of the reverberant tail relative to the direct echo's, in dB (default -6.0)."""

    clip_drive: float = 1.5
    """Speaker non-linearity: the output is ``tanh(drive * x) / drive``; 0 = linear (default 1.5)."""

    drift_ppm: float = 40.0
    """Clock drift of the microphone against the speaker, in parts per million (positive: the
    microphone's clock runs fast; default 40.0)."""

    seed: int = 7
    """Seed of the tail's noise: the same seed gives the same room (default 7)."""

    def validate(self) -> None:
        """Raise ValueError naming the key ("sim_room.delay_ms: ...")."""
        checks: tuple[Check, ...] = (
            ("delay_ms", 0.0 <= self.delay_ms <= 1000.0, "must be in 0..1000"),
            ("echo_db", -120.0 <= self.echo_db <= 12.0, "must be in -120..12"),
            ("rt60_s", 0.0 <= self.rt60_s <= 3.0, "must be in 0..3 (0 = no tail)"),
            ("tail_db", -120.0 <= self.tail_db <= 12.0, "must be in -120..12"),
            ("clip_drive", 0.0 <= self.clip_drive <= 20.0, "must be in 0..20 (0 = linear)"),
            ("drift_ppm", abs(self.drift_ppm) <= 10000.0, "must be in -10000..10000"),
        )
        raise_first_failed("sim_room", self, checks)


def room_impulse_response(settings: SimRoomSettings, rate: int) -> FloatArray:
    """The room's impulse response at ``rate``: a direct tap at ``delay_ms`` with gain ``echo_db``,
    then (``rt60_s`` > 0) seeded noise decaying 60 dB per RT60, carrying ``tail_db`` of the direct
    tap's energy, up to where it is 60 dB down."""
    delay = round(settings.delay_ms * rate / 1000.0)
    gain = 10.0 ** (settings.echo_db / 20.0)
    if settings.rt60_s <= 0:
        ir = np.zeros(delay + 1, dtype=np.float64)
        ir[delay] = gain
        return ir.astype(np.float32)
    length = math.ceil(settings.rt60_s * rate)
    t = np.arange(1, length + 1, dtype=np.float64) / rate
    envelope = np.exp(-3.0 * math.log(10.0) * t / settings.rt60_s)  # amplitude: -60 dB at RT60
    noise = np.random.default_rng(settings.seed).standard_normal(length) * envelope
    tail_energy = gain**2 * 10.0 ** (settings.tail_db / 10.0)
    noise *= math.sqrt(tail_energy / float(np.sum(noise**2)))
    ir = np.zeros(delay + 1 + length, dtype=np.float64)
    ir[delay] = gain
    ir[delay + 1 :] = noise
    return ir.astype(np.float32)


def soft_clip(x: FloatArray, drive: float) -> FloatArray:
    """A small speaker driven hard: ``tanh(drive * x) / drive`` (linear for drive 0)."""
    if drive <= 0 or not x.any():
        return x.astype(np.float32, copy=False)
    return (np.tanh(drive * x.astype(np.float64)) / drive).astype(np.float32)


class DriftResampler:
    """Streaming fractional resampler (linear interpolation): ``ratio`` output samples per input
    sample, for the few ppm by which two clocks disagree. Pure and clock-free."""

    def __init__(self, ratio: float) -> None:
        if ratio <= 0:
            raise ValueError(f"ratio must be > 0, got {ratio}")
        self.step = 1.0 / ratio
        """Input samples per output sample."""
        self._pos = 0.0
        """Position of the next output sample, relative to ``_prev`` (index 0 = the kept sample)."""
        self._prev = np.zeros(0, dtype=np.float64)

    def process(self, block: FloatArray) -> FloatArray:
        """Resample the next input block (any length)."""
        if len(self._prev) == 1 and not self._prev[0] and not block.any():
            return self._silence(len(block))
        x = np.concatenate([self._prev, block.astype(np.float64)])
        if len(x) < 2:
            self._prev = x
            return np.zeros(0, dtype=np.float32)
        last = len(x) - 1  # output positions must stay < last to interpolate
        count = max(0, math.ceil((last - self._pos) / self.step))
        positions = self._pos + self.step * np.arange(count)
        positions = positions[positions < last]
        idx = positions.astype(np.int64)
        frac = positions - idx
        out = x[idx] * (1.0 - frac) + x[np.minimum(idx + 1, last)] * frac
        next_pos = self._pos + self.step * len(positions)
        self._prev = x[last:]
        self._pos = next_pos - last
        return out.astype(np.float32)

    def _silence(self, n: int) -> FloatArray:
        """``process`` of ``n`` zeros after a zero: the same count and position, no interpolation."""
        last = n  # the kept zero, then the block
        count = max(0, math.ceil((last - self._pos) / self.step))
        if count and self._pos + self.step * (count - 1) >= last:
            count -= 1  # ``positions < last`` (float rounding at the edge)
        self._pos = self._pos + self.step * count - last
        return np.zeros(count, dtype=np.float32)


class StreamingConvolver:
    """Block convolution with a fixed impulse response (FFT overlap-add), pure and clock-free."""

    def __init__(self, ir: FloatArray) -> None:
        self._ir = ir.astype(np.float64)
        self._spectra: dict[int, np.ndarray] = {}
        self._carry = np.zeros(max(0, len(ir) - 1), dtype=np.float64)

    def process(self, block: FloatArray) -> FloatArray:
        """The next ``len(block)`` output samples."""
        n = len(block)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        if not self._carry.any() and not np.any(block):
            # Silence after the tail has died out: the FFT path would give exact zeros too (an idle
            # device's simulated room costs nothing; it was ~3 % of a core).
            return np.zeros(n, dtype=np.float32)
        size = 1 << (n + len(self._ir) - 1).bit_length()
        spectrum = self._spectra.get(size)
        if spectrum is None:
            spectrum = self._spectra[size] = np.fft.rfft(self._ir, size)
        full = np.fft.irfft(np.fft.rfft(block.astype(np.float64), size) * spectrum, size)
        full = full[: n + len(self._ir) - 1]
        full[: len(self._carry)] += self._carry
        out, rest = full[:n], full[n:]
        carry = np.zeros_like(self._carry)
        carry[: len(rest)] = rest
        self._carry = carry
        return out.astype(np.float32)


class SimRoom:
    """The echo path from the speaker (``in_rate``) to the microphone (``out_rate``), block by block.

    Pure and deterministic given the settings' seed: the same blocks in give the same echo out.
    The output has ``out_rate / in_rate * (1 + drift_ppm·1e-6)`` samples per input sample (up to
    the resampler's few samples of latency).
    """

    def __init__(self, settings: SimRoomSettings, in_rate: int, out_rate: int) -> None:
        import soxr

        self.settings = settings
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._soxr = (
            None if in_rate == out_rate else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32")
        )
        self._drift = DriftResampler(1.0 + settings.drift_ppm * 1e-6)
        self.impulse_response = room_impulse_response(settings, out_rate)
        self._conv = StreamingConvolver(self.impulse_response)

    def process(self, block: FloatArray) -> FloatArray:
        """The echo at the microphone of the next rendered block (mono float32 at ``in_rate``)."""
        x = soft_clip(np.asarray(block, dtype=np.float32).reshape(-1), self.settings.clip_drive)
        if self._soxr is not None:
            x = self._soxr.resample_chunk(x)
        return self._conv.process(self._drift.process(x))


MAX_WAIT_S = 1.0
"""Longest the simulated microphone waits for a late software speaker's echo (s)."""


class RoomEcho:
    """The simulated room in real time. ``on_rendered`` is the sink's reference tap (audio thread:
    it only enqueues); ``take`` (the microphone's thread) runs the room over what was rendered and
    returns the echo of the span being captured. A jump in play times (the sink restarted)
    re-anchors the timeline there."""

    def __init__(self, settings: SimRoomSettings, mic_rate: int) -> None:
        self.settings = settings
        self.mic_rate = mic_rate
        self._room: SimRoom | None = None
        self._rendered = ReferenceQueue()
        self._lock = threading.Lock()
        self._echo = TimedBuffer(mic_rate, keep_s=2.0)
        self._more = threading.Condition()
        self._last_render = 0.0
        self.late_samples = 0
        """Microphone samples whose echo was asked for before the sink rendered it (a late sink)."""

    def on_rendered(self, block: FloatArray, play_time: float, rate: int) -> None:
        """A block the speaker plays from ``play_time`` (unix seconds) at ``rate`` Hz (any thread)."""
        self._rendered(block, play_time, rate)
        with self._more:
            self._last_render = time.monotonic()
            self._more.notify_all()

    def _wait_for_render(self, until: float) -> None:
        """Wait (at most ``MAX_WAIT_S``) until the speaker rendered up to ``until``, if it is running
        (rendered within the last second) and late: a stalled software sink must not make the room
        lose its echo."""
        deadline = time.monotonic() + MAX_WAIT_S
        with self._more:
            while time.monotonic() < deadline and time.monotonic() - self._last_render < 1.0:
                last = self._rendered.last_time
                if last == 0.0 or last >= until:
                    return
                self._more.wait(0.02)

    def take(self, n: int, start_time: float) -> FloatArray:
        """The echo heard over ``n`` microphone samples from ``start_time`` (zeros where none)."""
        self._wait_for_render(start_time + n / self.mic_rate)
        with self._lock:
            for block in self._rendered.drain():
                if self._room is None or self._room.in_rate != block.rate:
                    self._room = SimRoom(self.settings, block.rate, self.mic_rate)
                    self._echo.clear()
                self._echo.append(self._room.process(block.samples), block.play_time)
            end = self._echo.end_time
            if end is not None and start_time + n / self.mic_rate > end and self._room is not None:
                # Asked for an echo not rendered yet (the sink's clock thread ran late): a room never
                # misses its echo, so count it (the microphone's latency must cover the sink's lag).
                before = self.late_samples // self.mic_rate
                self.late_samples += min(n, round((start_time + n / self.mic_rate - end) * self.mic_rate))
                if self.late_samples // self.mic_rate > before:
                    _LOGGER.warning(
                        "Simulated room: the speaker was late for %.1f s of captured audio in all "
                        "(its echo is missing there)",
                        self.late_samples / self.mic_rate,
                    )
            return self._echo.take(n, start_time)
