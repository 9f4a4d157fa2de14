"""The daemon's process memory: glibc's heap handed back to the system as the daemon goes, and the
resident figures read from ``/proc`` (benchmarks, soak runs, the doctor).

glibc's malloc keeps freed memory in its heaps for reuse and raises its mmap threshold each time a
large block is freed (up to 32 MB), after which the activations of a Whisper decode, a Piper
sentence or a Moonshine step come from the heap, whose pages it rarely returns; each thread that
allocates may get an arena of its own. A daemon that runs for weeks then holds the peak of every
buffer it ever needed (``robot-face bench footprint``: ~120 MiB more after the demo's conversation).
``tune_malloc`` fixes the mmap threshold at 1 MiB (larger blocks are mapped and unmapped, never
kept in the heap), caps the arenas at two and starts a thread that calls ``malloc_trim(0)`` every
``TRIM_INTERVAL_S`` for what the heap still frees. Measured (``bench footprint``, Piper's CPU time
per second of speech): 256 KiB gave back ~5 MiB more but cost Piper ~40 % more CPU (every
activation mapped, zeroed, unmapped), 1 MiB ~25 %; trimming alone gave back only a third of it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
ARENA_MAX = 2
MMAP_THRESHOLD_BYTES = 1024 * 1024
TRIM_INTERVAL_S = 10.0
"""How often freed heap memory is handed back to the system, in seconds."""
TUNING_ENV = "ROBOT_FACE_MALLOC_TUNING"
"""Set to ``0`` to leave glibc's defaults (the footprint benchmark's baseline)."""


def tune_malloc(interval_s: float = TRIM_INTERVAL_S) -> bool:
    """Fix the mmap threshold, cap the arenas and start the trimming thread when the C library is
    glibc; True when it did."""
    if os.environ.get(TUNING_ENV, "1") == "0":
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has neither)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    trim.argtypes = [ctypes.c_size_t]
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    mallopt(M_ARENA_MAX, ARENA_MAX)

    def trim_forever() -> None:
        while True:
            time.sleep(interval_s)
            trim(0)

    threading.Thread(target=trim_forever, name="malloc-trim", daemon=True).start()
    _LOGGER.debug(
        "malloc: mmap above %d B, %d arenas, trimmed every %.0f s",
        MMAP_THRESHOLD_BYTES,
        ARENA_MAX,
        interval_s,
    )
    return True


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
