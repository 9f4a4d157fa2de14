"""Turn FaceParams into a few drawing operations in face units, shared by every renderer.

Renderers map face units to pixels with ``FaceLayout`` and draw the operations in order
(later ones paint over earlier ones; lids are painted in the background colour, RoboEyes-style).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .params import FaceParams, hex_to_rgb, scaled_rgb

RGB = tuple[int, int, int]
Point = tuple[float, float]

FACE_WIDTH = 1.8
"""Width of the area the face occupies, in face units."""
FACE_HEIGHT = 1.6
"""Height of the area the face occupies, in face units."""
_BROW_GAP = 0.1
_BROW_THICK = 0.055
_MOUTH_LINE = 0.035
_SAMPLES = 13


@dataclass(frozen=True, slots=True)
class DrawOp:
    """One shape: ``rrect`` (x, y, w, h, radius), ``poly`` (points) or ``circle`` (x, y, radius)."""

    kind: Literal["rrect", "poly", "circle"]
    colour: RGB
    args: tuple[float, ...] = ()
    points: tuple[Point, ...] = ()

    def to_list(self) -> list[object]:
        """Compact JSON form: [kind, "#rrggbb", args or flat points]."""
        colour = "#{:02x}{:02x}{:02x}".format(*self.colour)
        if self.kind == "poly":
            flat = [round(v, 4) for pt in self.points for v in pt]
            return [self.kind, colour, flat]
        return [self.kind, colour, [round(v, 4) for v in self.args]]


@dataclass(frozen=True, slots=True)
class FaceLayout:
    """Maps face units to pixels for a canvas of ``width`` x ``height``."""

    width: int
    height: int

    @property
    def scale(self) -> float:
        """Pixels per face unit."""
        return min(self.width / FACE_WIDTH, self.height / FACE_HEIGHT)

    def to_px(self, x: float, y: float) -> tuple[float, float]:
        """Face units to pixel coordinates."""
        s = self.scale
        return self.width / 2 + x * s, self.height / 2 + (y - 0.05) * s


def _mix(fg: RGB, bg: RGB, alpha: float) -> RGB:
    a = min(1.0, max(0.0, alpha))
    return (
        round(bg[0] + (fg[0] - bg[0]) * a),
        round(bg[1] + (fg[1] - bg[1]) * a),
        round(bg[2] + (fg[2] - bg[2]) * a),
    )


def face_ops(p: FaceParams) -> list[DrawOp]:
    """The drawing operations for one frame, in paint order (background not included)."""
    fg = scaled_rgb(p.colour, p.brightness)
    bg = hex_to_rgb(p.background)
    ops: list[DrawOp] = []
    eyes = (
        (p.eye_l_x, p.eye_l_y, p.eye_l_w, p.eye_l_h, p.lid_l_top, p.lid_l_top_angle, p.lid_l_bottom, 1.0),
        (p.eye_r_x, p.eye_r_y, p.eye_r_w, p.eye_r_h, p.lid_r_top, p.lid_r_top_angle, p.lid_r_bottom, -1.0),
    )
    for ex, ey, w, h, top, angle, bottom, inner in eyes:
        w, h = max(0.01, w), max(0.01, h)
        left, right, upper, lower = ex - w / 2, ex + w / 2, ey - h / 2, ey + h / 2
        radius = max(0.0, min(1.0, p.eye_roundness)) * min(w, h) / 2
        ops.append(DrawOp("rrect", fg, (left, upper, w, h, radius)))
        if p.pupil_size > 0.01:
            r = p.pupil_size * w / 2
            ops.append(DrawOp("circle", bg, (ex + p.gaze_x * w * 0.22, ey + p.gaze_y * h * 0.22, r)))
        if top > 0.001:
            slope = math.tan(math.radians(angle)) * inner
            reach = h + abs(slope) * w / 2
            y0 = upper + top * reach
            x0, x1 = left - 0.01, right + 0.01
            ops.append(
                DrawOp(
                    "poly",
                    bg,
                    points=(
                        (x0, upper - 0.01),
                        (x1, upper - 0.01),
                        (x1, y0 + slope * (x1 - ex)),
                        (x0, y0 + slope * (x0 - ex)),
                    ),
                )
            )
        if bottom > 0.001:
            pts: list[Point] = [(right + 0.01, lower + 0.01), (left - 0.01, lower + 0.01)]
            for i in range(_SAMPLES):
                u = -1.0 + 2.0 * i / (_SAMPLES - 1)
                x = ex + u * (w / 2 + 0.01)
                pts.append((x, lower - bottom * h * (1.0 - 0.5 * u * u)))
            ops.append(DrawOp("poly", bg, points=tuple(pts)))
    if p.brow_alpha > 0.02:
        colour = _mix(fg, bg, p.brow_alpha)
        for ex, ey, w, h, lift, angle, inner in (
            (p.eye_l_x, p.eye_l_y, p.eye_l_w, p.eye_l_h, p.brow_l_y, p.brow_l_angle, 1.0),
            (p.eye_r_x, p.eye_r_y, p.eye_r_w, p.eye_r_h, p.brow_r_y, p.brow_r_angle, -1.0),
        ):
            cy = ey - h / 2 - _BROW_GAP - lift
            half = w * 0.42
            dy = math.tan(math.radians(angle)) * half * inner
            ops.append(DrawOp("poly", colour, points=_thick_line(ex - half, cy - dy, ex + half, cy + dy)))
    if p.mouth_alpha > 0.02:
        ops.append(DrawOp("poly", _mix(fg, bg, p.mouth_alpha), points=_mouth(p)))
    return ops


def _thick_line(x0: float, y0: float, x1: float, y1: float) -> tuple[Point, ...]:
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    nx, ny = -(y1 - y0) / length * _BROW_THICK / 2, (x1 - x0) / length * _BROW_THICK / 2
    return ((x0 + nx, y0 + ny), (x1 + nx, y1 + ny), (x1 - nx, y1 - ny), (x0 - nx, y0 - ny))


def _mouth(p: FaceParams) -> tuple[Point, ...]:
    """Mouth outline: an upper lip curve and a lower lip curve below it."""
    half = 0.32 * max(0.05, p.mouth_width) * (1.0 - 0.45 * p.mouth_round)
    opening = 0.24 * p.mouth_open
    curve = 0.09 * p.mouth_curve
    upper: list[Point] = []
    lower: list[Point] = []
    for i in range(_SAMPLES):
        u = -1.0 + 2.0 * i / (_SAMPLES - 1)
        x = p.mouth_x + u * half
        y = p.mouth_y + curve * (0.5 - u * u)
        shape = (1.0 - p.mouth_round) * (1.0 - u * u) + p.mouth_round * math.sqrt(max(0.0, 1.0 - u * u))
        lip = _MOUTH_LINE / 2 * (1.0 - 0.6 * u * u)
        upper.append((x, y - lip - 0.4 * p.mouth_round * opening * shape))
        lower.append((x, y + lip + (1.0 - 0.4 * p.mouth_round) * opening * shape))
    return tuple(upper + lower[::-1])
