"""A network partition without a clean disconnect: Last Will, device notices, recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.harness.reliability.proxy import StallingProxy
from agent_link.harness.reliability.suite import FaultRunner, ReliabilityReport
from tests.broker import Mosquitto

pytestmark = pytest.mark.timeout(300)


async def test_stalled_path_fires_the_will_and_recovers(mosquitto: Mosquitto, tmp_path: Path) -> None:
    proxy = StallingProxy(mosquitto.host, mosquitto.port)
    await proxy.start()
    daemon = DaemonProcess(
        f"mqtt://127.0.0.1:{proxy.port}",
        "rel-partition",
        tmp_path / "daemon",
        config={"mqtt": {"keepalive_s": 2, "connect_timeout_s": 2.0}},
    )
    try:
        async with AgentHarness(mosquitto.url, device_id=daemon.device_id) as harness:
            await harness.set_agent_online(True)
            runner = FaultRunner(mosquitto, daemon, harness, ReliabilityReport())
            await runner.start_daemon()
            await runner.partition(proxy, stall_s=7.0)
            problems = await runner.verify()
            print(runner.report.summary())
            print(daemon.tail(30))
            assert not problems, "\n".join(problems)
            timings = runner.report.timings
            # The broker's keepalive expiry (1.5 x 2 s) fires the Will; the device sees the missing PINGRESP.
            assert timings["partition → Last Will"][0] < 15
            assert timings["partition → device noticed"][0] < 20
            assert "Connected to" in daemon.log().split("lost or failed")[-1]
    finally:
        daemon.kill()
        await proxy.close()
