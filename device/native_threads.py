"""The process's BLAS thread pool: one thread, so numpy's matrix products never contend with the models.

Every model of the runtime runs on threads of its own, one each (Whisper's CTranslate2 workers,
the Moonshine cross-check, Silero, Smart Turn and Piper on onnxruntime). numpy's OpenBLAS is left
out of that budget: it starts a pool of one thread per core and, after each product, lets its
threads spin on the cores for a while before they sleep. The runtime's products are small (the
mel filterbank of a Whisper window, 80 x 201 by 201 x T, for every decode and every end-of-turn
question), so the pool gains nothing there, but its spinning threads take the cores from the
decode beside them: on a 2-core machine the transcriber's decode of a 2.3 s sentence took 128 ms
median with the pool, 90 ms with one thread, and with Smart Turn beside 173 against 112-131 ms
(docs/hearing.md, "One BLAS thread"). ``limit_blas_threads`` caps the pool at
``BLAS_THREADS`` for the whole process, through threadpoolctl (which knows the libraries numpy,
scipy or a BLAS of the distribution may load); ``device.cli.main`` calls it before any command, so
the daemon, its benchmarks and its evaluations run the same way.
"""

from __future__ import annotations

import logging
import os
from typing import Any

_LOGGER = logging.getLogger(__name__)

BLAS_THREADS = 1
"""Threads of the BLAS pool (numpy's OpenBLAS) in the runtime's process."""
BLAS_THREADS_ENV = "ROBOT_FACE_BLAS_THREADS"
"""Overrides ``BLAS_THREADS``; ``0`` leaves the library's own pool (the benchmarks' baseline)."""


def blas_threads_wanted() -> int:
    """``BLAS_THREADS``, or the environment's ``ROBOT_FACE_BLAS_THREADS`` (0: the library's own)."""
    raw = os.environ.get(BLAS_THREADS_ENV, "").strip()
    if not raw:
        return BLAS_THREADS
    try:
        value = int(raw)
    except ValueError:
        _LOGGER.warning("%s=%r is not a number: using %d BLAS thread(s)", BLAS_THREADS_ENV, raw, BLAS_THREADS)
        return BLAS_THREADS
    return max(0, value)


def limit_blas_threads(threads: int | None = None) -> Any:
    """Cap the BLAS pools of the libraries loaded now (numpy's is loaded here first) at ``threads``
    (default ``blas_threads_wanted()``; 0 leaves them); returns the ``threadpool_limits`` object,
    whose ``restore_original_limits()`` undoes it, or None when nothing was changed."""
    import numpy  # noqa: F401  (its OpenBLAS must be loaded for the limit to reach it)
    from threadpoolctl import threadpool_limits

    n = blas_threads_wanted() if threads is None else threads
    if n <= 0:
        return None
    limits = threadpool_limits(limits=n, user_api="blas")
    _LOGGER.debug("BLAS pools capped at %d thread(s)", n)
    return limits


def blas_threads() -> list[tuple[str, int]]:
    """(library, threads) of every BLAS pool loaded in this process (for tests and diagnosis)."""
    from threadpoolctl import threadpool_info

    return [
        (str(i.get("internal_api", "?")), int(i["num_threads"]))
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
