"""The fleet broker profile (deploy/mosquitto): per-device credentials, TLS, ACL isolation."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tests.reliability.fleet_profile import FleetBroker, start_fleet_broker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetBroker]:
    """mosquitto running the fleet profile."""
    fb = start_fleet_broker(tmp_path_factory.mktemp("fleet-broker"))
    yield fb
    fb.broker.kill()


def tls(fleet: FleetBroker, cert: str | None = None) -> ssl.SSLContext:
    """Client TLS context trusting the test CA (with ``cert`` as client certificate)."""
    context = ssl.create_default_context(cafile=str(fleet.pki / "ca.crt"))
    if cert:
        context.load_cert_chain(str(fleet.pki / f"{cert}.crt"), str(fleet.pki / f"{cert}.key"))
    return context


def device(fleet: FleetBroker, user: str, client_id: str | None = None, **kw: Any) -> aiomqtt.Client:
    """A client on the device listener with ``user``'s certificate and password."""
    return aiomqtt.Client(
        "127.0.0.1", fleet.device_port, identifier=client_id or user, username=user, password=f"pw-{user}",
        protocol=aiomqtt.ProtocolVersion.V5, tls_context=tls(fleet, kw.pop("cert", user)), **kw,
    )  # fmt: skip


def agent(fleet: FleetBroker, client_id: str = "agent-worker-1") -> aiomqtt.Client:
    """A client on the agent listener as user ``agent``."""
    return aiomqtt.Client(
        "127.0.0.1", fleet.agent_port, identifier=client_id, username="agent", password="pw-agent",
        protocol=aiomqtt.ProtocolVersion.V5, tls_context=tls(fleet),
    )  # fmt: skip


async def collect(client: aiomqtt.Client, into: list[tuple[str, bytes]]) -> None:
    """Append every message ``client`` receives."""
    async for message in client.messages:
        payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
        into.append((str(message.topic), payload))


def granted(codes: Any) -> list[bool]:
    """SUBACK reason codes → granted?"""
    return [(c.value if hasattr(c, "value") else int(c)) < 0x80 for c in codes]


async def test_device_reads_and_writes_only_its_own_topics(fleet: FleetBroker) -> None:
    at_agent: list[tuple[str, bytes]] = []
    at_dev1: list[tuple[str, bytes]] = []
    at_dev2: list[tuple[str, bytes]] = []
    async with agent(fleet) as ag, device(fleet, "dev1") as d1, device(fleet, "dev2") as d2:
        await ag.subscribe("robotface/#", qos=1)
        # dev1 tries everything; only its own topics may be granted or delivered.
        own = await d1.subscribe("robotface/dev1/command", qos=1)
        assert granted(own) == [True]
        for topic in (
            "robotface/dev2/command",
            "robotface/dev2/sim/tap",
            "robotface/dev2/event",
            "robotface/#",
        ):
            await d1.subscribe(topic, qos=1)
        await d2.subscribe("robotface/dev2/command", qos=1)
        tasks = [
            asyncio.create_task(collect(c, into))
            for c, into in ((ag, at_agent), (d1, at_dev1), (d2, at_dev2))
        ]
        # The agent commands dev2 and dev1; dev1 must only see its own.
        await ag.publish("robotface/dev2/command", b'{"for":"dev2"}', qos=1)
        await ag.publish("robotface/dev1/command", b'{"for":"dev1"}', qos=1)
        # dev1 forges dev2's event, status, command and the agent's presence: all must be dropped.
        for topic in (
            "robotface/dev2/event",
            "robotface/dev2/status",
            "robotface/dev2/command",
            "robotface/agent/status",
        ):
            await d1.publish(topic, b'{"forged":true}', qos=1)
        await d1.publish("robotface/dev1/event", b'{"own":true}', qos=1)
        await asyncio.sleep(1.0)
        for task in tasks:
            task.cancel()
    # (overlapping subscriptions may deliver dev1's own command twice; nothing else may arrive)
    assert {m for m in at_dev1} == {("robotface/dev1/command", b'{"for":"dev1"}')}
    assert at_dev2 == [("robotface/dev2/command", b'{"for":"dev2"}')]
    forged = [m for m in at_agent if b"forged" in m[1]]
    assert forged == [], forged
    assert ("robotface/dev1/event", b'{"own":true}') in at_agent


