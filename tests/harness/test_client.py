"""AgentHarness against a real mosquitto, with a scripted fake device publishing events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiomqtt
import pytest

from agent_link.harness.client import AgentHarness, HarnessTimeout
from agent_link.protocol.messages import decode_command
from tests.broker import Mosquitto
from tests.harness.events import EventFactory


class FakeDevice:
    """Publishes events/status and records what arrives on the command and sim topics."""

    def __init__(self, client: aiomqtt.Client, device: str = "dev1") -> None:
        self.client = client
        self.base = f"robotface/{device}"
        self.ev = EventFactory()
        self.received: list[tuple[str, bytes]] = []

    async def event(self, type_: str, **fields: Any) -> None:
        await self.client.publish(f"{self.base}/event", self.ev(type_, **fields).encode(), qos=1)

    async def status(self, state: str, **fields: object) -> None:
        payload = {"v": 1, "online": True, "boot": 1, "state": state, "sleep_allowed": True, **fields}
        await self.client.publish(f"{self.base}/status", json.dumps(payload), qos=1, retain=True)

    async def collect(self) -> None:
        async for msg in self.client.messages:
            self.received.append((str(msg.topic), bytes(msg.payload)))


async def test_commands_sim_inputs_and_waiting(mosquitto: Mosquitto) -> None:
    async with aiomqtt.Client("127.0.0.1", mosquitto.port, identifier="fake-dev1") as raw:
        await raw.subscribe("robotface/dev1/#", qos=1)
        await raw.subscribe("robotface/agent/status", qos=1)
        device = FakeDevice(raw)
        collector = asyncio.create_task(device.collect())
        await device.status("asleep")
        async with AgentHarness(mosquitto.url, device_id="dev1") as h:
            await h.wait_status(state="asleep", timeout=5)
            cid = await h.say("Hello [happy] there.", say_id="r1", final=False)
            await h.stop()
            await h.sleep()
            await h.sleep_allowed(False)
            await h.config(volume=0.5)
            await h.send_raw(b"{not json")
            await h.sim_tap()
            await h.sim_text("hi")
            await h.sim_audio(b"RIFF....")
            await h.set_agent_online(True)
            await device.event("wake", source="sim")
            await device.event("playback_started", say="r1")
            await device.event("playback_finished", say="r1", interrupted=False)
            await device.status("idle")
            assert (await h.wait_for("playback_finished", timeout=5, say="r1")).interrupted is False
            # cursor: the earlier wake is still there, the finished one is not returned twice
            assert (await h.wait_for("wake", timeout=1)).source == "sim"
            with pytest.raises(HarnessTimeout) as info:
                await h.wait_for("playback_finished", timeout=0.3)
            message = str(info.value)
            assert "no playback_finished within 0.3 s" in message and "wake source=sim" in message
            await h.wait_status(state="idle", timeout=5)
            h.assert_sequence(["wake", "playback_started", "playback_finished"])
            h.assert_contract()
            h.mark()
            with pytest.raises(HarnessTimeout):
                await h.wait_for("wake", timeout=0.2)
            await asyncio.sleep(0.3)
        collector.cancel()
    by_topic: dict[str, list[bytes]] = {}
    for topic, payload in device.received:
        by_topic.setdefault(topic.removeprefix("robotface/"), []).append(payload)
    commands = by_topic["dev1/command"]
    decoded = [decode_command(p) for p in commands[:5]]
    assert [c.type for c in decoded] == ["say", "stop", "sleep", "sleep_allowed", "config"]
    assert decoded[0].id == cid and decoded[0].say == "r1" and decoded[0].final is False  # type: ignore[union-attr]
    assert commands[5] == b"{not json"
    assert by_topic["dev1/sim/tap"] == [b"{}"]
    assert json.loads(by_topic["dev1/sim/text"][0]) == {"text": "hi"}
    assert by_topic["dev1/sim/audio"] == [b"RIFF...."]
    assert json.loads(by_topic["agent/status"][0]) == {"online": True}


async def test_invalid_device_payload_is_recorded_and_fails_contract(mosquitto: Mosquitto) -> None:
    async with (
        AgentHarness(mosquitto.url, device_id="dev2") as h,
        aiomqtt.Client("127.0.0.1", mosquitto.port) as raw,
    ):
        await raw.publish("robotface/dev2/event", b'{"v":1,"type":"wake"}', qos=1)
        for _ in range(50):
            if h.bad:
                break
            await asyncio.sleep(0.05)
        assert h.bad and "missing" in h.bad[0].error
        with pytest.raises(AssertionError, match="invalid message"):
            h.assert_contract()


async def test_survives_a_broker_restart(mosquitto: Mosquitto) -> None:
    async with AgentHarness(mosquitto.url, device_id="dev3") as h:
        mosquitto.restart()
        await h.wait_connected(timeout=10, connections=2)
        ev = EventFactory()
        for _ in range(100):
            try:
                async with aiomqtt.Client("127.0.0.1", mosquitto.port) as raw:
                    await raw.publish("robotface/dev3/event", ev("tap", source="sim").encode(), qos=1)
                break
            except aiomqtt.MqttError:
                await asyncio.sleep(0.1)
        await h.wait_for("tap", timeout=10)


async def test_connect_failure_is_clear() -> None:
    from tests.broker import free_port

    with pytest.raises(ConnectionError, match="could not connect"):
        async with AgentHarness(f"mqtt://127.0.0.1:{free_port()}", connect_timeout=1.0):
            pass
