"""Audio sources: the real microphone (sounddevice), a simulated one, and a file source.

Every source delivers mono float32 blocks at ``rate`` Hz (returned by ``open``) by calling
``on_audio(block)`` from its own thread; the callback must only copy/enqueue. A source that loses
its device calls ``on_lost(detail)``; the ``Listener`` then closes it and retries ``open``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from audio.edges.portaudio import COMMON_RATES, PortAudio, shared
from audio.edges.reference import SampleClock
from audio.edges.wav import FloatArray, load_audio
from audio.hearing.settings import HearingSettings

_LOGGER = logging.getLogger(__name__)


AudioCallback = Callable[[FloatArray], None]
TimedAudioCallback = Callable[[FloatArray, float], None]
"""A block and the unix time its first sample was captured (for the echo canceller)."""
LostCallback = Callable[[str], None]


class EchoSource(Protocol):
    """What the simulated microphone hears of the speaker (``audio.edges.sim_room.RoomEcho``)."""

    def take(self, n: int, start_time: float) -> FloatArray:
        """The echo over ``n`` samples from ``start_time`` (unix seconds)."""
        ...


class MicrophoneUnavailable(RuntimeError):
    """The input device is missing, unplugged or cannot be opened."""


class AudioSource(Protocol):
    """Something that delivers microphone-like audio while open."""

    overflows: int
    """Input overflows (dropped audio) counted since creation."""

    def open(self, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Start delivering blocks to ``on_audio`` (any thread); return the sample rate. May raise
        ``MicrophoneUnavailable``."""
        ...

    def close(self) -> None:
        """Stop delivering audio (idempotent)."""
        ...


@runtime_checkable
class DeviceListSource(Protocol):
    """A source on a shared device list that can give way for a rescan (``audio.edges.portaudio``)."""

    def refresh_wanted(self) -> bool:
        """Whether another device (a missing speaker) waits for a rescan that closing this open
        source would allow, and the sound hardware did change. Blocks while a refresh runs."""
        ...

    def refresh_devices(self) -> bool:
        """Rescan the device list now (the source is closed); whether it did."""
        ...


# ---- real microphone -----------------------------------------------------------------------------
def list_input_devices() -> list[str]:
    """Names of the input devices PortAudio sees."""
    import sounddevice as sd

    try:
        devices: Any = sd.query_devices()
    except Exception as err:  # PortAudio not initialisable
        _LOGGER.warning("cannot list audio devices: %s", err)
        return []
    return [str(d["name"]) for d in devices if int(d.get("max_input_channels", 0)) > 0]


def find_input_device(name: str | None) -> int | None:
    """Index of the input device whose name contains ``name`` (case-insensitive); None = default.

    Raises ``MicrophoneUnavailable`` naming the device and listing the inputs that exist.
    """
    import sounddevice as sd

    devices: Any = sd.query_devices()
    inputs = [(i, str(d["name"])) for i, d in enumerate(devices) if int(d.get("max_input_channels", 0)) > 0]
    listing = ", ".join(repr(n) for _, n in inputs) or "none"
    if name is None:
        default_in = sd.default.device[0]
        if default_in is None or int(default_in) < 0 or not inputs:
            raise MicrophoneUnavailable(f"no default input device; available input devices: {listing}")
        return None
    exact = [i for i, n in inputs if n == name]
    matches = exact or [i for i, n in inputs if name.lower() in n.lower()]
    if not matches:
        raise MicrophoneUnavailable(f"input device {name!r} not found; available input devices: {listing}")
    return matches[0]


def _available_inputs() -> str:
    """The input devices PortAudio sees, quoted and comma-separated ("none" when there are none)."""
    return ", ".join(map(repr, list_input_devices())) or "none"


def _query_input(sd: Any, name: str | None, label: str) -> tuple[int | None, Any]:
    """The input device's index (None: default) and PortAudio's info; raises ``MicrophoneUnavailable``."""
    try:
        index = find_input_device(name)
        info: Any = sd.query_devices(index, "input")
    except MicrophoneUnavailable:
        raise
    except Exception as err:
        raise MicrophoneUnavailable(
            f"input device {label!r} unavailable ({err}); available input devices: {_available_inputs()}"
        ) from err
    return index, info


