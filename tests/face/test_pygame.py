"""pygame renderer offscreen (SDL dummy video driver): drawing and taps."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

os.environ["SDL_VIDEODRIVER"] = "dummy"
pygame = pytest.importorskip("pygame")

from face.renderers.pygame_renderer import PygameRenderer  # noqa: E402
from face.renderers.raster import rasterise  # noqa: E402
from face.snapshot import still_params  # noqa: E402


@pytest.fixture
def taps() -> list[str]:
    return []


@pytest.fixture
def renderer(taps: list[str]) -> Iterator[PygameRenderer]:
    r = PygameRenderer(on_tap=taps.append, fullscreen=False, size=(320, 200))
    yield r
    r.close()


def pixels(r: PygameRenderer) -> np.ndarray:
    return np.asarray(pygame.surfarray.array3d(r.surface)).transpose(1, 0, 2)


@pytest.mark.parametrize(
    ("state", "expression"), [("idle", "neutral"), ("idle", "happy"), ("error", "neutral")]
)
def test_draws_like_the_png_renderer(renderer: PygameRenderer, state: str, expression: str) -> None:
    params = still_params(state, expression)
    renderer.render(params)
    drawn = pixels(renderer).astype(np.int16)
    expected = rasterise(params, 320, 200).astype(np.int16)
    differ = (np.abs(drawn - expected).max(axis=2) > 60).mean()
    assert differ < 0.02, f"{differ:.2%} of pixels differ"
    assert (drawn.max(axis=2) > 100).mean() > 0.05  # something is lit


def test_click_and_touch_are_taps(renderer: PygameRenderer, taps: list[str]) -> None:
    params = still_params("idle")
    renderer.render(params)
    assert taps == []
    pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(160, 100), button=1, touch=False))
    renderer.render(params)
    assert taps == ["screen"]
    pygame.event.post(pygame.event.Event(pygame.FINGERDOWN, x=0.5, y=0.5, finger_id=0, touch_id=0))
    renderer.render(params)
    assert taps == ["screen", "screen"]
    assert renderer.taps == 2


def test_failing_tap_callback_does_not_break_drawing() -> None:
    def boom(source: str) -> None:
        raise RuntimeError(source)

    r = PygameRenderer(on_tap=boom, fullscreen=False, size=(160, 100))
    try:
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(5, 5), button=1, touch=False))
        r.render(still_params("idle"))
        assert r.taps == 1
    finally:
        r.close()
