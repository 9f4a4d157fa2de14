"""The daemon's process memory: glibc malloc tuned so freed model buffers go back to the system,
and the resident figures read from ``/proc`` (benchmarks, soak runs, the doctor).

glibc's malloc raises its mmap threshold each time a large block is freed (up to 32 MB), after
which activations of a few MB (a Whisper decode, a Piper sentence, a Moonshine step) come from the
heap, whose top rarely shrinks, and each thread that allocates gets its own 64 MB arena. A daemon
that runs for weeks then holds the peak of every buffer it ever needed. ``tune_malloc`` fixes the
mmap threshold at 256 KiB (larger blocks are mapped and unmapped; no dynamic raise) and caps the
arenas at two. ``robot-face bench footprint`` prints the daemon with and without it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 256 * 1024
ARENA_MAX = 2
TUNING_ENV = "ROBOT_FACE_MALLOC_TUNING"
"""Set to ``0`` to leave glibc's defaults (the footprint benchmark's baseline)."""


def tune_malloc() -> bool:
    """Apply the settings above when the C library is glibc; True when they were applied."""
    if os.environ.get(TUNING_ENV, "1") == "0":
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_ARENA_MAX, ARENA_MAX))
    _LOGGER.debug("malloc tuning %s", "applied" if ok else "refused")
    return ok


@dataclass(frozen=True, slots=True)
class ProcessMemory:
    """Resident memory of one process, in MiB."""

    rss: float
    """Resident set size (shared library pages included)."""
    uss: float
    """Unique set size: the pages only this process holds (what ending it would free)."""
    pss: float
    """Proportional set size: unique pages plus a share of the shared ones."""


def process_memory(pid: int | str = "self") -> ProcessMemory:
    """``/proc/PID/smaps_rollup`` of a process (Linux ≥ 4.14)."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            fields[key] = int(parts[0])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return ProcessMemory(fields.get("Rss", 0) / 1024, uss / 1024, fields.get("Pss", 0) / 1024)


def open_fds(pid: int | str = "self") -> int:
    """Open file descriptors of a process."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def thread_count(pid: int | str = "self") -> int:
    """Threads of a process."""
    return len(os.listdir(f"/proc/{pid}/task"))
