"""Target poses: what each state and expression does to the face parameters.

States and expressions give *deltas* to the neutral base pose; expression deltas are blended in by
weight, so several can crossfade smoothly.
"""

from __future__ import annotations

from .state import FaceState

Pose = dict[str, float]

_SYMMETRIC = {
    "eye_y": ("eye_l_y", "eye_r_y"),
    "eye_w": ("eye_l_w", "eye_r_w"),
    "eye_h": ("eye_l_h", "eye_r_h"),
    "lid_top": ("lid_l_top", "lid_r_top"),
    "lid_top_angle": ("lid_l_top_angle", "lid_r_top_angle"),
    "lid_bottom": ("lid_l_bottom", "lid_r_bottom"),
    "brow_y": ("brow_l_y", "brow_r_y"),
    "brow_angle": ("brow_l_angle", "brow_r_angle"),
}


def _pose(**values: float) -> Pose:
    """Expand symmetric shorthands (``eye_h`` -> ``eye_l_h`` and ``eye_r_h``) into a pose."""
    out: Pose = {}
    for key, value in values.items():
        for name in _SYMMETRIC.get(key, (key,)):
            out[name] = out.get(name, 0.0) + value
    return out


STATE_POSES: dict[FaceState, Pose] = {
    FaceState.ASLEEP: _pose(lid_top=0.9, lid_bottom=0.06, gaze_y=0.3, eye_y=0.05, mouth_width=-0.15),
    FaceState.WAKING: _pose(),
    FaceState.IDLE: _pose(),
    FaceState.LISTENING: _pose(eye_h=0.06, eye_w=0.02, brow_y=0.03, mouth_curve=0.15, brow_alpha=0.5),
    FaceState.THINKING: _pose(
        gaze_x=0.6,
        gaze_y=-0.6,
        lid_l_top=0.25,
        lid_l_top_angle=-8.0,
        lid_r_top=0.1,
        brow_r_y=0.06,
        brow_alpha=0.8,
        mouth_curve=-0.15,
        mouth_x=0.08,
        mouth_width=-0.15,
    ),
    FaceState.SPEAKING: _pose(mouth_curve=0.1, lid_bottom=0.15, eye_h=0.02),
    FaceState.OFFLINE: _pose(
        lid_top=0.45, lid_bottom=0.1, gaze_y=0.45, eye_h=-0.04, mouth_curve=-0.25, mouth_width=-0.1
    ),
    FaceState.ERROR: _pose(eye_h=-0.38, eye_w=0.06, eye_y=0.04, mouth_curve=-0.6, mouth_width=-0.05),
}
"""Change of the base pose per state (fields not named keep the base value)."""

STATE_GAZE_AMPLITUDE: dict[FaceState, float] = {
    FaceState.ASLEEP: 0.0,
    FaceState.WAKING: 0.0,
    FaceState.IDLE: 0.45,
    FaceState.LISTENING: 0.12,
    FaceState.THINKING: 0.2,
    FaceState.SPEAKING: 0.2,
    FaceState.OFFLINE: 0.35,
    FaceState.ERROR: 0.05,
}
"""How far idle saccades wander from the pose's gaze, per state (gaze units)."""

EXPRESSION_DELTAS: dict[str, Pose] = {
    "neutral": _pose(),
    "happy": _pose(lid_bottom=0.55, eye_y=-0.03, mouth_curve=0.8, mouth_width=0.15),
    "sad": _pose(
        lid_top=0.35,
        lid_top_angle=-18.0,
        gaze_y=0.4,
        eye_y=0.04,
        brow_alpha=1.0,
        brow_y=0.02,
        brow_angle=-20.0,
        mouth_curve=-0.8,
    ),
    "surprised": _pose(
        eye_w=0.08,
        eye_h=0.14,
        brow_alpha=1.0,
        brow_y=0.1,
        mouth_open=0.55,
        mouth_round=0.9,
        mouth_width=-0.2,
    ),
    "angry": _pose(
        lid_top=0.38,
        lid_top_angle=24.0,
        eye_h=-0.06,
        brow_alpha=1.0,
        brow_y=-0.05,
        brow_angle=24.0,
        mouth_curve=-0.5,
        mouth_width=-0.1,
    ),
    "thinking": _pose(
        gaze_x=0.5,
        gaze_y=-0.45,
        lid_l_top=0.2,
        lid_l_top_angle=-6.0,
        brow_alpha=1.0,
        brow_r_y=0.07,
        brow_l_angle=8.0,
        mouth_curve=-0.15,
        mouth_x=0.08,
        mouth_width=-0.15,
    ),
    "confused": _pose(
        eye_l_h=0.08,
        eye_l_w=0.04,
        eye_r_h=-0.12,
        lid_r_top=0.25,
        lid_r_top_angle=12.0,
        brow_alpha=1.0,
        brow_l_y=0.09,
        brow_r_angle=15.0,
        gaze_x=-0.2,
        mouth_curve=-0.25,
        mouth_x=-0.06,
    ),
    "excited": _pose(
        eye_w=0.08,
        eye_h=0.1,
        lid_bottom=0.35,
        brow_alpha=1.0,
        brow_y=0.08,
        mouth_curve=1.0,
        mouth_open=0.35,
        mouth_width=0.25,
    ),
    "sleepy": _pose(
        lid_top=0.5, lid_top_angle=-6.0, gaze_y=0.35, eye_y=0.03, brightness=-0.25, mouth_curve=-0.05
    ),
}
"""Additive change of each expression relative to the state pose."""

VISEME_SHAPES: dict[str, tuple[float, float, float]] = {
    "rest": (0.0, 0.5, 0.0),
    "aa": (0.85, 0.6, 0.1),
    "ee": (0.35, 0.85, 0.0),
    "oo": (0.5, 0.3, 1.0),
    "mbp": (0.0, 0.45, 0.0),
    "fv": (0.15, 0.55, 0.0),
    "l": (0.45, 0.55, 0.1),
    "s": (0.15, 0.7, 0.0),
}
"""Mouth (open, width, round) for each viseme (the vocabulary ``audio.events.Viseme``; the face keys on these names)."""

CLAMPED_01: tuple[str, ...] = (
    "lid_l_top",
    "lid_l_bottom",
    "lid_r_top",
    "lid_r_bottom",
    "brow_alpha",
    "mouth_alpha",
    "mouth_open",
    "mouth_width",
    "mouth_round",
    "brightness",
    "pupil_size",
)
"""Fields kept within 0..1 after blending."""
