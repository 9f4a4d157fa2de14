"""The simulated room: delay, level, reverberation, speaker non-linearity and clock drift, measured
on synthetic signals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audio.edges.sim_room import (
    DriftResampler,
    RoomEcho,
    SimRoom,
    SimRoomSettings,
    StreamingConvolver,
    room_impulse_response,
    soft_clip,
)

RATE = 16000
DRY = SimRoomSettings(rt60_s=0.0, clip_drive=0.0, drift_ppm=0.0)
"""Only the direct path: delay and level."""


def _noise(seconds: float, seed: int = 0, level: float = 0.1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * RATE)) * level).astype(np.float32)


def _run(room: SimRoom, x: np.ndarray, block: int = 160) -> np.ndarray:
    return np.concatenate([room.process(x[i : i + block]) for i in range(0, len(x), block)])


def _lag(x: np.ndarray, y: np.ndarray, max_lag: int) -> int:
    """The lag (samples) at which ``y`` best matches ``x``."""
    n = min(len(x), len(y)) - max_lag
    scores = [float(np.dot(x[:n], y[lag : lag + n])) for lag in range(max_lag)]
    return int(np.argmax(scores))


def _db(a: np.ndarray, b: np.ndarray) -> float:
    return 10 * math.log10(
        float(np.mean(a.astype(np.float64) ** 2)) / float(np.mean(b.astype(np.float64) ** 2))
    )


@pytest.mark.parametrize("delay_ms", [10.0, 40.0, 120.0])
def test_direct_path_delay_is_measured_by_cross_correlation(delay_ms: float) -> None:
    x = _noise(2.0)
    y = _run(
        SimRoom(SimRoomSettings(delay_ms=delay_ms, rt60_s=0.0, clip_drive=0.0, drift_ppm=0.0), RATE, RATE), x
    )
    assert _lag(x, y, 3000) == round(delay_ms * RATE / 1000)


def test_delay_holds_across_a_rate_change() -> None:
    """The sink's 22.05 kHz output heard by a 16 kHz microphone: still 40 ms later (±1 sample)."""
    far = (np.random.default_rng(3).standard_normal(44100) * 0.1).astype(np.float32)
    y = _run(SimRoom(DRY, 22050, RATE), far, block=220)
    import soxr

    x = soxr.resample(far, 22050, RATE).astype(np.float32)
    assert abs(_lag(x, y, 1500) - 640) <= 1


@pytest.mark.parametrize("echo_db", [0.0, -6.0, -12.0])
def test_direct_path_level(echo_db: float) -> None:
    x = _noise(2.0)
    y = _run(
        SimRoom(SimRoomSettings(echo_db=echo_db, rt60_s=0.0, clip_drive=0.0, drift_ppm=0.0), RATE, RATE), x
    )
    assert _db(y[RATE:], x[RATE - 640 : 2 * RATE - 640]) == pytest.approx(echo_db, abs=0.2)


def _rt60_from_energy_decay(ir: np.ndarray, start: int) -> float:
    """Schroeder backward integration; slope fitted between -5 and -25 dB, extrapolated to 60 dB."""
    energy = np.cumsum((ir[start:].astype(np.float64) ** 2)[::-1])[::-1]
    edc = 10 * np.log10(np.maximum(energy / energy[0], 1e-30))
    i5, i25 = int(np.argmax(edc <= -5)), int(np.argmax(edc <= -25))
    t = np.arange(i5, i25) / RATE
    slope = np.polyfit(t, edc[i5:i25], 1)[0]
    return -60.0 / slope


@pytest.mark.parametrize("rt60", [0.15, 0.3, 0.6])
def test_reverberant_tail_decays_at_the_configured_rt60(rt60: float) -> None:
    settings = SimRoomSettings(rt60_s=rt60, clip_drive=0.0, drift_ppm=0.0)
    impulse = np.zeros(int((rt60 + 0.2) * RATE), dtype=np.float32)
    impulse[0] = 1.0
    response = _run(SimRoom(settings, RATE, RATE), impulse)
    measured = _rt60_from_energy_decay(response, 641)  # the tail, after the direct tap
    assert measured == pytest.approx(rt60, rel=0.15)


def test_tail_carries_the_configured_share_of_the_echo_energy() -> None:
    ir = room_impulse_response(SimRoomSettings(tail_db=-6.0), RATE)
    direct, tail = float(ir[640] ** 2), float(np.sum(ir[641:].astype(np.float64) ** 2))
    assert 10 * math.log10(tail / direct) == pytest.approx(-6.0, abs=0.1)
    assert not np.any(ir[:640])


def test_clock_drift_stretches_the_echo() -> None:
    """At 200 ppm, 10 s of output is 32 samples longer and the echo lags ~31 samples more 9.5 s on."""
    ppm = 200.0
    x = _noise(10.0, seed=1)
    y = _run(SimRoom(SimRoomSettings(rt60_s=0.0, clip_drive=0.0, drift_ppm=ppm), RATE, RATE), x)
    assert len(y) - len(x) == pytest.approx(len(x) * ppm * 1e-6, abs=2)
    win = RATE // 4
    head = _lag(x[:win], y[: win + 1000], 800)
    at = int(9.5 * RATE)
    tail = _lag(x[at : at + win], y[at : at + win + 1000], 800)
    assert head == 640
    assert tail - head == pytest.approx(at * ppm * 1e-6, abs=2)


def test_default_drift_is_tens_of_ppm() -> None:
    x = _noise(5.0, seed=2)
    y = _run(SimRoom(SimRoomSettings(rt60_s=0.0, clip_drive=0.0), RATE, RATE), x)
    assert 1 <= len(y) - len(x) <= 8  # 40 ppm of 80000 samples = 3.2


