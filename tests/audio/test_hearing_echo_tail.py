"""The measured echo tail (audio.hearing.echo_tail.EchoTail) on synthetic level sequences: 20 ms blocks at
16 kHz, levels in dBFS, over a room whose noise floor (the VAD's, in the Listener) is -65 dBFS
unless a test says otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from audio.hearing.echo_tail import EchoTail

RATE = 16000
BLOCK = 320  # 20 ms


def _tail() -> EchoTail:
    echo = EchoTail(RATE, min_samples=RATE * 300 // 1000, max_samples=RATE, margin_db=6.0)
    echo.start()
    return echo


def _run(echo: EchoTail, levels: list[float], floor_db: float | None = -65.0) -> list[bool]:
    """Feed the levels until the tail ends; the drop decision per block fed."""
    out = []
    for db in levels:
        out.append(echo.drop(BLOCK, db, floor_db))
        if not echo.active:
            break
    return out


def _ms(blocks: int) -> int:
    return blocks * BLOCK * 1000 // RATE


def test_quiet_room_ends_after_the_minimum() -> None:
    echo = _tail()
    dropped = _run(echo, [-64.0] * 100)
    assert dropped == [True] * 15 + [False]  # 300 ms, then the first block is heard
    assert echo.ended_by == "floor" and echo.dropped == RATE * 300 // 1000


@pytest.mark.parametrize("rt60", [0.4, 0.6, 0.8])
def test_reverberant_room_drops_the_echo_until_it_reaches_the_floor(rt60: float) -> None:
    start_db = -20.0
    levels = [start_db - 60.0 * (i * BLOCK / RATE) / rt60 for i in range(100)]
    dropped = _run(_tail(), levels)
    # The echo is within 6 dB of the -65 dB floor after (65 - 6 - 20) / 60 * RT60 seconds.
    expected_ms = max(300, 39.0 / 60.0 * rt60 * 1000)
    assert abs(_ms(sum(dropped)) - expected_ms) <= 20
    assert dropped[-1] is False


def test_someone_speaking_during_the_echo_ends_it_at_once() -> None:
    echo = _tail()
    levels = [-20.0 - 100.0 * i * BLOCK / RATE for i in range(20)] + [-28.0] * 10  # answer at 400 ms
    dropped = _run(echo, levels)
    assert echo.ended_by == "onset" and dropped == [True] * 20 + [False]


def test_a_sound_that_does_not_decay_is_not_echo() -> None:
    """A television on after the reply, or the user talking since during the minimum (syllables
    within 10 dB of each other): not falling, so heard right after the minimum."""
    echo = _tail()
    assert _run(echo, [-30.0] * 200) == [True] * 15 + [False]
    assert echo.ended_by == "steady"
    talking = [-28.0 + 4.0 * np.sin(i * 0.9) for i in range(200)]
    echo = _tail()
    dropped = _run(echo, [-20.0 - 100.0 * i * BLOCK / RATE for i in range(5)] + talking)
    assert echo.ended_by == "steady" and _ms(sum(dropped)) <= 340


def test_a_very_long_echo_is_dropped_at_most_max() -> None:
    echo = _tail()
    dropped = _run(echo, [-10.0 - 20.0 * i * BLOCK / RATE for i in range(200)], floor_db=-100.0)  # RT60 3 s
    assert echo.ended_by == "max" and _ms(sum(dropped)) == 1000 and dropped[-1] is False


def test_without_a_measured_floor_only_the_minimum_applies() -> None:
    echo = _tail()
    dropped = _run(echo, [-30.0] * 100, floor_db=None)
    assert echo.ended_by == "floor" and _ms(sum(dropped)) == 300


def test_speaking_again_cancels_the_tail() -> None:
    echo = _tail()
    assert echo.drop(BLOCK, -20.0, -65.0)
    echo.cancel()
    assert not echo.drop(BLOCK, -20.0, -65.0)
