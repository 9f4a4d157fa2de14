"""Many lightweight simulated devices in one process, driven by one agent connection.

The devices come from ``make_device`` (the device side builds them: ``device.shell.fleet_device.SimDevice``
is the daemon's core, dispatch and message reader over the real link, with parts that need no audio);
this module only plays the agent. :class:`FleetAgent` plays the
agent for all of them over ONE connection (``robotface/+/event``), drives each through a short
conversation and measures command → event round trips. :func:`run_fleet` returns a
:class:`FleetReport` (latency percentiles, messages per second, memory per device).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import aiomqtt

from agent_link.harness.broker_url import parse_broker_url
from agent_link.harness.contract import check_contract
from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import (
    Event,
    ProtocolError,
    SayCommand,
    SleepCommand,
    decode_event,
)

_LOGGER = logging.getLogger(__name__)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class FleetReport:
    """What a fleet run measured."""

    devices: int = 0
    conversations: int = 0
    failed: int = 0
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    """Round trip per step (publish by the agent → event at the agent), in ms."""
    messages: int = 0
    """MQTT messages through the broker during the conversations (commands + inputs + events + statuses)."""
    seconds: float = 0.0
    """Wall time of the conversation phase."""
    connect_s: float = 0.0
    """Time until every device was connected."""
    rss_per_device_kib: float = 0.0
    """Resident memory added per simulated device (whole process RSS delta / N)."""
    sim_cpu_s: float = 0.0
    """CPU seconds the simulator process (devices + agent) used during the conversations."""
    violations: list[str] = field(default_factory=list)

    def all_latencies(self) -> list[float]:
        """Every round trip, all steps."""
        return [v for values in self.latencies_ms.values() for v in values]

    def summary(self) -> str:
        """Human-readable figures."""
        lat = self.all_latencies()
        lines = [
            f"devices: {self.devices}  conversations: {self.conversations}  failed: {self.failed}  "
            f"contract violations: {len(self.violations)}",
            f"connect all: {self.connect_s:.2f} s   memory per device: {self.rss_per_device_kib:.0f} KiB",
            f"round trip ms (all steps): median {_percentile(lat, 0.5):.1f}  p95 {_percentile(lat, 0.95):.1f}  "
            f"p99 {_percentile(lat, 0.99):.1f}",
            f"messages: {self.messages} in {self.seconds:.2f} s = {self.messages / max(self.seconds, 1e-9):.0f} msg/s"
            f"   simulator CPU {self.sim_cpu_s:.2f} s",
        ]
        for name, values in self.latencies_ms.items():
            lines.append(
                f"  {name:<28} median {_percentile(values, 0.5):7.1f}  p95 {_percentile(values, 0.95):7.1f}  "
                f"p99 {_percentile(values, 0.99):7.1f}"
            )
        lines.extend(f"  VIOLATION {v}" for v in self.violations[:20])
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly figures."""
        lat = self.all_latencies()
        return {
            "devices": self.devices,
            "conversations": self.conversations,
            "failed": self.failed,
            "violations": len(self.violations),
            "median_ms": _percentile(lat, 0.5),
            "p95_ms": _percentile(lat, 0.95),
            "p99_ms": _percentile(lat, 0.99),
            "messages": self.messages,
            "msg_per_s": self.messages / max(self.seconds, 1e-9),
            "connect_s": self.connect_s,
            "rss_per_device_kib": self.rss_per_device_kib,
            "sim_cpu_s": self.sim_cpu_s,
        }