def test_drift_resampler_is_block_size_independent_and_smooth() -> None:
    t = np.arange(RATE) / RATE
    sine = np.sin(2 * np.pi * 440 * t).astype(np.float32)
    r1, r2 = DriftResampler(1.0001), DriftResampler(1.0001)
    a = np.concatenate([r1.process(sine[i : i + 160]) for i in range(0, RATE, 160)])
    b = np.concatenate([r2.process(sine[i : i + 517]) for i in range(0, RATE, 517)])
    n = min(len(a), len(b))
    assert np.allclose(a[:n], b[:n], atol=1e-6)
    assert float(np.max(np.abs(np.diff(a)))) < 0.2  # no clicks at block edges (440 Hz step ≈ 0.17)


def test_drift_resampler_over_silence_takes_the_shortcut_and_gives_what_one_pass_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sound, 2 s of silence, sound, block by block: the silent blocks skip the interpolation (no
    ``concatenate``), and the output is the one a single pass over the whole signal gives."""
    x = np.concatenate([_noise(0.3, seed=3), np.zeros(2 * RATE, dtype=np.float32), _noise(0.3, seed=4)])
    whole = DriftResampler(1.00004).process(x)
    streamed = DriftResampler(1.00004)
    joins = 0
    real = np.concatenate

    def counted(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal joins
        joins += 1
        return real(*args, **kwargs)  # type: ignore[call-overload]

    blocks = [x[i : i + 160] for i in range(0, len(x), 160)]
    with monkeypatch.context() as mp:
        mp.setattr(np, "concatenate", counted)
        parts = [streamed.process(b) for b in blocks]
    out = np.concatenate(parts)
    assert len(out) == len(whole)
    assert np.allclose(out, whole, atol=1e-6)
    assert joins <= len(blocks) - 190  # 200 silent blocks, the first one after sound interpolates


def test_speaker_soft_clips_loud_peaks_but_not_quiet_audio() -> None:
    loud = np.array([0.9, -0.9], dtype=np.float32)
    quiet = np.array([0.01, -0.01], dtype=np.float32)
    assert np.all(np.abs(soft_clip(loud, 1.5)) < 0.6)
    assert np.allclose(soft_clip(quiet, 1.5), quiet, rtol=1e-3)
    assert np.array_equal(soft_clip(loud, 0.0), loud)


def test_room_is_deterministic_for_a_seed_and_differs_across_seeds() -> None:
    x = _noise(1.0, seed=4)
    a = _run(SimRoom(SimRoomSettings(), 22050, RATE), x, block=220)
    b = _run(SimRoom(SimRoomSettings(), 22050, RATE), x, block=441)
    c = _run(SimRoom(SimRoomSettings(seed=8), 22050, RATE), x, block=220)
    n = min(len(a), len(b))
    assert np.allclose(a[:n], b[:n], atol=1e-5)
    assert not np.allclose(a[: len(c)], c[: len(a)], atol=1e-3)


def test_streaming_convolution_matches_numpy() -> None:
    x, ir = _noise(0.5, seed=5), _noise(0.05, seed=6)
    conv = StreamingConvolver(ir)
    y = np.concatenate([conv.process(x[i : i + 333]) for i in range(0, len(x), 333)])
    assert np.allclose(y, np.convolve(x, ir)[: len(x)], atol=1e-5)


def test_streaming_convolution_of_silence_after_the_tail_skips_the_fft_and_still_matches() -> None:
    """Sound, then silence longer than the impulse response, then sound: the same as numpy's, and the
    silent blocks once the tail has died out take the shortcut (no FFT)."""
    ir = _noise(0.05, seed=6)
    x = np.concatenate([_noise(0.2, seed=5), np.zeros(len(ir) * 6, dtype=np.float32), _noise(0.2, seed=7)])
    conv = StreamingConvolver(ir)
    ffts = 0
    real_rfft = np.fft.rfft

    def counted(a: np.ndarray, n: int | None = None) -> np.ndarray:
        nonlocal ffts
        ffts += 1
        return real_rfft(a, n)

    blocks = range(0, len(x), 333)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.fft, "rfft", counted)
        y = np.concatenate([conv.process(x[i : i + 333]) for i in blocks])
    assert np.allclose(y, np.convolve(x, ir)[: len(x)], atol=1e-5)
    silent_after_tail = sum(1 for i in blocks if i >= 3200 + len(ir) + 333 and i + 333 <= 3200 + 6 * len(ir))
    assert silent_after_tail >= 3
    assert ffts <= len(blocks) + 1 - silent_after_tail  # one spectrum of the IR, one per sounding block


def test_room_echo_lays_the_echo_on_the_play_time_line() -> None:
    """Rendered at 22.05 kHz from t=1000 s on: the echo of an impulse played at t is heard at t + 40 ms."""
    room = RoomEcho(DRY, RATE)
    block = np.zeros(220, dtype=np.float32)
    for k in range(100):  # 1 s
        b = block.copy()
        if k == 50:
            b[0] = 1.0
        room.on_rendered(b, 1000.0 + k * 220 / 22050, 22050)
    heard = room.take(1600, 1000.0 + 50 * 220 / 22050)  # 100 ms from the impulse's play time
    peak = int(np.argmax(np.abs(heard)))
    assert abs(peak - 640) <= 2
    assert room.take(100, 2000.0).tolist() == [0.0] * 100  # nothing was played then


def test_settings_are_validated_with_the_key_named() -> None:
    with pytest.raises(ValueError, match=r"sim_room\.rt60_s"):
        SimRoomSettings(rt60_s=-1.0).validate()
    SimRoomSettings().validate()
