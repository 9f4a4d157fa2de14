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
    [
        ("echo_cancellation", "speex"),
        ("echo_delay_ms", -1),
        ("barge_in_speech_ms", 10),
        ("echo_guard_margin_db", 40.0),
        ("duck_db", 3.0),
        ("duck_weak_db", -70.0),
        ("weak_canceller_db", -1.0),
        ("early_duck_speech_ms", 20),
        ("early_duck_speech_ms", 120),  # not under barge_in_speech_ms: it would never come first
        ("early_duck_release_ms", 10),
    ],
)
def test_full_duplex_settings_are_validated_with_the_key_named(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"hearing\.{key}"):
        HearingSettings(**{key: value}).validate()  # type: ignore[arg-type]


def test_full_duplex_is_off_by_default() -> None:
    s = HearingSettings()
    s.validate()
    assert s.echo_cancellation == "off" and s.half_duplex
    assert s.barge_in_start_ms == 120 and s.duck_db == -18.0


def test_the_core_ducks_by_the_settings_default() -> None:
    """The core's rules and the hearing settings agree on the ducking depths when nothing is set (the
    runtime passes ``hearing.duck_db`` and the weak canceller's on; a rule built without them must
    not duck by other depths)."""
    from device.core.rules import Rules

    hearing, rules = HearingSettings(), Rules()
    assert rules.duck_db == hearing.duck_db
    assert (rules.duck_weak_db, rules.weak_canceller_db) == (hearing.duck_weak_db, hearing.weak_canceller_db)
    assert (rules.duck_hold_s, rules.early_duck_release_s) == (
        hearing.duck_hold_ms / 1000.0,
        hearing.early_duck_release_ms / 1000.0,
    )


def _pause(guard: EchoGuard, raws: list[float], clean_under_raw: float = 1.0) -> list[bool]:
    """Frames in a pause of the reply (the reference silent) at these raw levels, the suppressor
    let go (the cleaned level ``clean_under_raw`` dB under the raw one), the VAD says speech."""
    return [guard.allows(True, raw, raw - clean_under_raw, -90.0) for raw in raws]


def _converged(**kwargs: int) -> EchoGuard:
    guard = EchoGuard(frame_ms=30, **kwargs)  # type: ignore[arg-type]
    _echo_frames(guard, 20.0, 200)  # a 20 dB canceller, learnt
    return guard


def test_the_replys_tail_leaking_in_its_pause_does_not_pass() -> None:
    """The suppressor lets go in a pause and the reverberation leaks at close to its raw level:
    the tracked ERLE (20 dB) calls it speech, the tail rule does not (the raw level decays)."""
    decay = [-30.0 - 3.5 * k for k in range(10)]  # RT60 0.5 s: ~12 dB per 100 ms, in 30 ms frames
    without = _converged()
    without.tail_fall_db = 0.0
    assert _pause(without, decay)[3:] == [True] * 7  # the leak the rule is for
    assert not any(_pause(_converged(), decay))


def test_the_user_speaking_in_a_pause_of_the_reply_passes() -> None:
    """Speech lifts the raw level or holds it: once it stops falling, the frames pass."""
    guard = _converged()
    heard = _pause(guard, [-30.0, -34.0, -38.0, -42.0, -30.0, -29.0, -31.0, -30.0, -29.5, -30.5])
    assert heard[:4] == [False] * 4  # the first frames: tail, judged by the ERLE gate too
    assert heard[4:] == [True] * 6


def test_the_tail_rule_reads_the_pause_as_the_microphone_hears_it() -> None:
    """The echo arrives 90 ms (three frames) after the reference: the microphone hears the reply's
    pause three frames late, and its end three frames late too. Read that late, the rule holds the
    whole tail; read at the reference's own time it lets through the last frames of the tail, which
    the microphone still hears after the reference has resumed (a false start measured at 120 ms)."""
    far = [-90.0] * 6 + [-20.0] * 4
    raw = [-30.0] * 3 + [-30.0 - 3.5 * k for k in range(1, 7)] + [-30.0]

    def heard(guard: EchoGuard) -> list[bool]:
        return [guard.allows(True, r, r - 1.0, f) for r, f in zip(raw, far, strict=True)]

    assert heard(_converged(echo_delay_ms=90))[3:9] == [False] * 6
    assert heard(_converged())[6:9] == [True] * 3


def test_once_someone_speaks_in_the_pause_their_word_ends_are_not_taken_for_the_tail() -> None:
    """A user answering right after the reply (within its hold): the raw level rose over its lowest
    in the pause, so the ends of their words, falling as fast as a tail, still pass; without that
    check the first word's end would be cut and the turn end at their first comma."""
    tail = [-30.0 - 4.0 * k for k in range(8)]  # the reply's echo dies away
    word = [-28.0, -26.0, -27.0, -33.0, -40.0, -47.0]  # "Apple," and its falling end
    guard = _converged()
    assert _pause(guard, tail + word)[-3:] == [True] * 3
    always = _converged()
    always.tail_rise_db = 1000.0
    assert _pause(always, tail + word)[-3:] == [False] * 3


def test_the_removal_cap_rejects_a_leak_the_gate_would_pass_and_keeps_the_user() -> None:
    """``removed_max_db`` (off by default; the bench's ``~<dB>`` guards): after 45 dB of ERLE a leak
    20 dB under the raw level stands 25 dB over the expected residue and passes the gate; with a
    cap of 15 dB it does not, while the user, 5 dB under the raw level, passes either way."""
    plain, capped = EchoGuard(), EchoGuard(removed_max_db=15.0)
    assert plain.removed_max_db == 0.0
    for guard in (plain, capped):
        _echo_frames(guard, 45.0, 300)
    assert plain.allows(True, -25.0, -45.0, FAR) and not capped.allows(True, -25.0, -45.0, FAR)
    assert plain.allows(True, -25.0, -30.0, FAR) and capped.allows(True, -25.0, -30.0, FAR)
