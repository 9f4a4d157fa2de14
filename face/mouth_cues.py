"""What the face needs of a lip-sync timeline: mouth shapes with their times.

The face does not import ``audio``: any object with ``start``, ``end`` (seconds from the timeline's
start) and ``viseme`` (a key of ``face.poses.VISEME_SHAPES``) is a cue; ``audio.events.VisemeCue``,
which the speaking part produces, is one. The face's own demo, bench and snapshots build ``Cue``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class MouthCue(Protocol):
    """Mouth shape ``viseme`` from ``start`` to ``end`` seconds after the timeline's start."""

    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...

    @property
    def viseme(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Cue:
    """A plain ``MouthCue``."""

    start: float
    end: float
    viseme: str