async def test_anonymous_wrong_password_and_rogue_certificate_are_refused(fleet: FleetBroker) -> None:
    anonymous = aiomqtt.Client("127.0.0.1", fleet.agent_port, protocol=aiomqtt.ProtocolVersion.V5,
                               tls_context=tls(fleet), timeout=3)  # fmt: skip
    with pytest.raises(aiomqtt.MqttError):
        async with anonymous:
            pass
    bad = aiomqtt.Client("127.0.0.1", fleet.device_port, identifier="dev1", username="dev1", password="nope",
                         protocol=aiomqtt.ProtocolVersion.V5, tls_context=tls(fleet, "dev1"), timeout=3)  # fmt: skip
    with pytest.raises(aiomqtt.MqttError):
        async with bad:
            pass
    with pytest.raises((aiomqtt.MqttError, ssl.SSLError, OSError)):
        async with device(fleet, "dev1", cert="rogue", timeout=3):
            pass
    with pytest.raises((aiomqtt.MqttError, ssl.SSLError, OSError)):  # no client certificate at all
        async with device(fleet, "dev1", cert=None, timeout=3):
            pass


async def test_a_device_cannot_take_over_another_devices_session(fleet: FleetBroker) -> None:
    got: list[tuple[str, bytes]] = []
    async with device(fleet, "dev2") as d2, agent(fleet) as ag:
        await d2.subscribe("robotface/dev2/command", qos=1)
        task = asyncio.create_task(collect(d2, got))
        # dev1 connects claiming client id "dev2": the broker uses its username as client id instead.
        async with device(fleet, "dev1", client_id="dev2"):
            await asyncio.sleep(0.3)
            await ag.publish("robotface/dev2/command", b"still-mine", qos=1)
            await asyncio.sleep(0.5)
        task.cancel()
    assert got == [("robotface/dev2/command", b"still-mine")]


async def test_agents_share_the_event_stream(fleet: FleetBroker) -> None:
    got: dict[str, list[tuple[str, bytes]]] = {"w1": [], "w2": []}
    async with agent(fleet, "w1") as w1, agent(fleet, "w2") as w2, device(fleet, "dev1") as d1:
        for worker in (w1, w2):
            await worker.subscribe("$share/agents/robotface/+/event", qos=1)
        tasks = [asyncio.create_task(collect(w, got[n])) for n, w in (("w1", w1), ("w2", w2))]
        for i in range(20):
            await d1.publish("robotface/dev1/event", json.dumps({"n": i}).encode(), qos=1)
        await asyncio.sleep(1.0)
        for task in tasks:
            task.cancel()
    counts = {n: len(v) for n, v in got.items()}
    assert sum(counts.values()) == 20, counts  # each event to exactly one worker
    assert all(counts.values()), counts


async def test_oversized_packet_is_refused_by_the_broker(fleet: FleetBroker) -> None:
    got: list[tuple[str, bytes]] = []
    async with device(fleet, "dev1") as d1:
        await d1.subscribe("robotface/dev1/command", qos=1)
        task = asyncio.create_task(collect(d1, got))
        with pytest.raises(aiomqtt.MqttError):
            async with agent(fleet, "big") as ag:
                await ag.publish("robotface/dev1/command", b"x" * 200_000, qos=1, timeout=5)
                await asyncio.sleep(1.0)
                await ag.publish("robotface/dev1/command", b"after", qos=1, timeout=5)
        await asyncio.sleep(0.5)
        task.cancel()
    assert all(len(p) < 200_000 for _, p in got)


_ = Path
