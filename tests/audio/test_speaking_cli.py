"""``robot-face say`` / ``bench tts`` registration and ``say --out``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from audio.edges.wav import read_wav
from audio.tools.cli_speaking import register


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robot-face")
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser("bench").add_subparsers(dest="bench")
    register(sub, bench)
    return parser


def test_say_writes_a_wav(tmp_path: Path, speaking_voice: Any) -> None:
    out = tmp_path / "line.wav"
    args = _parser().parse_args(["say", "Hello, I am your robot.", "--out", str(out)])
    assert args.func(args) == 0
    audio, rate = read_wav(out)
    assert rate == 22050 and 0.8 < len(audio) / rate < 4.0
    assert abs(audio).max() > 0.1


def test_say_with_missing_voice_fails_clearly(tmp_path: Path, capsys: Any) -> None:
    args = _parser().parse_args(["say", "Hi.", "--out", str(tmp_path / "x.wav"), "--voice", "/nope/v.onnx"])
    assert args.func(args) == 1
    assert "/nope/v.onnx" in capsys.readouterr().err


def test_bench_tts_is_registered() -> None:
    args = _parser().parse_args(["bench", "tts", "--runs", "1"])
    assert args.runs == 1 and callable(args.func)
