"""Small clock-free animators that keep the face alive: blinks, saccades, easing helpers."""

from __future__ import annotations

import math
import random


def smoothstep(u: float) -> float:
    """Ease-in-out of ``u`` clamped to 0..1."""
    u = 0.0 if u < 0.0 else 1.0 if u > 1.0 else u
    return u * u * (3.0 - 2.0 * u)


def approach(current: float, target: float, rate: float, dt: float) -> float:
    """Exponential approach of ``current`` to ``target`` at ``rate`` per second over ``dt``."""
    return target + (current - target) * math.exp(-rate * dt)


class Blinker:
    """Blinks at random intervals (sometimes a double blink); ``closure`` is 0 open .. 1 shut."""

    CLOSE_S = 0.06
    HOLD_S = 0.03
    OPEN_S = 0.09

    def __init__(self, rng: random.Random, min_s: float, max_s: float) -> None:
        self._rng = rng
        self._min = max(0.2, min_s)
        self._max = max(self._min, max_s)
        self._until_next = rng.uniform(self._min, self._max)
        self._phase = -1.0

    @property
    def duration(self) -> float:
        """Length of one blink in seconds."""
        return self.CLOSE_S + self.HOLD_S + self.OPEN_S

    def update(self, dt: float, enabled: bool) -> float:
        """Advance by ``dt`` seconds; return the lid closure now (0 when disabled)."""
        if self._phase >= 0.0:
            self._phase += dt
            if self._phase >= self.duration:
                self._phase = -1.0
        elif enabled:
            self._until_next -= dt
            if self._until_next <= 0.0:
                self._phase = 0.0
                double = self._rng.random() < 0.15
                self._until_next = 0.3 if double else self._rng.uniform(self._min, self._max)
        if self._phase < 0.0 or not enabled:
            return 0.0
        p = self._phase
        if p < self.CLOSE_S:
            return smoothstep(p / self.CLOSE_S)
        if p < self.CLOSE_S + self.HOLD_S:
            return 1.0
        return 1.0 - smoothstep((p - self.CLOSE_S - self.HOLD_S) / self.OPEN_S)


class Saccades:
    """Small random gaze shifts with eased motion around the pose's gaze."""

    MOVE_S = 0.14

    def __init__(self, rng: random.Random, min_s: float, max_s: float) -> None:
        self._rng = rng
        self._min = max(0.1, min_s)
        self._max = max(self._min, max_s)
        self._from = (0.0, 0.0)
        self._to = (0.0, 0.0)
        self._move_t = self.MOVE_S
        self._until_next = rng.uniform(self._min, self._max)
        self.x = 0.0
        self.y = 0.0

    def update(self, dt: float, amplitude: float) -> tuple[float, float]:
        """Advance by ``dt``; return the gaze offset (x, y) now."""
        self._until_next -= dt
        if self._until_next <= 0.0:
            self._until_next = self._rng.uniform(self._min, self._max)
            if amplitude > 0.0 and self._rng.random() < 0.3:
                target = (0.0, 0.0)  # come back to centre now and then
            else:
                target = (
                    self._rng.uniform(-amplitude, amplitude),
                    self._rng.uniform(-amplitude, amplitude) * 0.6,
                )
            self.look_at(*target)
        if self._move_t < self.MOVE_S:
            self._move_t += dt
        u = smoothstep(self._move_t / self.MOVE_S)
        self.x = self._from[0] + (self._to[0] - self._from[0]) * u
        self.y = self._from[1] + (self._to[1] - self._from[1]) * u
        return self.x, self.y

    def look_at(self, x: float, y: float) -> None:
        """Start an eased move from where the gaze is now to (x, y)."""
        self._from = (self.x, self.y)
        self._to = (x, y)
        self._move_t = 0.0
