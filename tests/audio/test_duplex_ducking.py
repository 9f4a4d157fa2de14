"""Ducking at the output: the reply goes on at a lower level while the user speaks over it, ramping
down in ``DUCK_ATTACK_MS`` and back up in ``DUCK_RELEASE_MS``, without a step (no click)."""

from __future__ import annotations

import numpy as np

from audio.speaking.playback import DUCK_ATTACK_MS, DUCK_RELEASE_MS, PlaybackQueue, QueuedPiece

RATE = 16000
BLOCK = 160


def render(q: PlaybackQueue, blocks: int) -> np.ndarray:
    out = []
    for _ in range(blocks):
        block = np.zeros(BLOCK, np.float32)
        q.render(block)
        out.append(block)
    return np.concatenate(out)


def test_ducking_ramps_down_to_its_level_and_back_without_a_step() -> None:
    q = PlaybackQueue(rate=RATE, volume=1.0)
    q.push(QueuedPiece("r1", 1, np.full(RATE * 3, 0.5, np.float32), 0, 1, ()), q.generation)
    before = render(q, 10)
    q.set_duck(10 ** (-12 / 20))
    down = render(q, 20)  # 200 ms
    q.set_duck(1.0)
    up = render(q, 40)  # 400 ms
    assert np.allclose(before, 0.5)
    level_db = 20 * np.log10(down[-BLOCK:] / 0.5)
    assert np.allclose(level_db, -12.0, atol=0.05)
    attack = int(np.argmax(down <= down[-1] + 1e-6))
    assert abs(attack - RATE * DUCK_ATTACK_MS / 1000 * (1 - 10 ** (-12 / 20))) <= BLOCK
    release = int(np.argmax(up >= 0.5 - 1e-6))
    assert abs(release - RATE * DUCK_RELEASE_MS / 1000 * (1 - 10 ** (-12 / 20))) <= BLOCK
    steps = np.abs(np.diff(np.concatenate([before, down, up])))
    assert steps.max() < 0.5 / 400  # a ramp, no step
    assert np.allclose(up[-BLOCK:], 0.5) and q.duck == 1.0


def test_ducking_multiplies_the_volume_and_a_volume_change_keeps_it() -> None:
    q = PlaybackQueue(rate=RATE, volume=0.8)
    q.push(QueuedPiece("r1", 1, np.full(RATE, 0.5, np.float32), 0, 1, ()), q.generation)
    q.set_duck(0.5)
    render(q, 20)
    q.set_volume(0.4)
    out = render(q, 5)
    assert np.allclose(out[-BLOCK:], 0.5 * 0.4 * 0.5, atol=1e-6)
