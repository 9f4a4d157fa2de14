"""Renderers: draw FaceParams somewhere (terminal, PNG, pygame; the browser one is ``face.web``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..params import FaceParams


@runtime_checkable
class Renderer(Protocol):
    """Something that draws a face frame. ``render`` is called from the event loop at frame rate."""

    @property
    def watched(self) -> bool:
        """Whether anyone can see the frames now (a display: always; the browser face: while a page
        is connected). While no renderer is watched the controller runs at ``FaceSettings.idle_fps``."""

    def render(self, params: FaceParams) -> None:
        """Draw one frame (must not block for long)."""

    def close(self) -> None:
        """Release the output (window, terminal state)."""
