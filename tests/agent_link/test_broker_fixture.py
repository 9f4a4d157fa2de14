"""The mosquitto fixture starts, restarts on the same port, and keeps retained messages."""

from __future__ import annotations

import asyncio

import aiomqtt

from tests.broker import Mosquitto


async def _read_retained(broker: Mosquitto, topic: str) -> bytes:
    async with aiomqtt.Client(broker.host, broker.port, identifier="reader") as client:
        await client.subscribe(topic, qos=1)
        async with asyncio.timeout(5):
            async for message in client.messages:
                return bytes(message.payload) if isinstance(message.payload, bytes | bytearray) else b""
    raise AssertionError("no message")


async def test_retained_survives_restart(mosquitto: Mosquitto) -> None:
    async with aiomqtt.Client(mosquitto.host, mosquitto.port, identifier="writer") as client:
        await client.publish("t/x", b"hello", qos=1, retain=True)
    port = mosquitto.port
    mosquitto.restart()
    assert mosquitto.port == port and mosquitto.running
    assert await _read_retained(mosquitto, "t/x") == b"hello"
