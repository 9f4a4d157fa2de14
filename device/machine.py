"""What machine the daemon runs on, in one line for the boot log: architecture, CPU, cores, memory.

A report from the field (or a CI log) then says which board produced it: the models' output and
the real-time audio's margins differ between a Pi 4, a Pi 5 and a desktop.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _cpu_model(cpuinfo: str) -> str:
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in cpuinfo.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return "unknown CPU"


def _mem_total_mib(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def machine_summary(proc: Path = Path("/proc")) -> str:
    """E.g. "x86_64, Intel(R) Xeon(R) Processor, 2 cores, 24000 MiB" (what is unknown is left out)."""

    def read(name: str) -> str:
        try:
            return (proc / name).read_text(errors="replace")
        except OSError:
            return ""

    parts = [platform.machine() or "unknown architecture", _cpu_model(read("cpuinfo"))]
    parts.append(f"{os.cpu_count() or '?'} cores")
    mem = _mem_total_mib(read("meminfo"))
    if mem is not None:
        parts.append(f"{mem} MiB")
    return ", ".join(parts)
