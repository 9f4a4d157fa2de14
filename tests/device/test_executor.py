"""The daemon's default executor: fixed size, threads present from the start."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from device.shell.executor import started_executor


def _pool_threads(prefix: str) -> set[int]:
    return {t.ident or 0 for t in threading.enumerate() if t.name.startswith(prefix + "_")}


def test_every_worker_runs_before_any_call_and_overlapping_calls_start_none_more() -> None:
    pool = started_executor(3, name="exec-test")
    try:
        started = _pool_threads("exec-test")
        assert len(started) == 3
        done = [pool.submit(time.sleep, 0.05) for _ in range(9)]  # three times the pool, overlapping
        for f in done:
            f.result()
        assert _pool_threads("exec-test") == started
    finally:
        pool.shutdown(wait=True)
    assert not _pool_threads("exec-test")


def test_a_lazy_pool_grows_with_overlap_which_is_what_the_fixed_one_avoids() -> None:
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="lazy-test")
    try:
        pool.submit(int).result()
        assert len(_pool_threads("lazy-test")) == 1
        gate = threading.Event()
        waits = [pool.submit(gate.wait, 5.0) for _ in range(3)]
        time.sleep(0.05)
        gate.set()
        for f in waits:
            f.result()
        assert len(_pool_threads("lazy-test")) == 3
    finally:
        pool.shutdown(wait=True)


def test_as_the_default_executor_to_thread_uses_its_threads() -> None:
    async def main() -> set[str]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(started_executor(2, name="loop-test"))
        names = await asyncio.gather(
            *(asyncio.to_thread(lambda: threading.current_thread().name) for _ in range(6))
        )
        return set(names)

    names = asyncio.run(main())
    assert names and all(n.startswith("loop-test_") for n in names)
    assert not _pool_threads("loop-test")  # asyncio.run shut it down


def test_no_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        started_executor(0)
