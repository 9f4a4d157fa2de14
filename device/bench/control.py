"""``robot-face bench control``: control latency over MQTT, the real daemon beside a naive device.

One run starts a private mosquitto, the real daemon in simulation (``robot-face run --simulate``, no
face, speech to nowhere at real-time speed) and a *naive device*: a bare paho client that answers
``sim/tap`` with ``wake`` and a ``stop`` with ``playback_finished`` at once — the floor that the broker,
the JSON and the two hops cost. An agent client (paho, its own network thread) measures, N times:

- **tap → wake**: ``sim/tap`` published → the ``wake`` event received;
- **stop → silent**: with a long reply playing (``playback_started`` received), ``stop`` published →
  ``playback_finished`` ``interrupted: true`` received. The daemon sends it once the stop's fade-out
  has reached the output (the speaker's timing at the sink), so it is when the device is silent.

Each round then puts the device back to sleep (``sleep`` → ``asleep``) for the next tap.

The **backlog** case publishes a burst of ``say`` chunks (``--backlog N``, 40 by default) right before the
tap or the stop, so the control item has data ahead of it in the device's inbox. It runs the daemon
twice side by side: control first (the daemon as it ships) and the plain FIFO inbox (arrival order, the
old ordering: ``device.bench.fifo_daemon``, selectable only here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from agent_link.harness.broker import Mosquitto
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.protocol.event_messages import (
    AsleepBody,
    EventBody,
    PlaybackFinishedBody,
    PlaybackStartedBody,
    WakeBody,
)
from agent_link.protocol.messages import SayCommand, SleepCommand, StopCommand
from agent_link.protocol.topics import Topics

LONG_REPLY = " ".join(["This is a long reply about robots, boats and lighthouses by the sea."] * 6)


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``bench control``."""
    b = bench.add_parser("control", help="tap → wake and stop → silent over MQTT, daemon vs a naive device")
    b.add_argument("--runs", type=int, default=20, help="rounds per device (default 20)")
    b.add_argument(
        "--backlog",
        type=int,
        default=40,
        help="say chunks published right before the control item (default 40)",
    )
    b.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    b.set_defaults(func=_bench_control)


def _no_delay(client: mqtt.Client, userdata: Any, sock: Any) -> None:
    """No Nagle on the bench's own sockets (a PUBACK just sent must not hold the next PUBLISH back
    for a delayed ACK): what is measured is the device, not the measuring client."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Client:
    """A paho client on its own network thread; ``expect`` waits for a message matching a test."""

    def __init__(self, broker: Mosquitto, client_id: str) -> None:
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_socket_open = _no_delay
        self._cond = threading.Condition()
        self._inbox: list[tuple[float, str, dict[str, Any]]] = []
        self.on_message: Callable[[str, dict[str, Any]], None] | None = None
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        received = time.perf_counter()
        try:
            payload = json.loads(message.payload) if message.payload else {}
        except ValueError:
            payload = {}
        if self.on_message is not None:
            self.on_message(message.topic, payload)
        with self._cond:
            self._inbox.append((received, message.topic, payload))
            self._cond.notify_all()

    def subscribe(self, *topics: str) -> None:
        for topic in topics:
            self.client.subscribe(topic, qos=1)
        time.sleep(0.3)  # SUBACK

    def publish(self, topic: str, payload: bytes) -> float:
        sent = time.perf_counter()
        self.client.publish(topic, payload, qos=1)
        return sent

    def expect(self, test: Callable[[str, dict[str, Any]], bool], timeout: float = 20.0) -> float:
        """Wait for (and consume) the first message passing ``test``; return when it was received."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i, (received, topic, payload) in enumerate(self._inbox):
                    if test(topic, payload):
                        del self._inbox[: i + 1]
                        return received
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no expected message within timeout")
                self._cond.wait(left)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


class NaiveDevice:
    """The floor: answers ``sim/tap`` with ``wake``, ``say`` with ``playback_started``, ``stop`` with
    ``playback_finished`` (interrupted), ``sleep`` with ``asleep``; no core, no outbox, no audio."""

    def __init__(self, broker: Mosquitto, topics: Topics) -> None:
        self.topics = topics
        self._seq = 0
        self._say: str | None = None
        self._client = _Client(broker, topics.device)
        self._client.on_message = self._answer
        self._client.subscribe(topics.sim_tap, topics.command)

    def _emit(self, body: EventBody) -> None:
        self._seq += 1
        event = body.to_event(id=f"{self.topics.device}-1-{self._seq}", boot=1, seq=self._seq)
        self._client.client.publish(self.topics.event, event.encode(), qos=1)

    def _answer(self, topic: str, payload: dict[str, Any]) -> None:
        now = time.time()
        if topic == self.topics.sim_tap:
            self._emit(WakeBody(source="sim", ts=now))
        elif payload.get("type") == "say":
            self._say = str(payload["say"])
            self._emit(PlaybackStartedBody(say=self._say, ts=now))
        elif payload.get("type") == "stop" and self._say is not None:
            self._emit(PlaybackFinishedBody(say=self._say, interrupted=True, ts=now))
            self._say = None
        elif payload.get("type") == "sleep":
            self._emit(AsleepBody(reason="command", ts=now))

    def close(self) -> None:
        self._client.close()


