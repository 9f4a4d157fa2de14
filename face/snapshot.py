"""Still frames of any state/expression (for docs, golden tests and the CLI)."""

from __future__ import annotations

import random
from dataclasses import replace

from face.mouth_cues import Cue

from .model import FaceModel
from .params import FaceParams
from .poses import VISEME_SHAPES
from .settings import FaceSettings
from .state import EMOTIONS, FaceState


def still_params(
    state: FaceState | str = FaceState.IDLE,
    expression: str = "neutral",
    viseme: str | None = None,
    settings: FaceSettings | None = None,
    settle_s: float = 2.5,
) -> FaceParams:
    """Settled face for ``state`` + ``expression`` (no blinks or saccades), optionally mid-``viseme``."""
    base = settings or FaceSettings()
    calm = replace(base, blink_min_s=1e9, blink_max_s=1e9, saccade_min_s=1e9, saccade_max_s=1e9)
    model = FaceModel(calm, random.Random(0))
    model.set_state(FaceState(state))
    if expression not in EMOTIONS:
        raise ValueError(f"unknown emotion {expression!r}; expected one of {', '.join(EMOTIONS)}")
    model.set_expression(expression)
    if viseme is not None:
        if viseme not in VISEME_SHAPES:
            raise ValueError(f"unknown viseme {viseme!r}; expected one of {', '.join(VISEME_SHAPES)}")
        model.play_visemes([Cue(0.0, settle_s + 10.0, viseme)])
    dt = 1.0 / 30.0
    params = model.update(0.0)
    for _ in range(round(settle_s / dt)):
        params = model.update(dt)
    return params
