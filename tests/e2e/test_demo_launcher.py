"""`robot-face demo` cleans up on Ctrl-C, and a second run works the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.parametrize("run", [1, 2])
def test_ctrl_c_stops_broker_and_device(tmp_path_factory: pytest.TempPathFactory, run: int) -> None:
    workdir = tmp_path_factory.getbasetemp() / "demo"  # the same workdir both runs: wiped and reused
    proc = subprocess.Popen(
        [sys.executable, "-m", "device", "demo", "--workdir", str(workdir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 180
    for line in proc.stdout:
        lines.append(line.rstrip())
        if "user says" in line or time.monotonic() > deadline:  # mid-conversation
            break
    children = _children(proc.pid)
    names = sorted(p.name() for p in children)
    assert any("mosquitto" in n for n in names), (names, lines)
    assert len(children) >= 2, (names, lines)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    lines += rest.splitlines()
    assert proc.returncode == 130, "\n".join(lines)
    assert any("device stopped (exit 0)" in line for line in lines), "\n".join(lines[-20:])
    _gone, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, f"left running: {alive}"
