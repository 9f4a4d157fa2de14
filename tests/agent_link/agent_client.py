"""A stand-in for the cloud agent in link tests: a persistent-session aiomqtt client collecting messages."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from tests.broker import Mosquitto


def _props() -> Properties:
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    return props


class AgentClient:
    """Subscribes to topics (QoS 1, persistent session) and records ``(topic, payload, retain)``."""

    def __init__(self, broker: Mosquitto, topics: list[str], identifier: str = "test-agent") -> None:
        self.broker = broker
        self.topics = topics
        self.identifier = identifier
        self.received: list[tuple[str, bytes, bool]] = []
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.client: aiomqtt.Client | None = None

    async def _run(self, ready: asyncio.Future[None]) -> None:
        client = aiomqtt.Client(
            self.broker.host,
            self.broker.port,
            identifier=self.identifier,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,
            properties=_props(),
        )
        async with client:
            self.client = client
            for topic in self.topics:
                await client.subscribe(topic, qos=1)
            ready.set_result(None)
            async for msg in client.messages:
                payload = msg.payload if isinstance(msg.payload, bytes) else b""
                self.received.append((str(msg.topic), payload, bool(msg.retain)))
                self._changed.set()

    async def start(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(ready))
        done, _ = await asyncio.wait({ready, self._task}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            self._task.result()
        assert ready.done(), "agent client did not connect"

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._task = None
        self.client = None

    async def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        assert self.client is not None
        await self.client.publish(topic, payload, qos=1, retain=retain)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def payloads(self, topic: str) -> list[dict[str, Any]]:
        return [json.loads(p) for t, p, _ in self.received if t == topic and p]


@contextlib.asynccontextmanager
async def agent(
    broker: Mosquitto, topics: list[str], identifier: str = "test-agent"
) -> AsyncIterator[AgentClient]:
    client = AgentClient(broker, topics, identifier)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


async def read_retained(broker: Mosquitto, topic: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """The retained message on ``topic`` as JSON (None if there is none within ``timeout``)."""
    async with aiomqtt.Client(broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5) as client:
        await client.subscribe(topic, qos=1)
        try:
            async with asyncio.timeout(timeout):
                async for msg in client.messages:
                    if msg.retain and isinstance(msg.payload, bytes):
                        return dict(json.loads(msg.payload))
        except TimeoutError:
            return None
    return None
