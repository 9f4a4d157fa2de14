"""One BLAS thread for the whole process (device/native_threads.py), applied by every command."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from device.native_threads import (
    BLAS_THREADS,
    BLAS_THREADS_ENV,
    blas_threads,
    blas_threads_wanted,
    limit_blas_threads,
)

REPORT = "import json; from device.native_threads import blas_threads; print(json.dumps(blas_threads()))"


def _pools_in_child(code: str, **env: str) -> list[list[object]]:
    """The BLAS pools (library, threads) a fresh interpreter reports after ``code``."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    child_env.update(env)
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{REPORT}"],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=60,
        check=True,
    ).stdout
    pools: list[list[object]] = json.loads(out.strip().splitlines()[-1])
    return pools


def test_the_limit_caps_numpys_pool_and_can_be_undone() -> None:
    limits = limit_blas_threads(1)
    try:
        pools = blas_threads()
        assert pools, "numpy's BLAS was not found"
        assert all(n == 1 for _, n in pools)
    finally:
        limits.restore_original_limits()


def test_every_command_runs_with_one_blas_thread() -> None:
    default = _pools_in_child("import numpy")
    assert default, "numpy's BLAS was not found"
    after_a_command = _pools_in_child("from device.cli import main; main(['config', '--check'])")
    assert [lib for lib, _ in after_a_command] == [lib for lib, _ in default]
    assert all(n == BLAS_THREADS for _, n in after_a_command)


def test_zero_in_the_environment_leaves_the_librarys_pool() -> None:
    default = _pools_in_child("import numpy")
    left = _pools_in_child(
        "from device.cli import main; main(['config', '--check'])", **{BLAS_THREADS_ENV: "0"}
    )
    assert left == default


@pytest.mark.parametrize(
    ("raw", "wanted"), [("", BLAS_THREADS), ("3", 3), ("0", 0), ("-2", 0), ("many", BLAS_THREADS)]
)
def test_the_environment_override(
    raw: str, wanted: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(BLAS_THREADS_ENV, raw)
    with caplog.at_level(logging.WARNING, logger="device.native_threads"):
        assert blas_threads_wanted() == wanted
    assert ("is not a number" in caplog.text) == (raw == "many")
    if wanted == 0:
        assert limit_blas_threads() is None
