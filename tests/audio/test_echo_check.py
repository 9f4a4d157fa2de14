"""The echo path measured on the hardware (``audio.hearing.echo_check``, behind ``doctor --deep``):
the test sound through the simulated room (the hardware stand-in) and WebRTC's real canceller."""

from __future__ import annotations

import numpy as np
import pytest

from audio.edges.sim_room import SimRoomSettings
from audio.hearing.echo_check import LEAD_S, MATCH_MIN, MAX_LAG_MS, RATE, echo_lag, measure_echo, probe_signal
from audio.hearing.front_end import FrontEndOptions
from audio.hearing.vad import frame_level_db
from audio.tools.bench_duplex import echo_of
from tests.audio.test_duplex_front_end import WeakCanceller


def room_echo(far: np.ndarray, rate: int, room: SimRoomSettings, noise_db: float = -65.0) -> np.ndarray:
    """What a microphone at 16 kHz hears of ``far`` played at ``rate`` in ``room`` while it plays
    (the bench's ``echo_of``), with room noise."""
    echo = echo_of(far, rate, room)[: len(far) * RATE // rate]
    noise = np.random.default_rng(1).normal(0.0, 10 ** (noise_db / 20), len(echo))
    return (echo + noise).astype(np.float32)


def test_the_probe_sound_is_speech_like_with_pauses() -> None:
    x = probe_signal(48000)
    lead = int(LEAD_S * 48000)
    assert len(x) == lead + 6 * 48000 and not x[:lead].any()  # the room alone first
    x = x[lead:]
    frames = [frame_level_db(x[i : i + 480]) for i in range(0, len(x) - 479, 480)]
    assert -23.0 < 20 * np.log10(float(np.sqrt(np.mean(np.square(x[:33600]))))) < -17.0
    assert min(frames[75:95]) < -100.0  # the pause 0.7-1.0 s into every second
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / 48000)
    assert spectrum[freqs > 4100].sum() < 1e-4 * spectrum.sum()  # band-limited (the syllables smear a little)
    assert np.array_equal(x, probe_signal(48000)[lead:]) and not np.array_equal(
        x, probe_signal(48000, seed=1)[lead:]
    )


@pytest.mark.parametrize("delay_ms", [10.0, 120.0, 250.0])
def test_the_lag_is_where_the_room_puts_the_echo(delay_ms: float) -> None:
    far = probe_signal(RATE)
    mic = room_echo(far, RATE, SimRoomSettings(delay_ms=delay_ms, echo_db=-6.0, rt60_s=0.3))
    lag, correlation = echo_lag(far, mic)
    assert abs(lag - delay_ms) <= 2.0
    assert correlation > 0.5
    assert echo_lag(far, np.zeros_like(mic))[1] == 0.0
    assert MAX_LAG_MS >= 500


@pytest.mark.parametrize(("delay_ms", "echo_db", "rt60_s"), [(40.0, -6.0, 0.3), (10.0, 0.0, 0.6)])
def test_webrtc_removes_a_rooms_echo_strongly(delay_ms: float, echo_db: float, rt60_s: float) -> None:
    far = probe_signal(48000) * 0.8
    mic = room_echo(far, 48000, SimRoomSettings(delay_ms=delay_ms, echo_db=echo_db, rt60_s=rt60_s))
    measured = measure_echo(far, 48000, mic, RATE)
    assert abs(measured.lag_ms - delay_ms) <= 2.0
    assert measured.heard_db > 15.0
    assert measured.removal_db is not None and measured.removal_db >= 30.0


def test_a_weak_canceller_is_measured_weak() -> None:
    """A canceller that removes about 6 dB (WebRTC's on some hardware): the echo matches, the
    removal says it."""
    far = probe_signal(48000) * 0.8
    mic = room_echo(far, 48000, SimRoomSettings())
    options = FrontEndOptions(echo_delay_ms=40)
    measured = measure_echo(far, 48000, mic, RATE, WeakCanceller(options))
    assert measured.correlation >= MATCH_MIN and measured.heard_db > 15.0
    assert measured.removal_db is not None and 4.0 < measured.removal_db < 8.0


@pytest.mark.parametrize(
    "room",
    [
        SimRoomSettings(echo_db=0.0, drift_ppm=5000.0),  # clocks 0.5 % apart (a broken resampler)
        SimRoomSettings(delay_ms=800.0),  # a Bluetooth speaker: later than the canceller looks
    ],
)
def test_an_echo_the_canceller_cannot_follow_does_not_match(room: SimRoomSettings) -> None:
    far = probe_signal(RATE) * 0.8
    measured = measure_echo(far, RATE, room_echo(far, RATE, room), RATE)
    assert measured.heard_db > 15.0  # heard, however late
    assert measured.correlation < MATCH_MIN


def test_a_microphone_that_hears_something_else_does_not_match() -> None:
    far = probe_signal(48000) * 0.8
    other = np.roll(probe_signal(RATE, seed=9), RATE // 3)  # another program's sound, not the robot's
    measured = measure_echo(far, 48000, other, RATE)
    assert measured.correlation < MATCH_MIN


def test_a_test_sound_not_heard_is_said() -> None:
    far = probe_signal(48000) * 0.8
    quiet = np.random.default_rng(2).normal(0.0, 10 ** (-55 / 20), len(far) // 3).astype(np.float32)
    assert measure_echo(far, 48000, quiet, RATE).heard_db < 6.0
