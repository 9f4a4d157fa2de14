"""The broker stopped (graceful) and killed during a reply: the device reconnects, nothing is lost."""

from __future__ import annotations

import pytest

from agent_link.harness.reliability.suite import FaultRunner
from tests.reliability.conftest import slow

pytestmark = pytest.mark.timeout(300)


async def test_broker_stopped_and_killed_during_a_reply(runner: FaultRunner) -> None:
    await runner.start_daemon()
    await runner.broker_outage(kill=False)
    await runner.broker_outage(kill=True)
    problems = await runner.verify()
    print(runner.report.summary())
    assert not problems, "\n".join(problems)
    assert runner.report.lost == 0
    assert len(runner.report.timings["broker back → device reconnected"]) == 2


@slow
async def test_broker_outages_many_times(runner: FaultRunner) -> None:
    await runner.start_daemon()
    for i in range(10):
        await runner.broker_outage(kill=i % 2 == 1, down_s=0.5 + i % 3)
    problems = await runner.verify()
    print(runner.report.summary())
    assert not problems, "\n".join(problems)
