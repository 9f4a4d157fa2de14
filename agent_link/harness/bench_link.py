"""``robot-face bench link``: command → event round trip through the MQTT link, beside a bare paho client.

A private mosquitto on loopback; an agent (paho, its own network thread) publishes a QoS 1 command
and times until the device's QoS 1 event comes back. The device is, in turn:

- ``paho echo``: a bare paho client (``loop_start`` thread) publishing the event from ``on_message``;
- ``MqttLink``: the device's link; its handler appends the event to the outbox and calls
  ``notify_outbox``; once with the outbox on disk (SQLite, fsync'd, as the device runs it: the
  append and the delete after the PUBACK each wait for the disk) and once in memory (the link's own
  share of the round trip).

Each of them is measured with mosquitto's default ``set_tcp_nodelay false`` and with ``true`` (as in
``deploy/mosquitto/mosquitto.conf`` and the private broker): without it the broker's Nagle algorithm holds a PUBLISH that
follows a PUBACK on the same socket until the client's delayed ACK, ~40 ms per round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from agent_link.harness.broker import Mosquitto
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import StatusMessage
from agent_link.protocol.topics import Topics

_DEVICE = "bench1"
_TOPICS = Topics("robotface", _DEVICE)
_COMMAND = b'{"v":1,"type":"sleep_allowed","id":"c-%d","allowed":true}'


def _no_nagle(client: paho.Client) -> None:
    sock: Any = client.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Agent:
    """Publishes commands and times the answer events (paho, own network thread)."""

    def __init__(self, port: int) -> None:
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-agent", protocol=paho.MQTTv5)
        self._client.on_message = self._message
        self._answer = threading.Event()
        self._port = port

    def __enter__(self) -> _Agent:
        self._client.connect("127.0.0.1", self._port)
        _no_nagle(self._client)
        self._client.subscribe(_TOPICS.event, qos=1)
        self._client.loop_start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    def _message(self, client: paho.Client, userdata: object, message: paho.MQTTMessage) -> None:
        self._answer.set()

    def round_trip(self, i: int) -> float:
        """Seconds from publishing command ``i`` to the device's event (raises after 5 s)."""
        self._answer.clear()
        start = time.perf_counter()
        self._client.publish(_TOPICS.command, _COMMAND % i, qos=1)
        if not self._answer.wait(5.0):
            raise TimeoutError("no event came back within 5 s")
        return time.perf_counter() - start


async def _measure(agent: _Agent, rounds: int) -> list[float]:
    await asyncio.sleep(0.3)  # subscriptions settled
    times = []
    for i in range(rounds + 5):
        elapsed = await asyncio.to_thread(agent.round_trip, i)
        if i >= 5:  # warm-up
            times.append(elapsed)
    return times


@contextlib.contextmanager
def _paho_echo(port: int) -> Iterator[None]:
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-paho", protocol=paho.MQTTv5)

    def on_message(c: paho.Client, userdata: object, message: paho.MQTTMessage) -> None:
        c.publish(_TOPICS.event, b'{"v":1,"type":"tap"}', qos=1)

    client.on_message = on_message
    client.connect("127.0.0.1", port)
    _no_nagle(client)
    client.subscribe(_TOPICS.command, qos=1)
    client.loop_start()
    try:
        yield None
    finally:
        client.disconnect()
        client.loop_stop()


async def _link(port: int, agent: _Agent, rounds: int, db: Path) -> tuple[list[float], list[float]]:
    outbox = Outbox(db, _DEVICE, 1)
    appends: list[float] = []
    link: MqttLink | None = None

    def on_message(kind: str, payload: bytes, received: float) -> None:
        start = time.perf_counter()
        outbox.append("tap", {"source": "sim"}, received)
        appends.append(time.perf_counter() - start)
        assert link is not None
        link.notify_outbox()

    settings = LinkSettings(broker=f"mqtt://127.0.0.1:{port}")
    link = MqttLink(settings, _DEVICE, 1, outbox, on_message, lambda *a: None)
    task = asyncio.create_task(link.run())
    try:
        while not link.connected:
            await asyncio.sleep(0.01)
        times = await _measure(agent, rounds)
    finally:
        await link.shutdown(StatusMessage(online=False, boot=1))
        await task
        outbox.close()
    return times, appends[5:]


def _row(name: str, times: list[float], note: str = "") -> str:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[int(len(ms) * 0.9) - 1]
    return f"{name:<14} {statistics.median(ms):8.2f} {p90:8.2f} {ms[0]:8.2f}   {note}"


async def _run(rounds: int) -> None:
    print(
        f"command → event round trip over a loopback mosquitto, {rounds} rounds (ms); all clients TCP_NODELAY"
    )
    print(f"{'device':<14} {'median':>8} {'p90':>8} {'min':>8}")
    for title, extra in (
        ("set_tcp_nodelay false (mosquitto's default)", "set_tcp_nodelay false"),
        ("set_tcp_nodelay true (deploy/, the private broker)", ""),
    ):
        print(f"-- broker: {title}")
        with tempfile.TemporaryDirectory() as tmp:
            broker = Mosquitto(Path(tmp) / "broker", extra_config=extra)
            broker.start()
            try:
                with _Agent(broker.port) as agent:
                    with _paho_echo(broker.port):
                        print(_row("paho echo", await _measure(agent, rounds)))
                    disk, appends = await _link(broker.port, agent, rounds, Path(tmp) / "outbox.db")
                    memory, _ = await _link(broker.port, agent, rounds, Path(":memory:"))
            finally:
                broker.kill()
        append_ms = statistics.median(appends) * 1000
        print(_row("MqttLink disk", disk, f"outbox on disk (fsync'd append: median {append_ms:.2f} ms)"))
        print(_row("MqttLink mem", memory, "outbox in memory: the link's own share"))


def run(rounds: int) -> None:
    """Measure and print the table."""
    asyncio.run(_run(rounds))
