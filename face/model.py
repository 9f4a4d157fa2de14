"""The face model: a pure, clock-free animator. ``update(dt)`` returns the next FaceParams."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence

from face.mouth_cues import MouthCue

from .life import Blinker, Saccades, approach, smoothstep
from .params import NUMERIC_FIELDS, FaceParams, hex_to_rgb
from .poses import CLAMPED_01, EXPRESSION_DELTAS, STATE_GAZE_AMPLITUDE, STATE_POSES, VISEME_SHAPES, Pose
from .settings import FaceSettings
from .state import EMOTIONS, FaceState

_LOGGER = logging.getLogger(__name__)

_POSE_RATE = 9.0
"""How fast the face moves toward a new state pose (1/s)."""
_MOUTH_RATE = 30.0
"""How fast the mouth follows visemes (1/s)."""
_COLOUR_RATE = 6.0
"""How fast the colour follows a state change (1/s)."""
_NOTICE_S = 0.5
"""Length of the perk-up when speech starts, in seconds."""


class FaceModel:
    """Everything that moves on the face, advanced only by ``update(dt)`` (no clock, injected rng)."""

    def __init__(self, settings: FaceSettings, rng: random.Random) -> None:
        self._settings = settings
        self._rng = rng
        self._base = self._base_pose(settings)
        self._state = FaceState.IDLE
        self._state_t = 0.0
        self._expression = "neutral"
        self._weights: dict[str, float] = {name: 0.0 for name in EMOTIONS}
        self._hold_left = 0.0
        self._pose: Pose = dict(self._base)
        self._blinker = Blinker(rng, settings.blink_min_s, settings.blink_max_s)
        self._saccades = Saccades(rng, settings.saccade_min_s, settings.saccade_max_s)
        self._breath_phase = rng.uniform(0.0, 2.0 * math.pi)
        self._notice_t = _NOTICE_S
        self._clock = 0.0
        self._cues: list[tuple[float, float, str]] = []  # absolute model-time (start, end, viseme)
        self._mouth = VISEME_SHAPES["rest"]
        self._colour = [float(c) for c in hex_to_rgb(settings.eye_colour)]
        self._colour_hex: str | None = None
        """The colour last blended to, as "#rrggbb"."""
        hex_to_rgb(settings.background_colour)  # validate early

    # ---- commands ------------------------------------------------------------------------------
    @property
    def state(self) -> FaceState:
        """The current state."""
        return self._state

    @property
    def expression(self) -> str:
        """The current (target) expression."""
        return self._expression

    def set_state(self, state: FaceState) -> None:
        """Switch to ``state``; the face eases there (waking plays its animation, then turns idle)."""
        state = FaceState(state)
        if state == self._state:
            return
        _LOGGER.debug("face state %s -> %s", self._state, state)
        self._state = state
        self._state_t = 0.0
        if state == FaceState.ASLEEP:
            self.stop_mouth()
            self.set_expression("neutral")

    def set_expression(self, emotion: str) -> None:
        """Blend toward canonical ``emotion``; it holds while speech goes on, then eases to neutral."""
        if emotion not in EXPRESSION_DELTAS:
            raise ValueError(f"unknown emotion {emotion!r}; expected one of {', '.join(EMOTIONS)}")
        self._expression = emotion
        self._hold_left = self._settings.expression_hold_s

    def notice(self) -> None:
        """Perk up (speech started): a quick widening of the eyes, gaze back to the user."""
        self._notice_t = 0.0
        self._saccades.look_at(0.0, 0.0)

    def play_visemes(self, cues: Sequence[MouthCue], delay: float = 0.0) -> None:
        """Schedule a mouth timeline starting ``delay`` seconds from now (negative: already running)."""
        start = self._clock + delay
        new = sorted((start + c.start, start + c.end, str(c.viseme)) for c in cues if c.end > c.start)
        if not new:
            return
        first = new[0][0]
        kept = [(s, min(e, first), v) for s, e, v in self._cues if s < first]
        self._cues = [c for c in kept if c[1] > c[0]] + new

    def stop_mouth(self) -> None:
        """Drop the mouth timeline; the mouth eases back to rest."""
        self._cues.clear()

    @property
    def speaking(self) -> bool:
        """True while a mouth timeline is playing or scheduled."""
        return bool(self._cues)

    # ---- animation -----------------------------------------------------------------------------
    def update(self, dt: float) -> FaceParams:
        """Advance the face by ``dt`` seconds of model time and return the new parameters."""
        if dt < 0.0 or math.isnan(dt):
            raise ValueError(f"dt must be >= 0, got {dt}")
        s = self._settings
        self._clock += dt
        self._state_t += dt
        if self._state == FaceState.WAKING and self._state_t >= s.wake_duration_s:
            self.set_state(FaceState.IDLE)

        viseme = self._advance_cues()
        self._advance_expression(dt)

        # pose: base + state deltas + weighted expression deltas, then eased
        target = dict(self._base)
        for key, delta in STATE_POSES[self._state].items():
            target[key] += delta
        for name, weight in self._weights.items():
            if weight > 0.0:
                w = smoothstep(weight)
                for key, delta in EXPRESSION_DELTAS[name].items():
                    target[key] += w * delta
        k = 1.0 - math.exp(-_POSE_RATE * dt)
        pose = self._pose
        for key in NUMERIC_FIELDS:
            pose[key] += (target[key] - pose[key]) * k
        p = dict(pose)

        self._apply_life(p, dt)
        self._apply_mouth(p, dt, viseme)
        if self._state == FaceState.WAKING:
            self._apply_waking(p)
        if not s.brows:
            p["brow_alpha"] = 0.0
        if not s.mouth:
            p["mouth_alpha"] = 0.0
        for key in CLAMPED_01:
            v = p[key]
            p[key] = 0.0 if v < 0.0 else 1.0 if v > 1.0 else v
        return FaceParams(
            state=self._state.value,
            expression=self._expression,
            viseme=viseme,
            colour=self._advance_colour(dt),
            background=s.background_colour,
            **p,
        )

    def _advance_cues(self) -> str:
        """Drop finished cues; return the viseme at the current model time."""
        cues = self._cues
        while cues and cues[0][1] <= self._clock:
            cues.pop(0)
        if cues and cues[0][0] <= self._clock:
            return cues[0][2]
        return "rest"

    def _advance_expression(self, dt: float) -> None:
        if self._expression != "neutral" and not self._cues:
            self._hold_left -= dt
            if self._hold_left <= 0.0:
                self._expression = "neutral"
        step = dt / max(1e-3, self._settings.expression_blend_s)
        for name, weight in self._weights.items():
            goal = 1.0 if name == self._expression else 0.0
            if weight < goal:
                self._weights[name] = min(goal, weight + step)
            elif weight > goal:
                self._weights[name] = max(goal, weight - step)

    def _apply_life(self, p: Pose, dt: float) -> None:
        """Breathing, blinks, saccades and the perk-up, on top of the eased pose."""
        s = self._settings
        asleep = self._state == FaceState.ASLEEP
        period = s.breath_period_s * (1.6 if asleep else 1.0)
        self._breath_phase = (self._breath_phase + 2.0 * math.pi * dt / max(0.5, period)) % (2 * math.pi)
        breath = math.sin(self._breath_phase)
        amp = 0.02 if asleep else 0.01
        for side in ("l", "r"):
            p[f"eye_{side}_y"] += amp * breath
            p[f"eye_{side}_h"] *= 1.0 + 0.5 * amp * breath
        if asleep:
            p["brightness"] = s.asleep_brightness * (1.0 + 0.25 * breath)
        elif self._state == FaceState.ERROR:
            p["brightness"] *= 0.8 + 0.2 * math.sin(self._state_t * 2.0 * math.pi)

        awake = self._state not in (FaceState.ASLEEP, FaceState.WAKING)
        closure = self._blinker.update(dt, awake)
        if closure > 0.0:
            for side in ("l", "r"):
                top = f"lid_{side}_top"
                p[top] += (1.0 - p[top]) * closure
                p[f"lid_{side}_bottom"] += 0.08 * closure

        gx, gy = self._saccades.update(dt, STATE_GAZE_AMPLITUDE[self._state])
        gx += p["gaze_x"]
        gy += p["gaze_y"]
        p["gaze_x"], p["gaze_y"] = gx, gy
        p["eye_l_x"] += 0.1 * gx
        p["eye_r_x"] += 0.1 * gx
        p["eye_l_y"] += 0.07 * gy
        p["eye_r_y"] += 0.07 * gy
        p["eye_l_h"] *= 1.0 - 0.1 * gx  # the eye on the gaze side grows, Cozmo-style
        p["eye_r_h"] *= 1.0 + 0.1 * gx
        p["mouth_x"] += 0.04 * gx

        if self._notice_t < _NOTICE_S:
            self._notice_t += dt
            bump = math.sin(math.pi * min(1.0, self._notice_t / _NOTICE_S))
            for side in ("l", "r"):
                p[f"eye_{side}_h"] *= 1.0 + 0.15 * bump
                p[f"eye_{side}_w"] *= 1.0 + 0.06 * bump
                p[f"brow_{side}_y"] += 0.05 * bump
            p["brightness"] += 0.15 * bump

    def _apply_mouth(self, p: Pose, dt: float, viseme: str) -> None:
        if self._cues:
            goal = VISEME_SHAPES.get(viseme, VISEME_SHAPES["rest"])
            goal = (goal[0], goal[1] + (p["mouth_width"] - 0.5) * 0.5, max(goal[2], p["mouth_round"] * 0.5))
        else:
            goal = (p["mouth_open"], p["mouth_width"], p["mouth_round"])
        o, w, r = self._mouth
        self._mouth = (
            approach(o, goal[0], _MOUTH_RATE, dt),
            approach(w, goal[1], _MOUTH_RATE, dt),
            approach(r, goal[2], _MOUTH_RATE, dt),
        )
        p["mouth_open"], p["mouth_width"], p["mouth_round"] = self._mouth
        if self._cues:
            p["mouth_curve"] *= 0.5

    def _apply_waking(self, p: Pose) -> None:
        """Scripted wake-up: lids part, a slow blink, eyes open wide, brightness ramps up."""
        s = self._settings
        u = self._state_t / max(0.1, s.wake_duration_s)
        if u < 0.35:
            lid = 0.9 - 0.5 * smoothstep(u / 0.35)
        elif u < 0.5:
            lid = 0.4 + 0.55 * smoothstep((u - 0.35) / 0.15)
        elif u < 0.75:
            lid = 0.95 * (1.0 - smoothstep((u - 0.5) / 0.25))
        else:
            lid = 0.0
        widen = math.sin(math.pi * smoothstep((u - 0.7) / 0.3)) if u > 0.7 else 0.0
        for side in ("l", "r"):
            p[f"lid_{side}_top"] = lid
            p[f"lid_{side}_bottom"] = 0.0
            p[f"eye_{side}_h"] *= 1.0 + 0.12 * widen
        p["brightness"] = s.asleep_brightness + (1.0 - s.asleep_brightness) * smoothstep(u / 0.6)

    def _advance_colour(self, dt: float) -> str:
        s = self._settings
        goal_hex = {
            FaceState.LISTENING: s.listening_colour,
            FaceState.OFFLINE: s.offline_colour,
            FaceState.ERROR: s.error_colour,
        }.get(self._state, s.eye_colour)
        goal = hex_to_rgb(goal_hex)
        c = self._colour
        if self._colour_hex is not None and all(abs(goal[i] - c[i]) < 0.01 for i in range(3)):
            return self._colour_hex  # settled: the same colour every frame, as the blend would give
        k = 1.0 - math.exp(-_COLOUR_RATE * dt)
        for i in range(3):
            c[i] += (goal[i] - c[i]) * k
        self._colour_hex = "#{:02x}{:02x}{:02x}".format(*(max(0, min(255, round(v))) for v in c))
        return self._colour_hex

    @staticmethod
    def _base_pose(s: FaceSettings) -> Pose:
        d = FaceParams()
        base = {key: float(getattr(d, key)) for key in NUMERIC_FIELDS}
        for side in ("l", "r"):
            base[f"eye_{side}_x"] *= s.eye_spacing
            base[f"eye_{side}_w"] *= s.eye_size
            base[f"eye_{side}_h"] *= s.eye_size
        base["eye_roundness"] = min(1.0, max(0.0, s.corner_roundness))
        base["pupil_size"] = min(1.0, max(0.0, s.pupil_size))
        return base
