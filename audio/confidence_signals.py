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


def step_stats(logits: list[Any], ids: list[int]) -> StepStats:
    """Token probability, margin and entropy of each generated token from the per-step logits."""
    probs, margins, entropies = [], [], []
    for step, t in zip(logits, ids, strict=False):
        z = np.asarray(step, dtype=np.float64).reshape(-1)
        finite = np.isfinite(z)
        z = np.where(finite, z, -np.inf)
        zmax = float(z.max())
        e = np.exp(z - zmax)
        total = float(e.sum())
        logp = z - zmax - math.log(total)
        probs.append(math.exp(float(logp[t])))
        other = float(np.max(np.delete(logp, t))) if z.size > 1 else -np.inf
        margins.append(min(20.0, float(logp[t]) - other))
        p = e / total
        entropies.append(float(-(p[p > 0] * logp[p > 0]).sum()))
    return StepStats(probs, margins, entropies)
