"""The link against a real mosquitto: the outbox's in-flight window, and acknowledgements of incoming
messages deferred until the handler's future is done (in arrival order)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_link.link.connection import MqttConnection
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.event_messages import SpeechStartedBody
from agent_link.protocol.messages import StatusMessage, decode_command
from agent_link.protocol.topics import Topics
from tests.agent_link.agent_client import agent
from tests.broker import Mosquitto

DEVICE = "dev1"
T = Topics("robotface", DEVICE)
Handler = Callable[[str, bytes, float], "asyncio.Future[None] | None"]


class InFlight:
    """Spies on ``MqttConnection.start_publish``: how many events awaited their PUBACK at most."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[asyncio.Future[Any]] = []
        self.most = 0
        real = MqttConnection.start_publish

        def spy(
            conn: MqttConnection, topic: str, payload: bytes, retain: bool = False
        ) -> asyncio.Future[Any]:
            future = real(conn, topic, payload, retain)
            if topic == T.event:
                self.started.append(future)
                self.most = max(self.most, sum(not f.done() for f in self.started))
            return future

        monkeypatch.setattr(MqttConnection, "start_publish", spy)


@contextlib.asynccontextmanager
async def linked(
    broker: Mosquitto, outbox: Outbox, on_message: Handler | None = None, **settings: Any
) -> AsyncIterator[MqttLink]:
    connected = asyncio.Event()
    link = MqttLink(
        LinkSettings(broker=broker.url, reconnect_min_s=0.1, reconnect_max_s=0.5, **settings),
        DEVICE,
        1,
        outbox,
        on_message or (lambda kind, payload, ts: None),
        lambda up, detail: connected.set() if up else None,
    )
    task = asyncio.create_task(link.run())
    try:
        await asyncio.wait_for(connected.wait(), 10)
        yield link
    finally:
        await link.shutdown(StatusMessage(online=False, boot=1), flush_timeout=2.0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _burst(link: MqttLink, outbox: Outbox, n: int) -> None:
    for i in range(n):
        outbox.append(SpeechStartedBody(utterance=f"u-{i}", ts=float(i)))
    link.notify_outbox()


@pytest.mark.parametrize(("window", "broker_limit", "expected"), [(16, "", 16), (1, "", 1), (16, "4", 4)])
async def test_events_go_out_in_a_window_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int, broker_limit: str, expected: int
) -> None:
    """Up to ``inflight_window`` events await their PUBACK at once (fewer if the broker's Receive
    Maximum says so); they arrive complete, in order, and are deleted once acknowledged."""
    extra = f"max_inflight_messages {broker_limit}\n" if broker_limit else ""
    broker = Mosquitto(tmp_path / "mosquitto", extra_config=extra)
    broker.start()
    spy = InFlight(monkeypatch)
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    try:
        async with (
            agent(broker, [T.event], identifier="agent-events") as observer,
            linked(broker, outbox, inflight_window=window) as link,
        ):
            await _burst(link, outbox, 60)
            await observer.wait_for(lambda: len(observer.payloads(T.event)) >= 60)
            for _ in range(100):  # the deletes run in a worker thread after the PUBACKs
                if len(outbox) == 0:
                    break
                await asyncio.sleep(0.05)
        events = observer.payloads(T.event)
        assert [e["seq"] for e in events] == list(range(1, 61))
        assert spy.most == expected
        assert len(spy.started) == 60  # each event sent once
        assert len(outbox) == 0
    finally:
        broker.kill()


async def test_events_in_flight_when_the_broker_goes_are_resent_in_order(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    async with agent(mosquitto, [T.event], identifier="agent-events") as observer:
        pass  # its persistent session queues the events while it is away
    async with linked(mosquitto, outbox) as link:
        await _burst(link, outbox, 200)
        await asyncio.sleep(0)  # the first window is on its way
        mosquitto.kill()  # no PUBACK for what is in flight
        mosquitto.start()
        async with agent(mosquitto, [T.event], identifier="agent-events") as observer:
            await observer.wait_for(
                lambda: {e["seq"] for e in observer.payloads(T.event)} >= set(range(1, 201)), 30
            )
            seqs = [e["seq"] for e in observer.payloads(T.event)]
    # nothing lost; a re-sent event (same id) may come twice, but never before an older one
    # that is still to come, and its last copies are in order
    assert sorted(set(seqs)) == list(range(1, 201))
    last = {s: i for i, s in enumerate(seqs)}
    assert [s for s, _ in sorted(last.items(), key=lambda kv: kv[1])] == list(range(1, 201))


async def test_incoming_messages_are_acknowledged_when_handled_and_in_arrival_order(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """c-1's future stays pending: c-1 is not acknowledged, nor c-2 behind it (done already);
    the broker redelivers both to the next connection, not c-0."""
    futures: dict[str, asyncio.Future[None]] = {}

    def hold_c1(kind: str, payload: bytes, ts: float) -> asyncio.Future[None] | None:
        if kind != "command":
            return None
        cid = decode_command(payload).id
        futures[cid] = asyncio.get_running_loop().create_future()
        if cid != "c-1":
            futures[cid].set_result(None)
        return futures[cid]

    def cmd(i: int) -> bytes:
        return json.dumps({"v": 1, "type": "stop", "id": f"c-{i}"}).encode()

    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    async with linked(mosquitto, outbox, hold_c1), agent(mosquitto, []) as ag:
        for i in range(3):
            await ag.publish(T.command, cmd(i))
        async with asyncio.timeout(10):
            while len(futures) < 3:
                await asyncio.sleep(0.01)
    again: list[str] = []
    got = asyncio.Event()

    def record(kind: str, payload: bytes, ts: float) -> None:
        if kind == "command":
            again.append(decode_command(payload).id)
            got.set()

    async with linked(mosquitto, outbox, record):
        async with asyncio.timeout(10):
            while len(again) < 2:
                got.clear()
                await got.wait()
    assert again == ["c-1", "c-2"]


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="inflight_window"):
        LinkSettings(inflight_window=0)


async def test_a_changed_status_and_the_events_after_it_go_out_back_to_back(
    mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event follows the status on the wire at once, not after the status's PUBACK has come back
    (a stop's ``playback_finished`` waited for that round trip); an agent still gets the status first."""
    statuses: list[asyncio.Future[Any]] = []
    sent: list[tuple[str, bool]] = []  # topic, and whether the status before it was acknowledged then
    real = MqttConnection.start_publish

    def spy(conn: MqttConnection, topic: str, payload: bytes, retain: bool = False) -> asyncio.Future[Any]:
        sent.append((topic, all(f.done() for f in statuses)))
        future = real(conn, topic, payload, retain)
        if topic == T.status:
            statuses.append(future)
        return future

    monkeypatch.setattr(MqttConnection, "start_publish", spy)
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    async with (
        agent(mosquitto, [T.status, T.event], identifier="agent-both") as observer,
        linked(mosquitto, outbox) as link,
    ):
        await observer.wait_for(lambda: bool(observer.payloads(T.status)))  # the birth status
        link.set_status(StatusMessage(online=True, boot=1, state="listening"))
        outbox.append(SpeechStartedBody(utterance="u-1", ts=1.0))
        link.notify_outbox()
        await observer.wait_for(lambda: bool(observer.payloads(T.event)))
        order = [(t, json.loads(p).get("state")) for t, p, _ in observer.received if p]
        assert sent[-2:] == [(T.status, True), (T.event, False)]  # sent before the status's PUBACK
    assert order.index((T.status, "listening")) < order.index((T.event, None))
