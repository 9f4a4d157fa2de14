"""How sure a benchmark's share is: the Wilson score interval of ``k`` successes in ``n`` trials.

A share from a few dozen trials moves a lot between runs (38 of 40 barge-ins within 300 ms is
95 %, but its 95 % interval reaches down to 83 %; 0 false starts in 72 replies still allows up to
5 per 100). Benchmarks print the interval beside the share so one lucky run does not read as a met
goal (docs/hearing.md, "Three runs on an Intel Xeon Sapphire Rapids VM"). Trials that come in
groups which move together (one sentence at several pause lengths) count as their groups
(``grouped_interval_pct``).
"""

from __future__ import annotations

import math

Z_95 = 1.959964
"""The standard normal quantile of a two-sided 95 % interval."""


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval (low, high) in [0, 1] of ``k`` successes in ``n`` trials; (0, 1)
    for no trials."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    return _wilson(k / n, n, z)


def _wilson(p: float, n: int, z: float) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def interval_pct(k: int, n: int) -> str:
    """``wilson_interval`` in percent, e.g. "83.5-98.6"."""
    low, high = wilson_interval(k, n)
    return f"{100 * low:.1f}-{100 * high:.1f}"


def grouped_interval_pct(k: int, n: int, groups: int) -> str:
    """The 95 % interval of the share ``k`` / ``n`` when the ``n`` trials come from ``groups``
    groups whose trials move together -- one sentence cut at three pause lengths, which the
    bench's hesitations split at all three or none of mostly: Wilson's at that share over
    ``groups`` trials, not ``n``. Exact when a group's trials always agree, wider than need be when
    they never do; the trials' own interval (``interval_pct``) would be too narrow, and two runs of
    the same clips a few points apart would look like a change (docs/hearing.md, "The sure model
    needs the sentence mark")."""
    if not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials")
    if n <= 0 or groups <= 0:
        return interval_pct(0, 0)
    low, high = _wilson(k / n, min(groups, n), Z_95)
    return f"{100 * low:.1f}-{100 * high:.1f}"
