"""``robot-face face ...`` and ``bench face`` wiring (register into a bare parser)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from face.cli import register
from face.renderers.png import read_png


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="robot-face")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench").add_subparsers(dest="bench_command", required=True)
    register(sub, bench)
    return parser.parse_args(argv)


def test_snapshot_of_an_emotion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.png"
    args = parse(["face", "snapshot", "--state", "happy", "--out", str(out), "--size", "120x80"])
    assert args.func(args) == 0
    assert read_png(out).shape == (80, 120, 3)
    assert "idle, happy" in capsys.readouterr().out


def test_snapshot_rejects_unknown_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["face", "snapshot", "--state", "dancing", "--out", str(tmp_path / "x.png")])
    assert args.func(args) == 2
    assert "unknown state 'dancing'" in capsys.readouterr().out
    args = parse(["face", "snapshot", "--expression", "joy", "--out", str(tmp_path / "y.png")])
    assert args.func(args) == 2
    assert not (tmp_path / "y.png").exists()


def test_docs_writes_every_shot(tmp_path: Path) -> None:
    args = parse(["face", "docs", "--out", str(tmp_path), "--size", "60x40"])
    assert args.func(args) == 0
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "face-asleep.png" in names and "face-expression-angry.png" in names
    assert len(names) == 16


def test_bench_face_is_registered() -> None:
    args = parse(["bench", "face", "--seconds", "1", "--renderers", "terminal"])
    assert args.seconds == 1.0 and args.renderers == "terminal"
    assert callable(args.func)
