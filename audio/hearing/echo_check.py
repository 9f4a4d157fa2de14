"""Measuring the echo path on the hardware: how late the microphone hears the speaker, and how much
of that echo WebRTC's canceller removes (``robot-face doctor --deep``).

The simulated room says what the canceller does in a room the project made up; what it does on the
robot's own speaker, microphone and case is only known by playing something and listening. The
doctor plays ``probe_signal`` (speech-like: band-limited noise in syllables and pauses, so the
canceller sees what a reply gives it, nothing tonal) while it records (one duplex call), and
``measure_echo`` reads the pair:

- the lag: where the recording matches what was played best (cross-correlation, 0 up to
  ``MAX_LAG_MS``), and how well (``correlation``: near 0 when the microphone hears something else);
- the level: the echo over the room's own level (was the test heard at all);
- the removal: the pair run through the runtime's front end (``cancel``: the same ``FrontEnd``
  and canceller, the echo delay set to the measured lag), then what the runtime judges the
  canceller on (``FrontEnd.removal_db``): the median 10 ms frame of echo alone, microphone level
  minus cleaned level, here over the frames after ``SETTLE_S`` (the canceller has converged).

Pure apart from the canceller: no clock, no device (the doctor does the playing and recording).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audio.edges.wav import FloatArray, resample
from audio.hearing.front_end import (
    FAR_ACTIVE_DB,
    FRAME,
    HEARD_DB,
    RATE,
    Canceller,
    EchoCanceller,
    FrontEnd,
    FrontEndOptions,
)
from audio.hearing.vad import frame_levels_db

TEST_S = 6.0
"""Length of the test sound (s)."""
LEAD_S = 0.5
"""Silence before it (s): the recording's first ``ROOM_S`` are the room alone, whatever the lag."""
ROOM_S = 0.4
"""The room's level is read over the recording's first this much (s)."""
SETTLE_S = 3.5
"""The removal is judged on the frames after this much of the test (s): the canceller's convergence
before it (about 1-2 s of speech-like sound in the simulated rooms) is not its performance."""
MAX_LAG_MS = 500
"""Longest echo lag looked for (ms): output and input buffers plus the air (WebRTC takes a stream
delay up to 500 ms)."""
MATCH_MIN = 0.3
"""Least correlation at the lag for the recording to be the robot's echo (simulated rooms: 0.6-0.9
with reverberation, a hard-driven speaker, a pumping microphone gain; under 0.1 for an echo 0.7 s
late, clocks 0.2 % apart or another sound)."""
TEST_LEVEL_DBFS = -20.0
"""RMS level of the test sound while it sounds (dBFS, before the volume), about a reply's."""


