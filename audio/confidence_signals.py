"""Per-token uncertainty signals from Whisper's per-step vocabulary logits (for the confidence)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StepStats:
    """Per generated token: its probability, log-prob margin to the best other token, entropy (nats)."""

    probs: list[float]
    margins: list[float]
    entropies: list[float]


_FLOOR = -1e4
"""Stand-in for suppressed (-inf) logits: exp() underflows to 0 and 0 * floor stays 0."""


def step_stats(logits: list[Any], ids: list[int]) -> StepStats:
    """Token probability, margin and entropy of each generated token from the per-step logits."""
    n = min(len(logits), len(ids))
    if n == 0:
        return StepStats([], [], [])
    z = np.stack([np.asarray(step, dtype=np.float32).reshape(-1) for step in logits[:n]])
    z = np.nan_to_num(z, nan=_FLOOR, neginf=_FLOOR, posinf=_FLOOR)
    rows = np.arange(n)
    chosen = np.asarray(ids[:n])
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, dtype=np.float64)
    mine = z[rows, chosen].astype(np.float64) - np.log(total)
    z[rows, chosen] = _FLOOR
    other = z.max(axis=1).astype(np.float64) - np.log(total) if z.shape[1] > 1 else np.full(n, -np.inf)
    z[rows, chosen] = mine + np.log(total)
    entropies = np.log(total) - (e * z).sum(axis=1, dtype=np.float64) / total
    return StepStats(
        [math.exp(v) for v in mine.tolist()],
        [min(20.0, v) for v in (mine - other).tolist()],
        entropies.tolist(),
    )
