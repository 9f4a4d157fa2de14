"""FaceController: owns the FaceModel and the frame loop that feeds the renderers."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Sequence

from face.mouth_cues import MouthCue

from .model import FaceModel
from .params import FaceParams
from .renderers import Renderer
from .settings import FaceSettings
from .state import EMOTIONS, FaceState

_LOGGER = logging.getLogger(__name__)


class FaceController:
    """Runs the face at ``settings.fps`` (``settings.idle_fps`` while no renderer is watched): update
    the model with real dt, hand each frame to renderers."""

    def __init__(
        self,
        settings: FaceSettings,
        renderers: Sequence[Renderer],
        rng: random.Random | None = None,
    ) -> None:
        if settings.fps < 1:
            raise ValueError(f"face fps must be >= 1, got {settings.fps}")
        self._settings = settings
        self._renderers: list[Renderer] = list(renderers)
        self._model = FaceModel(settings, rng or random.Random())
        self._last = self._model.update(0.0)
        self._nap: tuple[asyncio.Future[None], asyncio.TimerHandle] | None = None
        self.frames = 0
        """Frames rendered so far."""

    @property
    def model(self) -> FaceModel:
        """The face model (for tests and tools)."""
        return self._model

    @property
    def renderers(self) -> list[Renderer]:
        """Renderers still enabled."""
        return list(self._renderers)

    def show_state(self, state: FaceState) -> None:
        """Switch the face to ``state``."""
        self._model.set_state(state)

    def set_expression(self, emotion: str) -> None:
        """Blend to canonical ``emotion`` (ValueError if unknown; resolve aliases first)."""
        self._model.set_expression(emotion)

    def notice(self) -> None:
        """React to the user starting to speak (a quick perk-up)."""
        self._model.notice()

    def play_visemes(self, cues: Sequence[MouthCue], start_ts: float) -> None:
        """Move the mouth along ``cues``; ``start_ts`` is the unix time of the sentence's first sample."""
        self._model.play_visemes(cues, delay=start_ts - time.time())

    def stop_mouth(self) -> None:
        """Stop lip-sync now (speech stopped)."""
        self._model.stop_mouth()

    def resolve_emotion(self, name: str) -> str | None:
        """Canonical emotion for a tag name or configured alias (case-insensitive), or None if unknown."""
        return resolve_emotion(name, self._settings.aliases)

    def snapshot(self) -> FaceParams:
        """The most recent frame."""
        return self._last

    def step(self, dt: float) -> FaceParams:
        """Advance the model by ``dt`` and render one frame (what ``run`` does each tick)."""
        params = self._model.update(dt)
        self._last = params
        for renderer in list(self._renderers):
            try:
                renderer.render(params)
            except Exception:
                _LOGGER.exception("face renderer %s failed; disabling it", type(renderer).__name__)
                self._renderers.remove(renderer)
                try:
                    renderer.close()
                except Exception:
                    _LOGGER.debug("closing failed renderer raised", exc_info=True)
        self.frames += 1
        return params

    @property
    def period(self) -> float:
        """Seconds to the next frame: ``1 / fps`` while a renderer is watched, else ``1 / idle_fps``."""
        watched = any(renderer.watched for renderer in self._renderers)
        return 1.0 / (self._settings.fps if watched else self._settings.idle_fps)

    async def run(self) -> None:
        """Frame loop until cancelled; closes the renderers on the way out."""
        last = time.monotonic()
        next_tick = last
        try:
            while True:
                now = time.monotonic()
                dt = min(now - last, 0.5)
                last = now
                try:
                    self.step(dt)
                except Exception:
                    _LOGGER.exception("face frame failed")
                period = self.period
                next_tick += period
                delay = next_tick - time.monotonic()
                if delay < -period:  # fell behind (slow machine): don't try to catch up
                    next_tick = time.monotonic()
                    delay = 0.0
                await self._sleep(max(0.0, delay))
        finally:
            self.close()

    def wake(self) -> None:
        """Render the next frame now (a renderer just became watched: leave the idle rate at once)."""
        if self._nap is not None:
            future, timer = self._nap
            timer.cancel()
            _resolve(future)

    async def _sleep(self, delay: float) -> None:
        """``asyncio.sleep(delay)`` that :meth:`wake` ends early (the same timer, no extra task)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(delay, _resolve, future)
        self._nap = (future, timer)
        try:
            await future
        finally:
            timer.cancel()
            self._nap = None

    def close(self) -> None:
        """Close every renderer (errors logged)."""
        for renderer in self._renderers:
            try:
                renderer.close()
            except Exception:
                _LOGGER.exception("closing face renderer %s failed", type(renderer).__name__)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def resolve_emotion(name: str, aliases: dict[str, str]) -> str | None:
    """Canonical emotion for ``name`` (canonical or alias, case-insensitive), else None."""
    key = name.strip().lower()
    if key in EMOTIONS:
        return key
    lowered = {k.lower(): v.lower() for k, v in aliases.items()}
    target = lowered.get(key)
    if target in EMOTIONS:
        return target
    if target is not None:
        _LOGGER.warning("emotion alias %r points to unknown emotion %r", name, target)
    return None
