"""A small numpy rasteriser for the face drawing operations (no display, no extra dependency)."""

from __future__ import annotations

import numpy as np

from ..geometry import DrawOp, FaceLayout, face_ops
from ..params import FaceParams, hex_to_rgb


def rasterise(params: FaceParams, width: int, height: int, supersample: int = 1) -> np.ndarray:
    """Draw ``params`` into an (height, width, 3) uint8 RGB array; ``supersample`` > 1 anti-aliases."""
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    k = max(1, int(supersample))
    w, h = width * k, height * k
    img = np.empty((h, w, 3), dtype=np.uint8)
    img[:, :] = hex_to_rgb(params.background)
    layout = FaceLayout(w, h)
    for op in face_ops(params):
        _draw(img, layout, op)
    if k == 1:
        return img
    return img.reshape(height, k, width, k, 3).mean(axis=(1, 3)).round().astype(np.uint8)


def _draw(img: np.ndarray, layout: FaceLayout, op: DrawOp) -> None:
    s = layout.scale
    h, w = img.shape[:2]
    if op.kind == "poly":
        pts = [layout.to_px(x, y) for x, y in op.points]
        xs = [pt[0] for pt in pts]
        ys = [pt[1] for pt in pts]
        box = (min(xs), min(ys), max(xs), max(ys))
    elif op.kind == "rrect":
        x, y, bw, bh, _ = op.args
        x0, y0 = layout.to_px(x, y)
        box = (x0, y0, x0 + bw * s, y0 + bh * s)
    else:
        cx, cy, r = op.args
        px, py = layout.to_px(cx, cy)
        box = (px - r * s, py - r * s, px + r * s, py + r * s)
    c0, r0 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
    c1, r1 = min(w, int(np.ceil(box[2])) + 1), min(h, int(np.ceil(box[3])) + 1)
    if c0 >= c1 or r0 >= r1:
        return
    gx = np.arange(c0, c1, dtype=np.float32)[None, :] + 0.5
    gy = np.arange(r0, r1, dtype=np.float32)[:, None] + 0.5
    if op.kind == "poly":
        mask = _poly_mask(gx, gy, pts)
    elif op.kind == "rrect":
        x, y, bw, bh, radius = op.args
        x0, y0 = layout.to_px(x, y)
        hw, hh, rad = bw * s / 2, bh * s / 2, radius * s
        qx = np.abs(gx - (x0 + hw)) - (hw - rad)
        qy = np.abs(gy - (y0 + hh)) - (hh - rad)
        outside = np.hypot(np.maximum(qx, 0.0), np.maximum(qy, 0.0))
        mask = outside + np.minimum(np.maximum(qx, qy), 0.0) <= rad
    else:
        mask = (gx - px) ** 2 + (gy - py) ** 2 <= (r * s) ** 2
    img[r0:r1, c0:c1][mask] = op.colour


def _poly_mask(gx: np.ndarray, gy: np.ndarray, pts: list[tuple[float, float]]) -> np.ndarray:
    """Even-odd fill of a polygon over a pixel-centre grid."""
    inside = np.zeros((gy.shape[0], gx.shape[1]), dtype=bool)
    n = len(pts)
    for i in range(n):
        xi, yi = pts[i]
        xj, yj = pts[(i + 1) % n]
        if yi == yj:
            continue
        crosses = (yi > gy) != (yj > gy)
        x_at = xi + (xj - xi) * (gy - yi) / (yj - yi)
        inside ^= crosses & (gx < x_at)
    return inside
