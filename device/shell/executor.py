"""The event loop's default executor: a fixed number of threads, all started up front.

``asyncio.to_thread`` (slow I/O off the control path: opening the microphone and the sound card,
loading a voice, the storage check, the link's acks) runs on the loop's default executor, which
asyncio makes lazily with ``min(32, cores + 4)`` workers and starts a thread only when every started
one is busy. A daemon's thread count then creeps up over days to the most calls that ever
overlapped (a 1000-turn soak: 14 → 15 threads at turn 300), which reads like a leak and is one
more stack nobody budgeted. ``started_executor`` makes the pool's size fixed and its threads
present from the start, so the count is what it will always be.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

DEFAULT_WORKERS = 4
"""Threads of the daemon's default executor (at most three calls were seen to overlap)."""


def started_executor(workers: int = DEFAULT_WORKERS, name: str = "asyncio") -> ThreadPoolExecutor:
    """A ``ThreadPoolExecutor`` of ``workers`` threads, every one of them already running.

    Each thread is started by a task that waits at a barrier for all the others, so no task can be
    served by a thread that another already started: the pool has to start all ``workers``."""
    if workers < 1:
        raise ValueError(f"an executor needs at least one worker, got {workers}")
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    barrier = threading.Barrier(workers)
    for future in [pool.submit(barrier.wait, 10.0) for _ in range(workers)]:
        future.result()
    return pool
