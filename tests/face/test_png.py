"""PNG snapshots: golden images of every state and expression (with tolerance)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from face.cli import DOC_SHOTS
from face.renderers.png import png_bytes, read_png, render_png
from face.renderers.raster import rasterise
from face.snapshot import still_params

GOLDEN = Path(__file__).parent / "golden"
SIZE = (240, 160)
UPDATE = os.environ.get("FACE_UPDATE_GOLDENS") == "1"


def shot(state: str, expression: str, viseme: str | None) -> np.ndarray:
    return rasterise(still_params(state, expression, viseme=viseme), *SIZE, supersample=2)


@pytest.mark.parametrize(("stem", "state", "expression", "viseme"), DOC_SHOTS, ids=[d[0] for d in DOC_SHOTS])
def test_golden(stem: str, state: str, expression: str, viseme: str | None) -> None:
    img = shot(state, expression, viseme)
    path = GOLDEN / f"{stem}.png"
    if UPDATE:
        path.write_bytes(png_bytes(img))
    golden = read_png(path)
    assert golden.shape == img.shape
    diff = np.abs(golden.astype(np.int16) - img.astype(np.int16)).max(axis=2)
    assert (diff > 40).mean() < 0.01, f"{stem}: {(diff > 40).mean():.2%} of pixels differ"
    assert diff.mean() < 2.0


def test_goldens_are_mutually_distinct() -> None:
    imgs = {d[0]: read_png(GOLDEN / f"{d[0]}.png").astype(np.int16) for d in DOC_SHOTS}
    names = sorted(imgs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            differ = (np.abs(imgs[a] - imgs[b]).max(axis=2) > 40).mean()
            assert differ > 0.01, f"{a} and {b} look the same ({differ:.2%} differ)"


def test_png_round_trip_and_render_png(tmp_path: Path) -> None:
    img = (np.arange(5 * 7 * 3) % 256).astype(np.uint8).reshape(5, 7, 3)
    (tmp_path / "a.png").write_bytes(png_bytes(img))
    assert np.array_equal(read_png(tmp_path / "a.png"), img)
    out = render_png(still_params("idle"), tmp_path / "sub" / "face.png", (64, 40))
    assert read_png(out).shape == (40, 64, 3)


def test_asleep_is_dim_and_error_is_red() -> None:
    asleep = shot("asleep", "neutral", None)
    idle = shot("idle", "neutral", None)
    error = shot("error", "neutral", None)
    assert asleep.max() < idle.max() * 0.5
    lit = error.reshape(-1, 3)[error.reshape(-1, 3).max(axis=1) > 100]
    assert len(lit) and (lit[:, 0] > lit[:, 2] * 2).all()


def test_bad_size_rejected() -> None:
    with pytest.raises(ValueError):
        rasterise(still_params("idle"), 0, 10)