class SoundDeviceMicrophone:
    """The real microphone through sounddevice/PortAudio, chosen by name or substring.

    If the device is missing or will not open, the device list is refreshed (``audio.edges.portaudio``:
    only while no stream of the process is open) and the open is tried once more, so a microphone
    plugged in after start-up is found by the next ``open`` without restarting the daemon.
    """

    def __init__(self, settings: HearingSettings, *, portaudio: PortAudio | None = None) -> None:
        self.settings = settings
        self.overflows = 0
        self._portaudio = portaudio
        self._stream: Any = None
        self._stream_pa: PortAudio | None = None
        self._closing = False
        self._on_timed: TimedAudioCallback | None = None

    def open_timed(self, on_audio: TimedAudioCallback, on_lost: LostCallback) -> int:
        """``open``, with each block's capture time (from PortAudio's ``inputBufferAdcTime``)."""
        self._on_timed = on_audio
        return self.open(lambda block: None, on_lost)

    def open(self, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Open the input stream (at ``sample_rate`` if the hardware allows, else its own rate)."""
        import sounddevice as sd

        if self._stream is not None:
            return int(self._stream.samplerate)
        pa = self._portaudio or shared(sd)
        return pa.with_refresh(
            lambda: self._open(sd, pa, on_audio, on_lost), "the microphone", MicrophoneUnavailable
        )

    def _open(self, sd: Any, pa: PortAudio, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Start the first rate and channel layout the device takes; that rate."""
        s = self.settings
        label = s.input_device or "default input"
        index, info = _query_input(sd, s.input_device, label)
        callback = self._block_callback(on_audio)
        finished = self._finished_callback(label, on_lost)
        # Mono where the device allows; an ALSA ``hw:`` device of a two-microphone HAT opens only
        # with all its channels: then the first channel is used (a USB array's processed channel).
        layouts = dict.fromkeys((1, max(1, int(info.get("max_input_channels", 1)))))
        last_err: Exception | None = None
        for rate, channels in ((r, c) for r in self._rates(info) for c in layouts):
            factory = functools.partial(
                sd.InputStream,
                device=index,
                channels=channels,
                samplerate=rate,
                dtype="float32",
                blocksize=rate * s.block_ms // 1000,
                callback=callback,
                finished_callback=finished,
            )
            try:
                stream = self._start_stream(pa, factory)
            except Exception as err:
                last_err = err
                continue
            self._stream, self._stream_pa = stream, pa
            _LOGGER.info("microphone %r open at %d Hz, %d channel(s)", info["name"], rate, channels)
            return rate
        raise MicrophoneUnavailable(
            f"cannot open input device {label!r}: {last_err}; available input devices: {_available_inputs()}"
        )

    def _rates(self, info: Any) -> list[int]:
        """The sample rates to try, each once: the configured device rate, else ours, its own, common ones."""
        s = self.settings
        rates = (
            [s.device_sample_rate]
            if s.device_sample_rate
            else [s.sample_rate, int(info["default_samplerate"]), *COMMON_RATES]
        )
        return list(dict.fromkeys(rates))

    def _block_callback(self, on_audio: AudioCallback) -> Callable[[Any, int, Any, Any], None]:
        """The stream's callback: counts overflows, hands on the first channel (timed if asked)."""
        s = self.settings

        def callback(indata: Any, frames: int, time_info: Any, status: Any) -> None:
            if status.input_overflow:
                self.overflows += 1
            timed = self._on_timed
            if timed is None:
                on_audio(indata[:, 0].copy())
                return
            lag = frames / float(s.device_sample_rate or s.sample_rate)  # estimate if not reported
            with contextlib.suppress(AttributeError, TypeError):
                adc, current = float(time_info.inputBufferAdcTime), float(time_info.currentTime)
                if adc > 0 and current > 0 and 0.0 <= current - adc < 1.0:
                    lag = current - adc
            timed(indata[:, 0].copy(), time.time() - lag)

        return callback

    def _finished_callback(self, label: str, on_lost: LostCallback) -> Callable[[], None]:
        """The stream's ``finished_callback``: a stream that ends unless closed is a lost device."""

        def finished() -> None:
            # A dead stream stays counted by ``pa`` until ``close`` (the Listener closes it on loss).
            if not self._closing:
                on_lost(f"input device {label!r} stopped")

        return finished

    def _start_stream(self, pa: PortAudio, factory: Callable[[], Any]) -> Any:
        """Open a stream with ``factory`` through ``pa`` and start it; one that fails is closed again."""
        stream: Any = None
        try:
            stream = pa.open_stream(factory)
            self._closing = False
            stream.start()
        except Exception:
            if stream is not None:
                self._closing = True
                pa.close_stream(stream)
            raise
        return stream

    def refresh_wanted(self) -> bool:
        """See ``DeviceListSource``: only while open, only after a hardware change."""
        pa = self._stream_pa
        return pa is not None and pa.refresh_wanted(own_streams=1, require_change=True)

    def refresh_devices(self) -> bool:
        """Rescan PortAudio's device list (allowed only while no stream is open)."""
        import sounddevice as sd

        return (self._portaudio or shared(sd)).refresh_devices()

    def close(self) -> None:
        """Stop and close the stream (and stop counting it for device refreshes)."""
        stream, self._stream = self._stream, None
        self._on_timed = None
        if stream is None:
            return
        self._closing = True
        pa, self._stream_pa = self._stream_pa, None
        if pa is not None:
            pa.close_stream(stream)


# ---- simulated and file sources ------------------------------------------------------------------
class _BlockPump:
    """A thread calling ``produce()`` every ``block_s / speed`` seconds and handing blocks on."""

    def __init__(self, produce: Callable[[], FloatArray | None], block_s: float, speed: float) -> None:
        self._produce = produce
        self._period = block_s / speed
        self._catch_up = 1.0 if speed == 1.0 else 0.0
        """How far behind (s) the pump still catches up in a burst: in real time (the simulated
        room's clock) up to 1 s; faster than real time (tests) never: the lag is dropped."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="audio-sim", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            if self._produce() is None:
                return
            next_t += self._period
            delay = next_t - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -self._catch_up:
                next_t = time.monotonic()  # fell far behind (the machine stalled): drop the lag

    def stop(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)


def _as_samples(audio: FloatArray | bytes | str | Path, rate: int) -> FloatArray:
    if isinstance(audio, bytes | str | Path):
        return load_audio(audio, rate)
    return np.asarray(audio, dtype=np.float32).reshape(-1)


class SimulatedMicrophone:
    """A fake microphone that behaves like one: real-time blocks of silence (or room noise) while
    open; ``feed()`` mixes audio into the stream at real-time speed. Audio fed while closed is
    dropped (nothing is heard while asleep). ``unplug()``/``replug()`` simulate a lost device.

    With ``echo`` (the simulated room) it also hears the device's own speaker: each block captures
    the span ending ``input_latency_s`` before it is delivered (a sound card's input latency), and
    the room's echo of that span is mixed in. ``open_timed`` delivers each block with that capture
    time, contiguous (``SampleClock``: advanced by the samples, not by the pump thread's jitter).
    The latency (50 ms, a sound card's) is also how long after the user's voice the device's
    reaction (ducking the reply) reaches the echo; when the software sink's clock thread is late
    for the span captured (a loaded machine), the room waits for it (``RoomEcho``): a room never
    loses its echo (``RoomEcho.late_samples`` counts what it had to do without).
    """

    def __init__(
        self,
        rate: int = 16000,
        block_ms: int = 30,
        noise_db: float | None = None,
        speed: float = 1.0,
        *,
        echo: EchoSource | None = None,
        input_latency_s: float = 0.05,
    ) -> None:
        self.rate = rate
        self.echo = echo
        self.input_latency_s = input_latency_s
        self._on_timed: TimedAudioCallback | None = None
        self.overflows = 0
        self._block = rate * block_ms // 1000
        self._noise = None if noise_db is None else 10 ** (noise_db / 20.0)
        self._speed = speed
        self._lock = threading.Lock()
        self._queue: list[FloatArray] = []
        self._pump: _BlockPump | None = None
        self._on_audio: AudioCallback | None = None
        self._on_lost: LostCallback | None = None
        self._plugged = True
        self._rng = np.random.default_rng(1)
        self.delivered_samples = 0
        self._clock = SampleClock(rate, tolerance_s=1.2)
        """Capture times: contiguous like a sound card's samples, not the pump thread's jitter (it
        catches up after a stall of up to 1 s)."""

    @property
    def is_open(self) -> bool:
        """Whether the stream is running."""
        return self._pump is not None

    def open(self, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Start the real-time block thread."""
        if not self._plugged:
            raise MicrophoneUnavailable("input device 'simulated microphone' not found (unplugged)")
        if self._pump is None:
            self._on_audio, self._on_lost = on_audio, on_lost
            self._clock.reset()
            self._pump = _BlockPump(self._next_block, self._block / self.rate, self._speed)
        return self.rate

    def open_timed(self, on_audio: TimedAudioCallback, on_lost: LostCallback) -> int:
        """``open``, with each block's capture time."""
        self._on_timed = on_audio
        return self.open(lambda block: None, on_lost)

    def close(self) -> None:
        """Stop the stream and drop audio not yet delivered."""
        pump, self._pump = self._pump, None
        self._on_timed = None
        with self._lock:
            self._queue.clear()
        if pump is not None:
            pump.stop()

    def feed(self, audio: FloatArray | bytes | str | Path) -> bool:
        """Queue audio (float32 at ``rate``, WAV bytes or a WAV path); False (dropped) if closed."""
        samples = _as_samples(audio, self.rate)
        with self._lock:
            if self._pump is None:
                return False
            self._queue.append(samples.copy())
        return True

    @property
    def pending_samples(self) -> int:
        """Fed samples not yet delivered."""
        with self._lock:
            return sum(len(q) for q in self._queue)

    def unplug(self) -> None:
        """Simulate pulling the microphone out: the stream dies and reopening fails."""
        self._plugged = False
        lost = self._on_lost
        if self._pump is not None:
            pump, self._pump = self._pump, None
            pump.stop()
            if lost is not None:
                lost("input device 'simulated microphone' disappeared")

    def replug(self) -> None:
        """Simulate plugging the microphone back in."""
        self._plugged = True

    def _next_block(self) -> FloatArray | None:
        n = self._block
        if self._noise is None:
            block = np.zeros(n, dtype=np.float32)
        else:
            block = (self._rng.standard_normal(n) * self._noise).astype(np.float32)
        with self._lock:
            filled = 0
            while filled < n and self._queue:
                head = self._queue[0]
                take = min(n - filled, len(head))
                block[filled : filled + take] += head[:take]
                filled += take
                if take == len(head):
                    self._queue.pop(0)
                else:
                    self._queue[0] = head[take:]
        start = self._clock.stamp(n, time.time() - self.input_latency_s - n / self.rate)
        if self.echo is not None:
            block += self.echo.take(n, start)
        timed = self._on_timed
        if timed is not None:
            timed(block, start)
            self.delivered_samples += n
        elif self._on_audio is not None:
            self._on_audio(block)
            self.delivered_samples += n
        return block


class FileSource:
    """Plays a clip (then ``tail_ms`` of silence) into the pipeline once per ``open``; for tests and
    simulation. ``speed`` > 1 runs faster than real time (0 = as fast as possible)."""

    def __init__(
        self,
        audio: FloatArray | bytes | str | Path,
        rate: int = 16000,
        block_ms: int = 30,
        tail_ms: int = 1500,
        speed: float = 0.0,
    ) -> None:
        self.rate = rate
        self.overflows = 0
        samples = _as_samples(audio, rate)
        self._samples = np.concatenate([samples, np.zeros(rate * tail_ms // 1000, dtype=np.float32)])
        self._block = rate * block_ms // 1000
        self._speed = speed
        self._pump: _BlockPump | None = None
        self._pos = 0
        self.finished = threading.Event()
        """Set once the whole clip and tail were delivered."""

    def open(self, on_audio: AudioCallback, on_lost: LostCallback) -> int:
        """Start delivering the clip from its beginning."""
        if self._pump is not None:
            return self.rate
        self._pos = 0
        self.finished.clear()

        def produce() -> FloatArray | None:
            if self._pos >= len(self._samples):
                self.finished.set()
                return None
            block = self._samples[self._pos : self._pos + self._block]
            self._pos += self._block
            on_audio(block.copy())
            return block

        self._pump = _BlockPump(produce, self._block / self.rate, self._speed or 1e6)
        return self.rate

    def close(self) -> None:
        """Stop delivering."""
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.stop()
