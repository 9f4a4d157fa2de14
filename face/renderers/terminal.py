"""Terminal renderer: ANSI truecolour half-block drawing in place on a tty, a state line otherwise."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import numpy as np

from ..params import FaceParams
from .raster import rasterise

_LOGGER = logging.getLogger(__name__)

_HIDE_CURSOR = "\x1b[?25l"
_SHOW_CURSOR = "\x1b[?25h"
_CLEAR = "\x1b[2J"
_HOME = "\x1b[H"


def ansi_frame(rgb: np.ndarray) -> str:
    """Render an (h, w, 3) image as lines of "▀" cells (top pixel = foreground, bottom = background)."""
    h = rgb.shape[0] - rgb.shape[0] % 2
    lines = []
    for row in range(0, h, 2):
        top, bottom = rgb[row], rgb[row + 1]
        parts = []
        prev: tuple[int, ...] | None = None
        for x in range(rgb.shape[1]):
            key = (*top[x], *bottom[x])
            if key != prev:
                parts.append("\x1b[38;2;{};{};{}m\x1b[48;2;{};{};{}m".format(*key))
                prev = key
            parts.append("▀")
        lines.append("".join(parts) + "\x1b[0m")
    return "\n".join(lines)


class TerminalRenderer:
    """Draws the face in place when ``stream`` is a tty; else writes one line per state/expression change."""

    def __init__(self, stream: TextIO | None = None, width: int = 48, force_tty: bool | None = None) -> None:
        self._stream = stream or sys.stdout
        self._width = max(8, width)
        self._height = max(4, round(self._width * 2 / 3) // 2 * 2)
        tty = force_tty if force_tty is not None else self._stream.isatty()
        self._tty = bool(tty)
        self._started = False
        self._last_frame = ""
        self._last_summary = ""

    @property
    def watched(self) -> bool:
        """Renderer protocol: a terminal is always looked at (the in-place face and the state lines)."""
        return True

    @property
    def is_tty(self) -> bool:
        """True when drawing in place; False when writing state lines."""
        return self._tty

    def render(self, params: FaceParams) -> None:
        """Draw the frame (tty) or write a summary line if the state or expression changed."""
        if not self._tty:
            summary = f"face: state={params.state} expression={params.expression}"
            if summary != self._last_summary:
                self._last_summary = summary
                self._stream.write(summary + "\n")
                self._stream.flush()
            return
        frame = ansi_frame(rasterise(params, self._width, self._height))
        if frame == self._last_frame:
            return
        self._last_frame = frame
        prefix = _HOME
        if not self._started:
            prefix = _HIDE_CURSOR + _CLEAR + _HOME
            self._started = True
        status = f"\x1b[0m {params.state:<10} {params.expression:<10} {params.viseme:<4}\x1b[K"
        self._stream.write(prefix + frame + "\n" + status)
        self._stream.flush()

    def close(self) -> None:
        """Restore the cursor."""
        if self._tty and self._started:
            self._stream.write("\x1b[0m\n" + _SHOW_CURSOR)
            self._stream.flush()
            self._started = False
