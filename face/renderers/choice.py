"""Build the renderer named by ``FaceSettings.renderer`` (explicit choice, no silent fallback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..settings import RENDERERS, FaceSettings
from . import Renderer

if TYPE_CHECKING:
    from ..web import FaceWebServer


def make_renderers(
    settings: FaceSettings,
    on_tap: Callable[[str], None],
    on_text: Callable[[str], None] | None = None,
) -> tuple[list[Renderer], FaceWebServer | None]:
    """Renderers for ``settings.renderer``, plus the web server to ``await start()`` when "browser"."""
    choice = settings.renderer.strip().lower()
    if choice == "none":
        return [], None
    if choice == "terminal":
        from .terminal import TerminalRenderer

        return [TerminalRenderer(width=settings.terminal_width)], None
    if choice == "pygame":
        from .pygame_renderer import PygameRenderer

        size = (settings.pygame_width, settings.pygame_height)
        return [PygameRenderer(on_tap=on_tap, fullscreen=settings.pygame_fullscreen, size=size)], None
    if choice == "browser":
        from ..web import FaceWebServer

        server = FaceWebServer(settings, on_tap=on_tap, on_text=on_text)
        return [server], server
    raise ValueError(f"face renderer {settings.renderer!r} unknown; choose one of {', '.join(RENDERERS)}")
