"""Full-screen (or windowed) pygame-ce renderer; a click or touch on the face is a tap."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from ..geometry import FaceLayout, face_ops
from ..params import FaceParams, hex_to_rgb

_LOGGER = logging.getLogger(__name__)


class PygameRenderer:
    """Draws the face with pygame (SDL KMSDRM on a bare Pi, a window elsewhere, ``dummy`` in tests).

    ``on_tap("screen")`` is called for a mouse click or finger touch. pygame is imported here, so the
    rest of the face works without it.
    """

    def __init__(
        self,
        on_tap: Callable[[str], None] | None = None,
        fullscreen: bool = True,
        size: tuple[int, int] = (800, 480),
    ) -> None:
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        try:
            import pygame
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "the pygame renderer needs pygame-ce (pip install 'pygame-ce>=2.5,<3')"
            ) from exc
        self._pg: Any = pygame
        self._on_tap = on_tap
        pygame.display.init()
        try:
            if fullscreen:
                self._screen = pygame.display.set_mode((0, 0), pygame.FULLSCREEN | pygame.NOFRAME)
            else:
                self._screen = pygame.display.set_mode(size)
        except pygame.error as exc:
            pygame.display.quit()
            driver = os.environ.get("SDL_VIDEODRIVER", "(auto)")
            raise RuntimeError(f"pygame could not open a display (SDL_VIDEODRIVER={driver}): {exc}") from exc
        pygame.display.set_caption("robot-face")
        pygame.mouse.set_visible(not fullscreen)
        self._layout = FaceLayout(*self._screen.get_size())
        self._closed = False
        self.taps = 0
        """Taps seen so far."""

    @property
    def surface(self) -> Any:
        """The display surface (for tests: ``pygame.image.save``)."""
        return self._screen

    @property
    def watched(self) -> bool:
        """Renderer protocol: a display is always looked at."""
        return True

    def render(self, params: FaceParams) -> None:
        """Handle input events, then draw and flip one frame."""
        if self._closed:
            return
        self.poll_events()
        pg = self._pg
        screen = self._screen
        layout = self._layout
        s = layout.scale
        screen.fill(hex_to_rgb(params.background))
        for op in face_ops(params):
            if op.kind == "rrect":
                x, y, w, h, r = op.args
                px, py = layout.to_px(x, y)
                rect = pg.Rect(round(px), round(py), max(1, round(w * s)), max(1, round(h * s)))
                pg.draw.rect(screen, op.colour, rect, border_radius=round(r * s))
            elif op.kind == "circle":
                x, y, r = op.args
                pg.draw.circle(screen, op.colour, layout.to_px(x, y), max(1.0, r * s))
            else:
                pg.draw.polygon(screen, op.colour, [layout.to_px(x, y) for x, y in op.points])
        pg.display.flip()

    def poll_events(self) -> None:
        """Turn clicks/touches into taps; a window close request is logged (the daemon decides)."""
        pg = self._pg
        for event in pg.event.get():
            if event.type in (pg.MOUSEBUTTONDOWN, pg.FINGERDOWN):
                if event.type == pg.MOUSEBUTTONDOWN and getattr(event, "touch", False):
                    continue  # the FINGERDOWN for the same touch is counted
                self.taps += 1
                if self._on_tap is not None:
                    try:
                        self._on_tap("screen")
                    except Exception:
                        _LOGGER.exception("on_tap callback failed")
            elif event.type == pg.QUIT:
                _LOGGER.info("face window close requested (ignored; stop the daemon instead)")

    def close(self) -> None:
        """Close the display."""
        if not self._closed:
            self._closed = True
            self._pg.display.quit()
