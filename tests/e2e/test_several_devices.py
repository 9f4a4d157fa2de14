"""Several simulated devices (different ids) on one machine against one broker stay apart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_link.harness.client import AgentHarness
from tests.broker import Mosquitto
from tests.e2e.daemon import DeviceDaemon


async def test_two_simulated_devices_share_a_broker(mosquitto: Mosquitto, tmp_path: Path) -> None:
    devices = [DeviceDaemon(mosquitto.url, f"twin-{i}", tmp_path / f"d{i}") for i in (1, 2)]
    for d in devices:
        d.state_dir.parent.mkdir(parents=True)
        d.start()
    try:
        async with (
            AgentHarness(mosquitto.url, device_id="twin-1") as one,
            AgentHarness(mosquitto.url, device_id="twin-2") as two,
        ):
            await one.wait_status(online=True, timeout=120)
            await two.wait_status(online=True, timeout=120)
            for d in devices:  # online comes before the models are loaded; taps wait for them
                await asyncio.to_thread(d.wait_ready)
            await one.sim_tap()
            await one.wait_for("wake", 10)
            await one.say("Hello one.")
            await two.sim_text("typed while asleep")  # twin-2 is asleep: ignored there
            await one.wait_for("playback_finished", 20)
            await two.expect_none("wake", within=1.0)
            assert [e.type for e in two.events] == []
            assert two.status is not None and two.status.state == "asleep"
            await two.sim_tap()
            assert (await two.wait_for("wake", 10)).boot == 1
            await asyncio.sleep(0.3)
            assert [e.type for e in one.events].count("wake") == 1
            one.assert_contract()
            two.assert_contract()
    finally:
        for d in devices:
            assert d.stop() == 0, d.log()
