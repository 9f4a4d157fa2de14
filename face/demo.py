"""A scripted tour of every state and expression (what ``robot-face face serve`` and ``face terminal`` show)."""

from __future__ import annotations

import asyncio
import random
import time

from face.mouth_cues import Cue

from .controller import FaceController
from .state import EMOTIONS, FaceState

_SAYING = ("mbp", "aa", "l", "oo", "ee", "s", "aa", "fv", "oo", "rest", "ee", "l", "aa", "mbp", "oo")


async def tour(controller: FaceController, step_s: float = 2.5, rng: random.Random | None = None) -> None:
    """Cycle forever: asleep, waking, idle, listening, thinking, speaking each emotion, offline, error."""
    rng = rng or random.Random()
    while True:
        for state in (FaceState.ASLEEP, FaceState.WAKING, FaceState.IDLE, FaceState.LISTENING):
            controller.show_state(state)
            if state == FaceState.LISTENING:
                await asyncio.sleep(step_s / 2)
                controller.notice()
            await asyncio.sleep(step_s)
        controller.show_state(FaceState.THINKING)
        await asyncio.sleep(step_s)
        controller.show_state(FaceState.SPEAKING)
        for emotion in EMOTIONS:
            controller.set_expression(emotion)
            cues, t = [], 0.0
            for _ in range(int(step_s / 0.11)):
                d = rng.uniform(0.06, 0.16)
                cues.append(Cue(t, t + d, rng.choice(_SAYING)))
                t += d
            controller.play_visemes(cues, time.time())
            await asyncio.sleep(step_s)
        controller.show_state(FaceState.IDLE)
        await asyncio.sleep(step_s)
        for state in (FaceState.OFFLINE, FaceState.ERROR):
            controller.show_state(state)
            await asyncio.sleep(step_s)
