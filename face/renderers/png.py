"""PNG snapshots of the face (numpy rasteriser + a tiny zlib PNG writer)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..params import FaceParams
from .raster import rasterise


def png_bytes(rgb: np.ndarray) -> bytes:
    """Encode an (h, w, 3) uint8 array as PNG."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError("expected an (h, w, 3) uint8 array")
    h, w = rgb.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), dtype=np.uint8), rgb.reshape(h, w * 3)], axis=1).tobytes()

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def read_png(path: str | Path) -> np.ndarray:
    """Decode an 8-bit RGB, non-interlaced PNG written by ``png_bytes`` into an (h, w, 3) array."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if tag == b"IHDR":
            w, h, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, colour_type, interlace) != (8, 2, 0):
                raise ValueError(f"{path}: only 8-bit RGB non-interlaced PNGs are supported")
        elif tag == b"IDAT":
            idat += body
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * 3)
    if np.any(rows[:, 0] != 0):
        raise ValueError(f"{path}: PNG row filters are not supported")
    return rows[:, 1:].reshape(h, w, 3).copy()


def render_png(params: FaceParams, path: str | Path, size: tuple[int, int] = (480, 320)) -> Path:
    """Write a PNG snapshot of ``params`` at ``size`` (width, height); return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png_bytes(rasterise(params, size[0], size[1], supersample=2)))
    return out