def probe_signal(rate: int, seconds: float = TEST_S, seed: int = 0) -> FloatArray:
    """Speech-like test sound at ``rate`` after ``LEAD_S`` of silence: noise tilted like speech
    (-6 dB per octave over 300 Hz) and band-limited to 150-4000 Hz, in 4 Hz syllables with a
    300 ms pause every second."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    shape = np.where((freqs >= 150.0) & (freqs <= 4000.0), 1.0 / np.maximum(freqs, 300.0) * 300.0, 0.0)
    noise = np.fft.irfft(spectrum * shape, n)
    t = np.arange(n) / rate
    syllables = 0.5 - 0.5 * np.cos(2 * np.pi * 4.0 * t)
    pauses = (t % 1.0) < 0.7
    x = noise * syllables * pauses
    voiced = x[pauses]
    rms = float(np.sqrt(np.mean(np.square(voiced)))) if voiced.size else 1.0
    sound = x * (10 ** (TEST_LEVEL_DBFS / 20) / max(rms, 1e-12))
    return np.concatenate([np.zeros(int(LEAD_S * rate)), sound]).astype(np.float32)


def cancel(
    far: FloatArray,
    far_rate: int,
    mic: FloatArray,
    options: FrontEndOptions,
    canceller: Canceller | None = None,
) -> tuple[FloatArray, FrontEnd]:
    """Run the front end (with ``canceller``: WebRTC's by default) as at run time: reference blocks
    (10 ms) with play times from t = 0, rendered 30 ms ahead; microphone blocks (30 ms) with capture
    times from t = 0. Output aligned with ``mic`` (the canceller's ``delay_samples`` taken out: at
    run time everything downstream hears that much later)."""
    front = FrontEnd(options, canceller)
    ref_block, mic_block = far_rate // 100, RATE * 30 // 1000
    far = np.concatenate(
        [far, np.zeros(max(0, int(len(mic) * far_rate / RATE) - len(far) + far_rate), np.float32)]
    )
    pushed, out = 0, []
    for start in range(0, len(mic), mic_block):
        t = start / RATE
        while pushed * ref_block / far_rate <= t + 0.06:
            front.reference(
                far[pushed * ref_block : (pushed + 1) * ref_block].copy(),
                pushed * ref_block / far_rate,
                far_rate,
            )
            pushed += 1
        out.append(front.process(mic[start : start + mic_block], t))
    cleaned = np.concatenate(out)[front.delay_samples :]
    return np.pad(cleaned, (0, len(mic) - len(cleaned))), front


def echo_lag(far16: FloatArray, mic16: FloatArray, max_ms: int = MAX_LAG_MS) -> tuple[float, float]:
    """(lag in ms, correlation 0..1): how much later than ``far16`` the microphone (``mic16``, the
    same start, 16 kHz) hears it best, and the normalised cross-correlation there."""
    n = len(far16) + len(mic16)
    size = 1 << (n - 1).bit_length()
    xc = np.fft.irfft(np.fft.rfft(mic16, size) * np.conj(np.fft.rfft(far16, size)), size)
    lags = xc[: min(len(mic16), RATE * max_ms // 1000 + 1)]
    best = int(np.argmax(np.abs(lags)))
    seen = mic16[best : best + len(far16)]
    energy = float(np.sqrt(np.sum(np.square(far16[: len(seen)])) * np.sum(np.square(seen))))
    return 1000.0 * best / RATE, float(abs(lags[best]) / energy) if energy > 0 else 0.0


@dataclass(frozen=True)
class EchoMeasurement:
    """What ``measure_echo`` found."""

    lag_ms: float
    """How late the microphone hears what the speaker plays (buffers plus air), in ms."""
    correlation: float
    """How well the recording matches what was played at that lag (0..1)."""
    heard_db: float
    """The recording's loud frames (its 90th percentile level) over the room's level before the
    test sounded (dB): a test not heard is within a few dB, however late an echo came."""
    removal_db: float | None
    """The canceller's removal (dB, the runtime's measure), None when too few frames held echo."""


def _active(far16: FloatArray, lag: int) -> np.ndarray:
    """Per 10 ms microphone frame: whether the test sounded in it (the far end, ``lag`` samples earlier)."""
    levels = frame_levels_db(far16, FRAME)
    shift = lag // FRAME
    return np.concatenate([np.zeros(shift, bool), levels > FAR_ACTIVE_DB])


def measure_echo(
    far: FloatArray, far_rate: int, mic: FloatArray, mic_rate: int, canceller: Canceller | None = None
) -> EchoMeasurement:
    """Read one test: ``far`` (``probe_signal``) played from the start of ``mic``, recorded at the
    same time; ``canceller``: WebRTC's (None) or another ``EchoCanceller``."""
    far16 = resample(np.asarray(far, np.float32), far_rate, RATE)
    mic16 = resample(np.asarray(mic, np.float32), mic_rate, RATE)
    lag_ms, correlation = echo_lag(far16, mic16)
    lag = round(lag_ms * RATE / 1000)
    active = _active(far16, lag)
    frames = min(len(active), len(mic16) // FRAME)
    mic_db = frame_levels_db(mic16, FRAME)[:frames]
    room = int(ROOM_S * 100)
    heard_db = float(np.percentile(mic_db[room:], 90) - np.median(mic_db[:room])) if frames > room else 0.0
    options = FrontEndOptions(echo_delay_ms=round(lag_ms))
    cleaned, _ = cancel(far16, RATE, mic16, options, canceller or EchoCanceller(options))
    settle = int(SETTLE_S * 100)
    clean_db = frame_levels_db(cleaned, FRAME)[:frames]
    removed = [mic_db[i] - clean_db[i] for i in range(settle, frames) if active[i] and mic_db[i] > HEARD_DB]
    removal = float(np.median(removed)) if len(removed) >= 100 else None
    return EchoMeasurement(lag_ms, correlation, heard_db, removal)
