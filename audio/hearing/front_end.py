"""The audio front end on the capture path, before VAD: echo cancellation, noise suppression, high-pass.

WebRTC's audio processing module from the PyPI package ``livekit`` (``livekit.rtc.AudioProcessingModule``,
Apache-2.0) works on 10 ms frames at 16 kHz: ``process_reverse_stream`` takes the far end (what the
speaker plays), ``set_stream_delay_ms`` how much later its echo reaches the microphone, and
``process_stream`` cleans the microphone frame in place.

``FrontEnd`` runs any ``Canceller``: WebRTC's (``EchoCanceller``, here) or DTLN-aec's
(``audio.hearing.dtln_aec``, built by ``audio.hearing.cancellers``), whose output comes
``delay_samples`` late: the raw microphone and the far end it hands on (``last_mic``, ``last_far``)
are delayed to match, so whatever compares them with the cleaned audio compares like with like.

A ``ResidualGate`` (the ``EchoGuard`` of ``audio.hearing.echo_tail`` applied to the audio) can
follow: while the speaker plays it attenuates blocks that do not stand above the canceller's expected
residue, so a VAD downstream hears the user but not what is left of the robot's own voice, even
with a weak canceller.

The far end is exactly what the sink renders, with the time it is played (``audio.edges.reference``:
the sink's reference tap, a ``ReferenceQueue``). ``FrontEnd.process(block, capture_time)`` lays the
reference on a timeline (resampled to 16 kHz) and, for every 10 ms microphone frame captured at
``t``, feeds the canceller the reference played from ``t`` on: both sides are timed by their own
device's reported latency (PortAudio's ``outputBufferDacTime`` / ``inputBufferAdcTime``), so what
is left for ``set_stream_delay_ms`` is the acoustic path (``echo_delay_ms``; the simulated room's
known delay in simulation); WebRTC's delay estimator follows the rest.

It runs on the caller's thread, which must not be the PortAudio callback (``FrontEndSource`` runs it
on a worker thread). Faults it cannot cancel through -- the library failing to load
(``FrontEndUnavailable``), the reference stopping while the microphone goes on, the reference's
timeline jumping again and again -- are reported by ``fault`` with a reason, so the device can fall
back to half duplex instead of transcribing its own voice.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from audio.edges.capture import AudioCallback, DeviceListSource, LostCallback, TimedAudioCallback
from audio.edges.reference import ReferenceQueue, SampleClock, TimedBuffer
from audio.edges.wav import FloatArray
from audio.hearing.vad import frame_level_db

_LOGGER = logging.getLogger(__name__)

RATE = 16000
"""The rate the front end works at (Hz): the pipeline's."""
FRAME = RATE // 100
"""Samples per 10 ms frame, the APM's unit."""
REFERENCE_STALL_S = 0.5
"""The reference is stalled when its newest block is older than this (seconds)."""
MAX_RESYNCS = 5
"""More re-anchorings of the reference timeline than this in a minute is a fault (drift)."""
CONVERGE_FRAMES = 500
"""10 ms frames of the speaker playing before the canceller counts as converged (5 s: measured by
``robot-face bench duplex``, its "cold start" row: during the first reply the residue still starts
utterances)."""
RECONVERGE_FRAMES = 250
"""10 ms frames of the speaker playing after a timing jump (the reference or the microphone
re-anchored: the echo path moved for the canceller) before it is trusted again (2.5 s; measured
in the simulated room on a loaded machine: the ERLE fell to 1-12 dB for about two seconds after one)."""
FAR_ACTIVE_DB = -50.0
"""The reference counts as playing above this level (dBFS)."""
HEALTH_FRAMES = 1000
"""10 ms frames of the speaker playing (the microphone hearing it, nobody speaking) over which
the canceller's removal is judged (10 s)."""
HEALTH_MIN_FRAMES = 300
"""Frames needed before it is judged at all (3 s)."""
HEALTH_MIN_DB = 3.0
"""A converged canceller whose median frame removes less than this much of the echo is not
cancelling (dB): its reference is not what the speaker plays, or misaligned beyond what it
follows (measured with ``bench duplex``'s replies: working 65 dB, limited to 6 dB 6.0, without
the reference 0.3, the reference 1 s late or early 0.7-1.9). A weak canceller above it stays full
duplex behind the residual-echo gate (and a barge-in over it ducks deeper: ``hearing.duck_weak_db``)."""
HEARD_DB = -60.0
"""A microphone frame below this level has no echo worth judging the canceller on (dBFS)."""
UNCOVERED_S = 0.5
"""Microphone audio in a row (s) whose far end the reference does not hold before that is a fault."""
REPORT_FRAMES = 3000
"""10 ms frames of the speaker playing between two log lines of what the canceller removed (30 s)."""


