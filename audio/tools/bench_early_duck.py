"""The early duck as ``robot-face bench duplex`` replays it: when the device's reply ducks for a
barge-in, and the dips of the reply with nobody speaking (``hearing.early_duck_speech_ms``,
``hearing.early_duck_release_ms``; the core's rule: ``device.core.rules.hearing.on_barge_in_suspected``).

Times are seconds on the bench's microphone clock. A stir (``SpeechStirred``) is said when the
endpointer decides it (``at``) and stamped at the window's first voiced frame (``voiced``): the
device ducks at ``at`` and lets go at ``voiced`` + the release unless a start comes first; another
stir meanwhile moves the release on.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stir:
    """A ``SpeechStirred``: decided at ``at``, its first voiced frame at ``voiced`` (s)."""

    at: float
    voiced: float


@dataclass
class Detections:
    """What the VAD path said on a signal: utterance starts (when decided, s) and stirs."""

    starts: list[float] = field(default_factory=list)
    stirs: list[Stir] = field(default_factory=list)


@dataclass(frozen=True)
class Dip:
    """The reply ducked from ``start`` to ``end`` (s) with no barge-in confirmed."""

    start: float
    end: float


def _dips_and_ducks(found: Detections, release_s: float) -> tuple[list[Dip], list[tuple[float, float]]]:
    """(the early ducks no start followed, each early duck a start took over as (duck, start))."""
    dips: list[Dip] = []
    taken: list[tuple[float, float]] = []
    starts = sorted(found.starts)
    current: tuple[float, float] | None = None  # (ducked at, lets go at)
    for stir in sorted(found.stirs, key=lambda s: s.at):
        if current is not None and stir.at >= current[1]:
            dips.append(Dip(*current))
            current = None
        release = stir.voiced + release_s
        current = (stir.at, release) if current is None else (current[0], max(current[1], release))
        start = next((t for t in starts if current[0] <= t < current[1]), None)
        if start is not None:
            taken.append((current[0], start))
            current = None
    if current is not None:
        dips.append(Dip(*current))
    return dips, taken


def false_dips(found: Detections, release_s: float) -> list[Dip]:
    """The early ducks no barge-in followed: the reply dipped and came back (with nobody speaking,
    each is the device's own voice passing the shorter start)."""
    return _dips_and_ducks(found, release_s)[0]


def duck_from(found: Detections, after: float, release_s: float) -> float | None:
    """When the device ducks for the first barge-in started at or after ``after`` (s): the early
    duck that start took over, else the start itself (None: no start)."""
    start = next((t for t in sorted(found.starts) if t >= after), None)
    if start is None:
        return None
    early = [duck for duck, confirmed in _dips_and_ducks(found, release_s)[1] if confirmed == start]
    return min([start, *early])