class FleetAgent:
    """The agent for a whole fleet over one MQTT connection (``{root}/+/event`` and ``/status``)."""

    def __init__(self, broker_url: str, root: str = "robotface") -> None:
        self.address = parse_broker_url(broker_url)
        self.root = root
        self.events: dict[str, list[Event]] = defaultdict(list)
        self.online: set[str] = set()
        self.received = 0
        self.sent = 0
        self._waiters: dict[tuple[str, str, str], asyncio.Future[float]] = {}
        self._client: aiomqtt.Client | None = None
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def __aenter__(self) -> FleetAgent:
        self._client = aiomqtt.Client(
            self.address.host, self.address.port, identifier=f"fleet-agent-{time.time_ns()}",
            username=self.address.username, password=self.address.password,
            protocol=aiomqtt.ProtocolVersion.V5, max_queued_incoming_messages=0,
        )  # fmt: skip
        await self._client.__aenter__()
        await self._client.subscribe(f"{self.root}/+/event", qos=1)
        await self._client.subscribe(f"{self.root}/+/status", qos=1)
        await self._client.publish(f"{self.root}/agent/status", b'{"online": true}', qos=1, retain=True)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._client is not None:
            await self._client.__aexit__(None, None, None)

    async def _read(self) -> None:
        assert self._client is not None
        async for message in self._client.messages:
            now = time.monotonic()
            self.received += 1
            parts = str(message.topic).split("/")
            device, kind = parts[-2], parts[-1]
            payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
            if kind == "status":
                with contextlib.suppress(Exception):
                    if json.loads(payload).get("online"):
                        self.online.add(device)
                    else:
                        self.online.discard(device)
                self._changed.set()
                continue
            try:
                event = decode_event(payload)
            except ProtocolError as err:
                _LOGGER.error("device %s sent an invalid event: %s", device, err)
                continue
            self.events[device].append(event)
            key = (device, event.type, _key_of(event))
            waiter = self._waiters.pop(key, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)

    async def wait_online(self, devices: list[str], timeout: float) -> None:
        """Until every device's status says online."""
        deadline = time.monotonic() + timeout
        wanted = set(devices)
        while not wanted <= self.online:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(wanted - self.online)} devices not online after {timeout:.0f} s")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.5)

    def expect(self, device: str, event_type: str, key: str = "") -> asyncio.Future[float]:
        """A future set (to the arrival time) by the next ``event_type`` of ``device`` with ``key``."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters[(device, event_type, key)] = future
        return future

    async def round_trip(
        self, device: str, topic: str, payload: bytes, event_type: str, key: str = ""
    ) -> float:
        """Publish, wait for ``event_type`` (with ``say`` / ``text`` = ``key``); returns ms."""
        assert self._client is not None
        future = self.expect(device, event_type, key)
        t0 = time.monotonic()
        await self._client.publish(f"{self.root}/{device}/{topic}", payload, qos=1)
        self.sent += 1
        return (await asyncio.wait_for(future, 30.0) - t0) * 1000.0


def _key_of(event: Event) -> str:
    for name in ("say", "text"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            return value
    return ""


async def converse(agent: FleetAgent, device: str, n: int, report: FleetReport) -> None:
    """One conversation: tap → wake, typed text → transcript, say → playback, sleep → asleep."""
    lat = report.latencies_ms
    text = f"hello from {device} #{n}"
    lat["sim/tap → wake"].append(await agent.round_trip(device, "sim/tap", b"{}", "wake"))
    lat["sim/text → transcript"].append(
        await agent.round_trip(device, "sim/text", json.dumps({"text": text}).encode(), "transcript", text)
    )
    say = f"r-{device}-{n}"
    cmd = SayCommand(id=say, say=say, text="Hi there! [happy] Nice to see you.")
    finished = agent.expect(device, "playback_finished", say)
    lat["say → playback_started"].append(
        await agent.round_trip(device, "command", cmd.encode(), "playback_started", say)
    )
    await asyncio.wait_for(finished, 30.0)
    sleep = SleepCommand(id=f"s-{device}-{n}")
    lat["sleep → asleep"].append(await agent.round_trip(device, "command", sleep.encode(), "asleep"))


class FleetDevice(Protocol):
    """What the fleet needs of a simulated device."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...


DeviceFactory = Callable[[str, LinkSettings, Path], FleetDevice]
"""``(device_id, link settings, state dir) → device``."""


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def run_fleet(
    broker_url: str,
    count: int,
    state_dir: Path,
    conversations: int = 1,
    prefix: str = "sim",
    *,
    make_device: DeviceFactory,
) -> FleetReport:
    """Start ``count`` simulated devices, drive each through ``conversations`` conversations."""
    report = FleetReport(devices=count)
    settings = LinkSettings(broker=broker_url, keepalive_s=60, reconnect_min_s=0.5, reconnect_max_s=5.0)
    await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
    ids = [f"{prefix}-{i:05d}" for i in range(count)]
    async with FleetAgent(broker_url) as agent:
        rss0 = _rss_kib()
        t0 = time.monotonic()
        devices = [make_device(d, settings, state_dir) for d in ids]
        for i in range(0, count, 100):  # ramp: 100 connects at a time
            await asyncio.gather(*(dev.start() for dev in devices[i : i + 100]))
            await asyncio.sleep(0.05)
        try:
            await agent.wait_online(ids, timeout=60 + count / 10)
            report.connect_s = time.monotonic() - t0
            report.rss_per_device_kib = (_rss_kib() - rss0) / count
            received0, sent0 = agent.received, agent.sent
            t1, cpu1 = time.monotonic(), time.process_time()
            for n in range(conversations):
                results = await asyncio.gather(
                    *(converse(agent, d, n, report) for d in ids), return_exceptions=True
                )
                report.failed += sum(isinstance(r, BaseException) for r in results)
                report.conversations += sum(not isinstance(r, BaseException) for r in results)
            await asyncio.sleep(0.2)
            report.seconds = time.monotonic() - t1
            report.sim_cpu_s = time.process_time() - cpu1
            report.messages = (agent.received - received0) + (agent.sent - sent0)
            for d in ids:
                report.violations += [f"{d}: {v}" for v in check_contract(agent.events[d], from_start=True)]
        finally:
            await asyncio.gather(*(dev.close() for dev in devices), return_exceptions=True)
    return report