class FrontEndUnavailable(RuntimeError):
    """The echo canceller's library is missing or failed to start."""


@dataclass(frozen=True)
class FrontEndOptions:
    """What the APM does (see ``HearingSettings``' full duplex block)."""

    echo_cancellation: bool = True
    noise_suppression: bool = True
    high_pass_filter: bool = True
    echo_delay_ms: int = 0
    """Delay of the echo beyond the devices' reported latencies (the acoustic path), in ms."""


def _to_pcm(frame: FloatArray) -> bytes:
    return (np.clip(frame, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


class Canceller(Protocol):
    """What ``FrontEnd`` runs: WebRTC's ``EchoCanceller`` or DTLN-aec's
    (``audio.hearing.dtln_aec.DtlnCanceller``)."""

    delay_samples: int
    """How late the cleaned frames come out (samples; ``FrontEnd`` delays the raw microphone and
    the far end it exposes by as much, so the gate and the health check compare like with like)."""
    converge_frames: int
    """10 ms frames of the speaker playing before the canceller is trusted."""
    reconverge_frames: int
    """The same after a timing jump."""

    def process(self, mic: FloatArray, far: FloatArray) -> FloatArray:
        """Clean one 10 ms microphone frame whose echo comes from ``far`` (both 160 samples)."""
        ...


class EchoCanceller:
    """One livekit APM instance: a far-end frame and a microphone frame in, the cleaned frame out."""

    delay_samples = 0
    converge_frames = CONVERGE_FRAMES
    reconverge_frames = RECONVERGE_FRAMES

    def __init__(self, options: FrontEndOptions) -> None:
        try:
            from livekit.rtc import AudioFrame, AudioProcessingModule
        except Exception as err:  # ImportError, or the native library failing to load
            raise FrontEndUnavailable(f"livekit's audio processing module will not load: {err}") from err
        self._frame_cls = AudioFrame
        self.options = options
        try:
            self._apm = AudioProcessingModule(
                echo_cancellation=options.echo_cancellation,
                noise_suppression=options.noise_suppression,
                high_pass_filter=options.high_pass_filter,
            )
        except Exception as err:
            raise FrontEndUnavailable(f"livekit's audio processing module failed to start: {err}") from err

    def process(self, mic: FloatArray, far: FloatArray) -> FloatArray:
        """Clean one 10 ms microphone frame whose echo comes from ``far`` (both 160 samples)."""
        reverse = self._frame_cls(_to_pcm(far), RATE, 1, FRAME)
        near = self._frame_cls(_to_pcm(mic), RATE, 1, FRAME)
        if self.options.echo_cancellation:
            self._apm.process_reverse_stream(reverse)
            self._apm.set_stream_delay_ms(self.options.echo_delay_ms)
        self._apm.process_stream(near)
        return np.frombuffer(near.data, dtype="<i2").astype(np.float32) / 32767.0


class _Delay:
    """The raw microphone and the far end, ``n`` samples late (zeros first): aligned with a
    canceller's output that comes out that late."""

    def __init__(self, n: int) -> None:
        self._mic = np.zeros(n, np.float32)
        self._far = np.zeros(n, np.float32)

    def pass_on(self, mic: FloatArray, far: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``mic`` and ``far`` in; as many samples of each out, from ``n`` earlier."""
        if len(self._mic) == 0:
            return mic, far
        n = len(mic)
        mic_all, far_all = np.concatenate([self._mic, mic]), np.concatenate([self._far, far])
        self._mic, self._far = mic_all[n:], far_all[n:]
        return mic_all[:n], far_all[:n]


@dataclass
class FrontEndStats:
    """What the front end did (for the status, doctor and the benchmark)."""

    frames: int = 0
    far_active_frames: int = 0
    """Frames during which the speaker played (reference above ``FAR_ACTIVE_DB``)."""
    cpu_s: float = 0.0
    """Thread CPU time spent in the canceller."""
    reference_blocks: int = 0

    @property
    def cpu_per_frame_ms(self) -> float:
        """Mean CPU per 10 ms frame, in ms."""
        return 1000.0 * self.cpu_s / self.frames if self.frames else 0.0


class FrontEnd:
    """The reference timeline plus the canceller: ``process`` blocks of any size at 16 kHz.

    Output lags input by less than one 10 ms frame (a partial frame waits for the next block), plus
    the canceller's own ``delay_samples`` (DTLN-aec's 30 ms; WebRTC's none).
    """

    def __init__(self, options: FrontEndOptions, canceller: Canceller | None = None) -> None:
        import soxr

        self.options = options
        self._canceller: Canceller = canceller or EchoCanceller(options)
        self.delay_samples = self._canceller.delay_samples
        """How late the cleaned audio comes out of ``process`` (the canceller's, samples)."""
        self._late = _Delay(self.delay_samples)
        """The raw microphone and the far end, delayed as the cleaned audio is."""
        self.reference = ReferenceQueue()
        """Add this to the sink as its reference tap (``StreamSink.add_reference_tap``)."""
        self._soxr_mod = soxr
        self._resampler: object | None = None
        self._ref_rate = 0
        self._timeline = TimedBuffer(RATE, keep_s=3.0)
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_time = 0.0
        self._resync_times: list[float] = []
        self._capture_clock = SampleClock(RATE)
        """The microphone's capture times, smoothed: its samples are contiguous, its reported times jitter."""
        self.stats = FrontEndStats()
        self._since_jump = self._canceller.reconverge_frames
        """Frames of the speaker playing since the last timing jump."""
        self.last_far = np.zeros(0, dtype=np.float32)
        """The reference frames fed for the latest ``process`` call (the residual-echo check)."""
        self._uncovered = 0
        """Microphone samples in a row whose far end the reference timeline did not hold."""
        self._uncovered_by_ms = 0.0
        """How far past the timeline's end the latest such sample was captured (ms)."""
        self._health: deque[float] = deque(maxlen=HEALTH_FRAMES)
        """What the converged canceller removed (dB) per recent frame of echo alone."""
        self._removed: list[float] = []
        """Per 10 ms frame of the speaker playing since the last report: microphone level minus
        cleaned level (dB)."""
        self.last_mic = np.zeros(0, dtype=np.float32)
        """The microphone frames of the latest ``process`` call, before cleaning."""

    def _absorb_reference(self) -> None:
        for block in self.reference.drain():
            self.stats.reference_blocks += 1
            if block.rate != self._ref_rate:
                self._ref_rate = block.rate
                self._resampler = (
                    None
                    if block.rate == RATE
                    else self._soxr_mod.ResampleStream(block.rate, RATE, 1, dtype="float32", quality="MQ")
                )
            samples = block.samples
            if self._resampler is not None:
                samples = self._resampler.resample_chunk(samples)  # type: ignore[attr-defined]
            before, expected = self._timeline.resyncs, self._timeline.end_time
            self._timeline.append(samples, block.play_time)
            if self._timeline.resyncs != before:
                self._resync_times.append(block.play_time)
                self._jumped("the speaker's play times", block.play_time - (expected or 0.0))

    def process(self, block: FloatArray, capture_time: float, near_speech: bool = False) -> FloatArray:
        """Clean ``block`` (16 kHz mono) whose first sample was captured at ``capture_time``;
        ``near_speech``: the user is speaking (the listener has an utterance open), so this block
        does not count in judging how much echo the canceller removes."""
        self._absorb_reference()
        jumps, expected = self._capture_clock.resyncs, self._capture_clock.next_time
        stamped = self._capture_clock.stamp(len(block), capture_time)
        if self._capture_clock.resyncs != jumps:
            self._jumped("the microphone's capture times", capture_time - (expected or 0.0))
        if len(self._pending) == 0:
            self._pending_time = stamped
        self._pending = np.concatenate([self._pending, np.asarray(block, dtype=np.float32)])
        whole = len(self._pending) // FRAME * FRAME
        if whole == 0:
            return np.zeros(0, dtype=np.float32)
        mic, self._pending = self._pending[:whole], self._pending[whole:]
        start = self._pending_time
        self._pending_time = start + whole / RATE
        far = self._timeline.take(whole, start)
        self._follow_coverage(whole, start)
        out = np.empty(whole, dtype=np.float32)
        t0 = time.thread_time()
        for i in range(0, whole, FRAME):
            out[i : i + FRAME] = self._canceller.process(mic[i : i + FRAME], far[i : i + FRAME])
        self.stats.cpu_s += time.thread_time() - t0
        self.stats.frames += whole // FRAME
        mic, far = self._late.pass_on(mic, far)
        for i in range(0, whole, FRAME):
            if float(np.mean(np.square(far[i : i + FRAME]))) > 10 ** (FAR_ACTIVE_DB / 10):
                self.stats.far_active_frames += 1
                self._since_jump += 1
                heard = frame_level_db(mic[i : i + FRAME])
                removed = heard - frame_level_db(out[i : i + FRAME])
                self._removed.append(removed)
                if heard > HEARD_DB and not near_speech and self.converged:
                    self._health.append(removed)
        if len(self._removed) >= REPORT_FRAMES:
            self._report_removed()
        self.last_far, self.last_mic = far, mic
        return out

    def _follow_coverage(self, n: int, start: float) -> None:
        """Count microphone samples whose far end the reference timeline does not hold while the
        speaker renders (its echo would pass uncancelled and unguarded: the clocks disagree)."""
        if self.reference.last_time == 0.0:
            return
        held = self._timeline.held(n, start)
        if held == n:
            self._uncovered = 0
            return
        self._uncovered += n - held
        end = self._timeline.end_time
        self._uncovered_by_ms = 1000.0 * (start - end) if end is not None else 0.0

    def _report_removed(self) -> None:
        """Log how much of the microphone the canceller removed while the speaker played (the
        median frame is echo alone unless the user talked over most of it; the low decile shows
        the worst: the user's speech, or echo it let through)."""
        removed = np.asarray(self._removed)
        self._removed = []
        _LOGGER.info(
            "echo cancellation: %.0f s of playback, removed %.1f dB (median frame; low decile %.1f dB)",
            len(removed) / 100,
            float(np.median(removed)),
            float(np.percentile(removed, 10)),
        )

    def capture_restarted(self) -> None:
        """The microphone's stream was closed and opened again (asleep and awake, a reopened
        device): its next block starts a new capture timeline (the samples in between were never
        captured, and a gap shorter than the capture clock's tolerance would otherwise be taken for
        contiguous audio), and the echo path may have moved for the canceller: it must re-converge
        before the microphone is listened to over the speaker again."""
        self._capture_clock.reset()
        self._pending = np.zeros(0, dtype=np.float32)
        self._reconverge("the microphone's stream restarted")

    def _jumped(self, what: str, by_s: float) -> None:
        """A timing jump: the echo path moved for the canceller; it must re-converge."""
        self._reconverge(f"{what} jumped by {1000 * by_s:+.0f} ms")

    def _reconverge(self, why: str) -> None:
        """The canceller is not trusted until it has heard its ``reconverge_frames`` of the speaker."""
        self._since_jump = 0
        self._health.clear()
        _LOGGER.info("echo cancellation: %s; re-converging", why)

    @property
    def converged(self) -> bool:
        """Whether the canceller has heard the speaker long enough to be trusted: its
        ``converge_frames`` in all (WebRTC's: ``CONVERGE_FRAMES``), and its ``reconverge_frames``
        since the last timing jump (``RECONVERGE_FRAMES``)."""
        canceller = self._canceller
        return (
            self.stats.far_active_frames >= canceller.converge_frames
            and self._since_jump >= canceller.reconverge_frames
        )

    @property
    def removal_db(self) -> float | None:
        """How much of the echo the converged canceller removes: the median frame of the last
        ``HEALTH_FRAMES`` of echo alone, in dB (None until ``HEALTH_MIN_FRAMES`` were heard)."""
        if len(self._health) < HEALTH_MIN_FRAMES:
            return None
        return float(np.median(np.fromiter(self._health, dtype=np.float64)))

    @property
    def timing_jumps(self) -> int:
        """Re-anchorings of the reference timeline and of the capture clock so far."""
        return self._timeline.resyncs + self._capture_clock.resyncs

    def fault(self, now: float) -> str | None:
        """Why echo cancellation cannot be trusted now (None = it can): the reference stopped
        (the speaker vanished) or its timeline keeps jumping (underruns, a replugged device, a rate
        change)."""
        if not self.options.echo_cancellation:
            return None
        last = self.reference.last_time
        if last == 0.0:  # the speaker opens a little after the microphone
            return "no reference from the speaker" if self.stats.frames > 500 else None
        if now - last > REFERENCE_STALL_S + 1.0:  # play times run up to ~1 s ahead of now
            return "the speaker's reference stopped (the speaker vanished or stalled)"
        if self._uncovered >= UNCOVERED_S * RATE:
            return (
                "the speaker's reference does not reach the microphone's capture times "
                f"(the microphone is {self._uncovered_by_ms:+.0f} ms past it)"
            )
        removal = self.removal_db
        if removal is not None and removal < HEALTH_MIN_DB:
            return (
                f"the echo canceller removes only {removal:.1f} dB of the speaker's echo (median of "
                f"the last {len(self._health) / 100:.0f} s of playback): its reference does not match"
            )
        self._resync_times = [t for t in self._resync_times if now - t < 60.0]
        if len(self._resync_times) > MAX_RESYNCS:
            return f"the speaker's timing jumped more than {MAX_RESYNCS} times in a minute"
        return None


class ResidualGate:
    """The residual-echo check on the audio itself: while the speaker plays (or rang within the
    guard's hold), a block the ``EchoGuard`` takes for what is left of the echo is attenuated by
    ``depth_db`` (below every VAD gate), so the VAD downstream only hears blocks that stand above
    the canceller's expected residue -- the user. Pure and clock-free."""

    def __init__(
        self, depth_db: float = 40.0, frame_ms: int = 30, echo_delay_ms: int = 0, margin_db: float = 6.0
    ) -> None:
        from audio.hearing.echo_tail import EchoGuard

        self.guard = EchoGuard(margin_db=margin_db, frame_ms=frame_ms, echo_delay_ms=echo_delay_ms)
        """Judges each block given to ``apply`` (``frame_ms`` long: the capture block; the echo
        ``echo_delay_ms`` behind the reference, as ``FrontEndOptions.echo_delay_ms``; a block of the
        user's stands ``margin_db`` above the canceller's expected residue)."""
        self._depth = 10 ** (-depth_db / 20)
        self.gated_blocks = 0

    def apply(self, raw: FloatArray, cleaned: FloatArray, far: FloatArray) -> FloatArray:
        """``cleaned`` as is, or attenuated when it is residual echo (all three aligned, 16 kHz)."""
        if len(cleaned) == 0:
            return cleaned
        from audio.hearing.vad import frame_level_db

        user = self.guard.allows(True, frame_level_db(raw), frame_level_db(cleaned), frame_level_db(far))
        if user:
            return cleaned
        if self.guard.playing:
            self.gated_blocks += 1
            return (cleaned * self._depth).astype(np.float32)
        return cleaned


class TimedSource(Protocol):
    """A source that can deliver each block with its capture time (``audio.edges.capture``)."""

    overflows: int

    def open_timed(self, on_audio: TimedAudioCallback, on_lost: LostCallback) -> int:
        """Start delivering (block, capture unix time); return the sample rate."""
        ...

    def close(self) -> None:
        """Stop delivering."""
        ...


class FrontEndSource:
    """An ``AudioSource`` delivering the inner source's audio cleaned by a ``FrontEnd``, at 16 kHz.

    The inner source's callback only enqueues; a worker thread ("audio-front-end") resamples,
    cancels and hands the cleaned block on. ``fault_reason`` (also passed to ``on_fault``, once
    per fault) says why echo cancellation cannot be trusted; the audio still flows (cleaned as
    well as it can be), and the device must treat the microphone as half duplex.
    """

    def __init__(
        self,
        inner: TimedSource,
        front: FrontEnd,
        on_fault: Callable[[str], None] | None = None,
        gate: ResidualGate | None = None,
    ) -> None:
        self.inner = inner
        self.front = front
        self.gate = gate
        """The residual-echo gate applied to the cleaned audio (None = none)."""
        self._on_fault = on_fault
        self._queue: queue.Queue[tuple[FloatArray, float] | None] = queue.Queue(maxsize=200)
        self._thread: threading.Thread | None = None
        self._resampler: Any = None
        self.fault_reason: str | None = None
        self.removal_db: float | None = None
        """How much of the echo the canceller removes (``FrontEnd.removal_db``, read every 0.5 s
        with the fault check: the listener reads it from its own thread)."""
        self.detection_view = False
        """Deliver each block as ``(2, n)``: cleaned, and cleaned then gated (the listener sets it:
        the VAD judges the gated view, Whisper hears the cleaned one); False: the gated audio."""
        self.near_speech = False
        """Set by the listener while it hears the user (an utterance open): those blocks do not
        count in judging the canceller."""
        self.dropped_blocks = 0
        self._next_check = 0.0
        self._opened = False
        """Whether ``open`` ran before (a second one is a restarted stream)."""

    @property
    def duplex(self) -> str:
        """ "full" when the cleaned microphone can be listened to while the device speaks (no fault,
        canceller converged), else "half"."""
        return "full" if self.fault_reason is None and self.front.converged else "half"

    @property
    def overflows(self) -> int:
        """The inner source's overflows plus blocks the worker could not keep up with."""
        return int(self.inner.overflows) + self.dropped_blocks

    @overflows.setter
    def overflows(self, value: int) -> None:
        self.inner.overflows = value - self.dropped_blocks

    def open(self, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Open the inner source and start the worker; the pipeline rate is always 16 kHz. Opened
        again after a ``close``, the canceller re-converges and the gate forgets the ERLE it
        tracked (``FrontEnd.capture_restarted``): the device is half duplex meanwhile."""
        if self._opened:
            self.front.capture_restarted()
            if self.gate is not None:
                self.gate.guard.reset()
        self._opened = True
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._work, args=(on_audio,), name="audio-front-end", daemon=True
            )
            self._thread.start()
        rate = self.inner.open_timed(self._enqueue, on_lost)
        if rate != RATE:
            import soxr

            self._resampler = soxr.ResampleStream(rate, RATE, 1, dtype="float32")
        return RATE

    def refresh_wanted(self) -> bool:
        """``DeviceListSource``: the inner microphone's (False for one without a device list)."""
        inner = self.inner
        return isinstance(inner, DeviceListSource) and inner.refresh_wanted()

    def refresh_devices(self) -> bool:
        """``DeviceListSource``: the inner microphone's (False for one without a device list)."""
        inner = self.inner
        return isinstance(inner, DeviceListSource) and inner.refresh_devices()

    def close(self) -> None:
        """Close the inner source and stop the worker."""
        self.inner.close()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=2.0)

    def _enqueue(self, block: FloatArray, capture_time: float) -> None:
        try:
            self._queue.put_nowait((block, capture_time))
        except queue.Full:
            self.dropped_blocks += 1

    def _work(self, on_audio: AudioCallback) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            block, capture_time = item
            if self._resampler is not None:
                block = self._resampler.resample_chunk(block)
            try:
                jumps = self.front.timing_jumps
                cleaned = self.front.process(block, capture_time, self.near_speech)
                if self.gate is not None and self.front.timing_jumps != jumps:
                    self.gate.guard.reset()  # the canceller re-adapts: its ERLE is not known
                if self.gate is not None:
                    gated = self.gate.apply(self.front.last_mic, cleaned, self.front.last_far)
                    cleaned = np.stack([cleaned, gated]) if self.detection_view else gated
            except Exception as err:  # the library failing mid-run: raw audio, and say so
                self._fault(f"echo canceller failed: {err}")
                cleaned = block
            self._check(time.time())
            if cleaned.shape[-1]:
                on_audio(cleaned)

    def _check(self, now: float) -> None:
        if now < self._next_check:
            return
        self._next_check = now + 0.5
        self.removal_db = self.front.removal_db
        reason = self.front.fault(now)
        if reason is None:
            if self.fault_reason is not None:
                _LOGGER.info("echo cancellation: reference is back (%s cleared)", self.fault_reason)
            self.fault_reason = None
        else:
            self._fault(reason)

    def _fault(self, reason: str) -> None:
        if reason == self.fault_reason:
            return
        self.fault_reason = reason
        _LOGGER.warning("echo cancellation: %s; the microphone is half duplex", reason)
        if self._on_fault is not None:
            self._on_fault(reason)
