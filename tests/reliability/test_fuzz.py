"""Fuzzed commands and sim inputs sent to the running daemon: no crash, no hang, each answered."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent_link.harness.reliability.fuzz import PayloadFuzzer
from agent_link.harness.reliability.suite import PWNED_MARKER, FaultRunner
from tests.reliability.conftest import slow

pytestmark = pytest.mark.timeout(900)


def test_fuzzer_is_deterministic_and_mixes_valid_and_malformed() -> None:
    a = list(PayloadFuzzer(5).inputs(500, 1e9))
    b = list(PayloadFuzzer(5).inputs(500, 1e9))
    assert [x.payload for x in a] == [x.payload for x in b]
    malformed = sum(x.malformed for x in a)
    valid = sum(x.command is not None for x in a)
    assert 200 < malformed < 480 and valid > 50
    assert {x.channel for x in a} == {"command", "sim/text", "sim/audio", "sim/tap"}
    assert any(len(x.payload) > 65536 for x in a)


async def test_fuzz_2000_inputs(runner: FaultRunner) -> None:
    count = int(os.environ.get("RF_FUZZ_COUNT", "2000"))
    await asyncio.to_thread(Path(PWNED_MARKER).unlink, missing_ok=True)
    await runner.start_daemon()
    problems = await runner.fuzz(count, seed=11)
    problems += await runner.verify()
    print(runner.report.summary())
    assert not problems, "\n".join(problems[:40])
    assert runner.report.fuzz["malformed"] > count // 3


@slow
async def test_fuzz_10000_inputs(runner: FaultRunner) -> None:
    await runner.start_daemon()
    problems = await runner.fuzz(10_000, seed=12)
    problems += await runner.verify()
    print(runner.report.summary())
    assert not problems, "\n".join(problems[:40])