def _is(kind: str, **fields: Any) -> Callable[[str, dict[str, Any]], bool]:
    def test(topic: str, payload: dict[str, Any]) -> bool:
        return payload.get("type") == kind and all(payload.get(k) == v for k, v in fields.items())

    return test


class FifoDaemon(DaemonProcess):
    """The daemon with the plain FIFO inbox (``device.bench.fifo_daemon``): the baseline of the backlog."""

    def argv(self) -> list[str]:
        args = super().argv()
        return [sys.executable, "-m", "device.bench.fifo_daemon", *args[args.index("run") :]]


def _burst(agent: _Client, topics: Topics, tag: str, say: str, count: int) -> None:
    """``count`` chunks of reply ``say`` (not final), published back to back."""
    for i in range(count):
        chunk = SayCommand(id=f"c-{tag}-{i}", say=say, text=f"And then, part {i} of the story.", final=False)
        agent.publish(topics.command, chunk.encode())


def measure(
    agent: _Client, topics: Topics, runs: int, backlog: int = 0, case: str = ""
) -> dict[str, list[float]]:
    """``runs`` rounds of tap → wake and stop → silent against the device behind ``topics``; with
    ``backlog``, that many say chunks are published right before the tap and the stop. ``case`` keeps
    the command ids of two cases on one device apart (a repeated id is a duplicate, ignored)."""
    figures: dict[str, list[float]] = {"tap → wake": [], "stop → silent": []}
    for n in (f"{case}{backlog}-{i}" for i in range(runs)):  # command and reply ids unique per case
        _burst(
            agent, topics, f"asleep-{n}", f"asleep-{n}", backlog
        )  # refused (asleep): data ahead of the tap
        sent = agent.publish(topics.sim_tap, b"{}")
        figures["tap → wake"].append((agent.expect(_is("wake")) - sent) * 1000)
        say = f"bench-{n}"
        first = SayCommand(id=f"c-say-{n}", say=say, text=LONG_REPLY, final=not backlog)
        agent.publish(topics.command, first.encode())
        agent.expect(_is("playback_started", say=say))
        time.sleep(0.3)  # the reply is well under way
        _burst(
            agent, topics, f"more-{n}", say, backlog
        )  # more of the playing reply, queued ahead of the stop
        sent = agent.publish(topics.command, StopCommand(id=f"c-stop-{n}").encode())
        figures["stop → silent"].append(
            (agent.expect(_is("playback_finished", say=say, interrupted=True)) - sent) * 1000
        )
        agent.publish(topics.command, SleepCommand(id=f"c-sleep-{n}").encode())
        agent.expect(_is("asleep"))
    return figures


def _row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{name:<14} median {statistics.median(values):7.1f} ms   p90 {p90:7.1f} ms"


async def _wait_ready(*daemons: DaemonProcess) -> None:
    await asyncio.gather(*(d.wait_ready() for d in daemons))


def _bench_control(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="robot-face-bench-") as tmp:
        work = Path(tmp)
        broker = Mosquitto(work / "mosquitto", extra_config="set_tcp_nodelay true\n")  # as deploy/mosquitto
        broker.start()
        daemon = DaemonProcess(broker.url, "bench-daemon", work / "daemon")
        fifo = FifoDaemon(broker.url, "bench-fifo", work / "fifo")
        naive: NaiveDevice | None = None
        agent: _Client | None = None
        try:
            daemon.start()
            fifo.start()
            asyncio.run(_wait_ready(daemon, fifo))
            naive = NaiveDevice(broker, Topics(device="bench-naive"))
            agent = _Client(broker, "bench-agent")
            agent.subscribe("robotface/+/event")
            results = {
                "daemon": measure(agent, Topics(device="bench-daemon"), args.runs),
                "naive": measure(agent, Topics(device="bench-naive"), args.runs),
                f"backlog {args.backlog}: control first": measure(
                    agent, Topics(device="bench-daemon"), args.runs, args.backlog, case="b"
                ),
                f"backlog {args.backlog}: FIFO": measure(
                    agent, Topics(device="bench-fifo"), args.runs, args.backlog
                ),
            }
        finally:
            if agent is not None:
                agent.close()
            if naive is not None:
                naive.close()
            daemon.stop()
            fifo.stop()
            broker.kill()
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"control latency over MQTT, {args.runs} rounds each (agent → broker → device → broker → agent)")
    width = max(len(name) for name in results)
    for metric in ("tap → wake", "stop → silent"):
        print(f"-- {metric}")
        for device, figures in results.items():
            print(f"   {device:<{width}} {_row('', figures[metric])}")
    return 0
