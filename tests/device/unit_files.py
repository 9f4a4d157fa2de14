"""A small reader for systemd unit files (repeated keys kept in order) and a verify helper."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYSTEMD_DIR = REPO / "systemd"


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """``{section: {key: [values...]}}``; comments, blank lines and continuations handled."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{path}: key outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"{path}: not KEY=VALUE: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def verify_root(root: Path, executables: list[str]) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze --root=ROOT verify`` of every unit in ROOT/etc/systemd/system.

    Makes ROOT self-contained: this machine's stock units (targets the units refer to) and stub
    executables for the absolute ExecStart paths that only exist on an installed device.
    """
    stock = root / "usr/lib/systemd/system"
    if not stock.exists():
        shutil.copytree("/usr/lib/systemd/system", stock, symlinks=True)
    for exe in executables:
        target = root / exe.lstrip("/")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#!/bin/sh\nexit 0\n")
            target.chmod(0o755)
    units = sorted(str(p) for p in (root / "etc/systemd/system").glob("*.service"))
    return subprocess.run(
        ["systemd-analyze", f"--root={root}", "--man=no", "verify", *units],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
