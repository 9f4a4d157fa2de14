"""The guard against the robot's own voice (``EchoGuard``, synthetic level sequences) and the full
duplex settings."""

from __future__ import annotations

import numpy as np
import pytest

from audio.hearing.echo_tail import EchoGuard
from audio.hearing.settings import HearingSettings

FAR = -20.0
"""The reference's level while the reply plays (dBFS)."""


def _echo_frames(guard: EchoGuard, erle: float, n: int, seed: int = 0) -> list[bool]:
    """``n`` frames of echo only: the canceller removes ``erle`` dB (± 2 dB), the VAD says speech."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        raw = -30.0 + float(rng.uniform(-8, 8))
        out.append(guard.allows(True, raw, raw - erle + float(rng.uniform(-2, 2)), FAR))
    return out


@pytest.mark.parametrize("erle", [6.0, 10.0, 30.0])
def test_residual_echo_never_passes_whatever_the_canceller_removes(erle: float) -> None:
    guard = EchoGuard()
    assert not any(_echo_frames(guard, erle, 500))
    assert guard.erle_db == pytest.approx(erle, abs=2.0)


def test_the_users_speech_over_a_strong_canceller_passes() -> None:
    """Learned 30 dB of ERLE; the user adds energy the canceller leaves: clean only 8 dB under raw."""
    guard = EchoGuard()
    _echo_frames(guard, 30.0, 300)
    assert all(guard.allows(True, -25.0, -33.0, FAR) for _ in range(20))


def test_the_users_speech_needs_to_stand_above_a_weak_cancellers_residue() -> None:
    """A 6 dB canceller: the cleaned level can rise at most 6 dB over its residue, so half of that
    is asked for: a user as loud as the echo (+4 dB) passes, one 6 dB quieter (+1.8 dB) does not."""
    guard = EchoGuard()
    _echo_frames(guard, 6.0, 300)

    def levels(user: float) -> tuple[float, float]:  # (raw, clean) dB for echo power 1
        return -30.0 + 10 * np.log10(1.0 + user), -30.0 + 10 * np.log10(0.25 + user)

    assert guard.allows(True, *levels(1.0), FAR)
    assert not guard.allows(True, *levels(0.25), FAR)


def test_speech_the_vad_rejects_never_passes() -> None:
    guard = EchoGuard()
    _echo_frames(guard, 30.0, 100)
    assert not guard.allows(False, -25.0, -26.0, FAR)


def test_once_the_far_end_has_been_silent_for_its_hold_the_vad_decides_alone() -> None:
    guard = EchoGuard(frame_ms=30, hold_ms=150)  # five frames
    _echo_frames(guard, 6.0, 100)
    quiet = [guard.allows(True, -30.0, -36.0, -90.0) for _ in range(8)]
    assert quiet[:5] == [False] * 5  # the echo may still ring
    assert quiet[5:] == [True] * 3


@pytest.mark.parametrize(
    ("key", "value"),
    [("echo_cancellation", "speex"), ("echo_delay_ms", -1), ("barge_in_speech_ms", 10), ("duck_db", 3.0)],
)
def test_full_duplex_settings_are_validated_with_the_key_named(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"hearing\.{key}"):
        HearingSettings(**{key: value}).validate()  # type: ignore[arg-type]


def test_full_duplex_is_off_by_default() -> None:
    s = HearingSettings()
    s.validate()
    assert s.echo_cancellation == "off" and s.half_duplex
    assert s.barge_in_speech_ms == 150 and s.duck_db == -12.0
