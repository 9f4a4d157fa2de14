"""Terminal renderer: in-place ANSI drawing on a tty, one line per change otherwise."""

from __future__ import annotations

import io
import random

from face.controller import FaceController
from face.renderers.terminal import TerminalRenderer
from face.settings import FaceSettings
from face.snapshot import still_params
from face.state import FaceState


def test_non_tty_writes_one_line_per_change_only() -> None:
    out = io.StringIO()
    renderer = TerminalRenderer(out)  # StringIO is not a tty
    assert not renderer.is_tty
    c = FaceController(FaceSettings(), [renderer], random.Random(1))
    for _ in range(60):
        c.step(1 / 30)
    c.show_state(FaceState.LISTENING)
    for _ in range(60):
        c.step(1 / 30)
    c.set_expression("happy")
    for _ in range(60):
        c.step(1 / 30)
    c.close()
    assert out.getvalue().splitlines() == [
        "face: state=idle expression=neutral",
        "face: state=listening expression=neutral",
        "face: state=listening expression=happy",
    ]
    assert "\x1b" not in out.getvalue()


def test_tty_draws_in_place_and_restores_cursor() -> None:
    out = io.StringIO()
    renderer = TerminalRenderer(out, width=40, force_tty=True)
    renderer.render(still_params("idle"))
    first = out.getvalue()
    assert first.startswith("\x1b[?25l\x1b[2J\x1b[H")
    assert "▀" in first and "38;2;64;224;255" in first  # eye colour drawn
    assert first.count("\n") == 40 * 2 // 3 // 2  # rows of half-blocks + status line
    renderer.render(still_params("asleep"))
    second = out.getvalue()[len(first) :]
    assert second.startswith("\x1b[H") and "\x1b[2J" not in second  # redrawn in place, no scroll
    assert "asleep" in second
    size = len(out.getvalue())
    renderer.render(still_params("asleep"))
    assert len(out.getvalue()) == size  # an identical frame is not rewritten
    renderer.close()
    assert out.getvalue().endswith("\x1b[?25h")
