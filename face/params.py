"""Face parameters: everything a renderer needs to draw one frame.

Geometry is in *face units*: the face is centred at (0, 0); one unit is half the width of the drawing
area used by the face (``x`` right, ``y`` down). Lids are fractions of the eye height (0 = open,
1 = fully covered); lid angles are degrees, positive lowers the inner (nose-side) corner (angry),
negative lowers the outer corner (sad).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any

NUMERIC_FIELDS: tuple[str, ...] = (
    "eye_l_x",
    "eye_l_y",
    "eye_l_w",
    "eye_l_h",
    "eye_r_x",
    "eye_r_y",
    "eye_r_w",
    "eye_r_h",
    "eye_roundness",
    "lid_l_top",
    "lid_l_top_angle",
    "lid_l_bottom",
    "lid_r_top",
    "lid_r_top_angle",
    "lid_r_bottom",
    "gaze_x",
    "gaze_y",
    "pupil_size",
    "brow_alpha",
    "brow_l_y",
    "brow_l_angle",
    "brow_r_y",
    "brow_r_angle",
    "mouth_alpha",
    "mouth_x",
    "mouth_y",
    "mouth_open",
    "mouth_width",
    "mouth_round",
    "mouth_curve",
    "brightness",
)
"""Every float field of FaceParams, in declaration order."""


@dataclass(frozen=True, slots=True)
class FaceParams:
    """One frame of the face (plain floats and strings, JSON-serialisable via ``to_dict``)."""

    state: str = "idle"
    """Face state name (FaceState value)."""
    expression: str = "neutral"
    """Dominant expression (canonical emotion name)."""
    viseme: str = "rest"
    """Current mouth shape of the viseme timeline ("rest" when silent)."""
    colour: str = "#40e0ff"
    """Eye/mouth colour "#rrggbb" before brightness is applied."""
    background: str = "#000000"
    """Background colour "#rrggbb"."""
    eye_l_x: float = -0.42
    """Left eye centre x (face units)."""
    eye_l_y: float = -0.12
    """Left eye centre y (face units)."""
    eye_l_w: float = 0.48
    """Left eye width (face units)."""
    eye_l_h: float = 0.56
    """Left eye height (face units)."""
    eye_r_x: float = 0.42
    """Right eye centre x (face units)."""
    eye_r_y: float = -0.12
    """Right eye centre y (face units)."""
    eye_r_w: float = 0.48
    """Right eye width (face units)."""
    eye_r_h: float = 0.56
    """Right eye height (face units)."""
    eye_roundness: float = 0.35
    """Corner radius as a fraction of half the smaller eye side (0 square .. 1 round)."""
    lid_l_top: float = 0.0
    """Left upper lid coverage (0 open .. 1 closed)."""
    lid_l_top_angle: float = 0.0
    """Left upper lid angle in degrees (+ inner corner down)."""
    lid_l_bottom: float = 0.0
    """Left lower lid coverage, arched (0 none .. 1 closed); high values give happy ^ eyes."""
    lid_r_top: float = 0.0
    """Right upper lid coverage."""
    lid_r_top_angle: float = 0.0
    """Right upper lid angle in degrees (+ inner corner down)."""
    lid_r_bottom: float = 0.0
    """Right lower lid coverage."""
    gaze_x: float = 0.0
    """Gaze direction x (-1 left .. 1 right); already applied to eye positions, moves pupils."""
    gaze_y: float = 0.0
    """Gaze direction y (-1 up .. 1 down)."""
    pupil_size: float = 0.0
    """Pupil diameter as a fraction of eye width (0 = no pupils)."""
    brow_alpha: float = 0.0
    """Eyebrow opacity (0 hidden .. 1)."""
    brow_l_y: float = 0.0
    """Left brow lift above the default brow line (face units, + up)."""
    brow_l_angle: float = 0.0
    """Left brow angle in degrees (+ inner end down, angry)."""
    brow_r_y: float = 0.0
    """Right brow lift (face units, + up)."""
    brow_r_angle: float = 0.0
    """Right brow angle in degrees (+ inner end down)."""
    mouth_alpha: float = 1.0
    """Mouth opacity (0 hidden .. 1)."""
    mouth_x: float = 0.0
    """Mouth centre x (face units)."""
    mouth_y: float = 0.5
    """Mouth centre y (face units)."""
    mouth_open: float = 0.0
    """Mouth opening (0 closed line .. 1 wide open)."""
    mouth_width: float = 0.5
    """Mouth width relative to the default (0..1, 0.5 = relaxed)."""
    mouth_round: float = 0.0
    """Lip rounding (0 wide/flat .. 1 round "oo")."""
    mouth_curve: float = 0.0
    """Smile (+1) or frown (-1)."""
    brightness: float = 1.0
    """Overall brightness of eyes and mouth (0..1)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field, JSON-serialisable."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaceParams:
        """Build from ``to_dict`` output (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@lru_cache(maxsize=64)  # the face parses its few colours every frame
def hex_to_rgb(colour: str) -> tuple[int, int, int]:
    """Parse "#rrggbb" (or "rrggbb") into an (r, g, b) tuple; raise ValueError on bad input."""
    text = colour.strip().lstrip("#")
    if len(text) != 6:
        raise ValueError(f"colour must be '#rrggbb', got {colour!r}")
    try:
        return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)
    except ValueError:
        raise ValueError(f"colour must be '#rrggbb', got {colour!r}") from None


def scaled_rgb(colour: str, brightness: float) -> tuple[int, int, int]:
    """Colour multiplied by ``brightness`` (clamped to 0..1)."""
    b = min(1.0, max(0.0, brightness))
    r, g, bl = hex_to_rgb(colour)
    return round(r * b), round(g * b), round(bl * b)
