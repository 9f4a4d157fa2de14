"""MqttLink against a real mosquitto: birth/will/shutdown status, command delivery, outbox delivery."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent_link.link.mqtt_link import MqttLink, backoff_delay
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkConfigError, LinkSettings
from agent_link.protocol.event_messages import SpeechStartedBody, TapBody
from agent_link.protocol.messages import StatusMessage, decode_command
from agent_link.protocol.topics import Topics
from tests.agent_link.agent_client import agent, read_retained
from tests.broker import Mosquitto

ROOT = Path(__file__).resolve().parents[2]
DEVICE = "dev1"
T = Topics("robotface", DEVICE)


def _settings(broker: Mosquitto, **kw: object) -> LinkSettings:
    base: dict[str, object] = {
        "broker": broker.url,
        "keepalive_s": 5,
        "reconnect_min_s": 0.1,
        "reconnect_max_s": 0.5,
        "publish_timeout_s": 5.0,
    }
    base.update(kw)
    return LinkSettings(**base)  # type: ignore[arg-type]


class Running:
    """An in-process MqttLink with its messages and connection state recorded."""

    def __init__(self, broker: Mosquitto, outbox: Outbox, boot: int, simulate: bool = False) -> None:
        self.messages: list[tuple[str, bytes]] = []
        self.connections: list[tuple[bool, str]] = []
        self._changed = asyncio.Event()
        self.link = MqttLink(
            _settings(broker), DEVICE, boot, outbox, self._on_message, self._on_connection, simulate=simulate
        )
        self.task: asyncio.Task[None] | None = None

    def _on_message(self, kind: str, payload: bytes, ts: float) -> None:
        assert abs(ts - time.time()) < 5
        self.messages.append((kind, payload))
        self._changed.set()

    def _on_connection(self, connected: bool, detail: str) -> None:
        self.connections.append((connected, detail))
        self._changed.set()

    async def wait_for(self, predicate: object, timeout: float = 10.0) -> None:
        assert callable(predicate)
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def wait_connected(self) -> None:
        await self.wait_for(lambda: self.link.connected)


@contextlib.asynccontextmanager
async def running(
    broker: Mosquitto, outbox: Outbox, boot: int = 1, simulate: bool = False
) -> AsyncIterator[Running]:
    r = Running(broker, outbox, boot, simulate)
    r.task = asyncio.create_task(r.link.run())
    try:
        yield r
    finally:
        await r.link.shutdown(StatusMessage(online=False, boot=boot), flush_timeout=2.0)
        r.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await r.task


def _spawn(
    broker: Mosquitto,
    outbox: Path,
    boot: int,
    events: int = 0,
    crash_on_command: bool = False,
    keepalive: int = 5,
) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "tests.agent_link.link_process", "--port", str(broker.port)]
    cmd += ["--keepalive", str(keepalive)]
    cmd += ["--device", DEVICE, "--boot", str(boot), "--outbox", str(outbox), "--events", str(events)]
    cmd += ["--crash-on-command"] if crash_on_command else []
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _wait_line(proc: subprocess.Popen[str], wanted: str, timeout: float = 15.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"link process ended before printing {wanted}")
        if line.strip() == wanted:
            return
    raise AssertionError(f"link process did not print {wanted}")


def _kill9(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    if proc.stdout:
        proc.stdout.close()


def _cmd(i: int) -> bytes:
    return json.dumps({"v": 1, "type": "say", "id": f"c-{i}", "say": "r-1", "text": f"chunk {i}"}).encode()


def test_backoff_grows_to_the_cap_with_jitter() -> None:
    delays = [backoff_delay(a, 1.0, 60.0) for a in range(12)]
    assert 0.5 <= delays[0] <= 1.0
    assert 4.0 <= delays[3] <= 8.0
    assert all(30.0 <= d <= 60.0 for d in delays[6:])


async def test_birth_status_retained_on_connect(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 3)
    async with running(mosquitto, outbox, boot=3) as r:
        status = StatusMessage(online=True, boot=3, state="asleep", sleep_allowed=True, version="0.1.0")
        r.link.set_status(status)
        await r.wait_connected()
        deadline = time.monotonic() + 5
        while (got := await read_retained(mosquitto, T.status, timeout=0.5)) != status.to_json():
            assert time.monotonic() < deadline, got
            await asyncio.sleep(0.1)
        assert r.connections[0][0] is True


async def test_shutdown_publishes_offline_status(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 4)
    async with running(mosquitto, outbox, boot=4) as r:
        await r.wait_connected()
        r.link.set_status(StatusMessage(online=True, boot=4, state="idle"))
        outbox.append(TapBody(source="sim", ts=1.0))
        r.link.notify_outbox()
        await r.link.shutdown(StatusMessage(online=False, boot=4, state="asleep"), flush_timeout=3.0)
        assert not r.link.connected
    assert await read_retained(mosquitto, T.status) == {"v": 1, "online": False, "boot": 4, "state": "asleep"}
    assert len(outbox) == 0


async def test_will_is_published_when_the_process_is_killed(mosquitto: Mosquitto, tmp_path: Path) -> None:
    async with agent(mosquitto, [T.status]) as observer:
        proc = _spawn(mosquitto, tmp_path / "outbox.db", boot=9)
        try:
            _wait_line(proc, "CONNECTED")
            await observer.wait_for(lambda: any(p.get("online") for p in observer.payloads(T.status)))
        finally:
            _kill9(proc)
        await observer.wait_for(lambda: observer.payloads(T.status)[-1].get("online") is False)
    assert observer.payloads(T.status)[-1] == {"v": 1, "online": False, "boot": 9}
    assert await read_retained(mosquitto, T.status) == {"v": 1, "online": False, "boot": 9}


async def test_will_is_published_when_the_process_hangs(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """A frozen device (SIGSTOP: no traffic, socket open) is declared offline after 1.5 × keepalive."""
    async with agent(mosquitto, [T.status]) as observer:
        proc = _spawn(mosquitto, tmp_path / "outbox.db", boot=11, keepalive=2)
        try:
            _wait_line(proc, "CONNECTED")
            await observer.wait_for(lambda: any(p.get("online") for p in observer.payloads(T.status)))
            os.kill(proc.pid, signal.SIGSTOP)
            await observer.wait_for(
                lambda: observer.payloads(T.status)[-1].get("online") is False, timeout=10
            )
        finally:
            _kill9(proc)
    assert observer.payloads(T.status)[-1] == {"v": 1, "online": False, "boot": 11}


async def test_commands_delivered_in_order(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    async with running(mosquitto, outbox) as r, agent(mosquitto, []) as ag:
        await r.wait_connected()
        await ag.publish(T.agent_status, b'{"online": true}', retain=True)
        for i in range(30):
            await ag.publish(T.command, _cmd(i))
        await r.wait_for(lambda: sum(k == "command" for k, _ in r.messages) == 30)
        ids = [decode_command(p).id for k, p in r.messages if k == "command"]
        assert ids == [f"c-{i}" for i in range(30)]
        assert ("agent_status", b'{"online": true}') in r.messages
        # sim topics are not subscribed without simulate=True
        await ag.publish(T.sim_tap, b"{}")
        await ag.publish(T.command, _cmd(99))
        await r.wait_for(lambda: any(p == _cmd(99) for _, p in r.messages))
        assert all(k != "sim_tap" for k, _ in r.messages)


async def test_oversized_command_is_handed_on(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    big = b'{"v":1,"type":"say","id":"big","say":"r","text":"' + b"a" * 70_000 + b'"}'
    async with running(mosquitto, outbox) as r, agent(mosquitto, []) as ag:
        await r.wait_connected()
        await ag.publish(T.command, big)
        await r.wait_for(lambda: ("command", big) in r.messages)


async def test_sim_topics_when_simulating(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    async with running(mosquitto, outbox, simulate=True) as r, agent(mosquitto, []) as ag:
        await r.wait_connected()
        await ag.publish(T.sim_tap, b"{}")
        await ag.publish(T.sim_text, b'{"text":"hi"}')
        await ag.publish(T.sim_audio, b"RIFF....")
        await r.wait_for(lambda: len(r.messages) >= 3)
        assert [k for k, _ in r.messages] == ["sim_tap", "sim_text", "sim_audio"]


async def test_command_sent_while_device_down_is_delivered(mosquitto: Mosquitto, tmp_path: Path) -> None:
    proc = _spawn(mosquitto, tmp_path / "outbox.db", boot=1)
    try:
        _wait_line(proc, "CONNECTED")  # persistent session + subscription now exist
    finally:
        _kill9(proc)
    async with agent(mosquitto, []) as ag:
        for i in range(5):
            await ag.publish(T.command, _cmd(i))
    mosquitto.restart()  # queued QoS 1 commands also survive a broker restart
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 2)
    async with running(mosquitto, outbox, boot=2) as r:
        await r.wait_for(lambda: len(r.messages) >= 5)
        assert [decode_command(p).id for _, p in r.messages] == [f"c-{i}" for i in range(5)]


async def test_events_appended_while_broker_down_arrive_in_order(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 5)
    async with running(mosquitto, outbox, boot=5) as r:
        ag = agent(mosquitto, [T.event], identifier="agent-events")
        async with ag as observer:
            await r.wait_connected()
            outbox.append(TapBody(source="sim", ts=1.0))
            r.link.notify_outbox()
            await observer.wait_for(lambda: len(observer.payloads(T.event)) == 1)
            # Acknowledged by the broker before it goes (else it is resent after: at least once).
            for _ in range(100):
                if len(outbox) == 0:
                    break
                await asyncio.sleep(0.05)
            assert len(outbox) == 0
        mosquitto.stop()
        await r.wait_for(lambda: not r.link.connected)
        for i in range(20):
            outbox.append(SpeechStartedBody(utterance=f"u-{i}", ts=2.0 + i))
            r.link.notify_outbox()
        mosquitto.start()
        async with agent(mosquitto, [T.event], identifier="agent-events") as observer:
            await observer.wait_for(lambda: len(observer.payloads(T.event)) >= 20, timeout=20)
            events = observer.payloads(T.event)
    assert [e["seq"] for e in events] == list(range(2, 22))
    assert [e["id"] for e in events] == [f"{DEVICE}-5-{s}" for s in range(2, 22)]
    assert len(outbox) == 0


async def test_events_pending_at_kill_are_sent_after_restart(mosquitto: Mosquitto, tmp_path: Path) -> None:
    db = tmp_path / "outbox.db"
    mosquitto.stop()
    proc = _spawn(mosquitto, db, boot=1, events=10)
    try:
        _wait_line(proc, "APPENDED")
        await asyncio.sleep(0.3)
    finally:
        _kill9(proc)
    mosquitto.start()
    async with agent(mosquitto, [T.event]) as observer:
        outbox = Outbox(db, DEVICE, 2)
        async with running(mosquitto, outbox, boot=2) as r:
            await r.wait_connected()
            outbox.append(TapBody(source="button", ts=5.0))
            r.link.notify_outbox()
            await observer.wait_for(lambda: len(observer.payloads(T.event)) >= 11)
    events = observer.payloads(T.event)
    assert [(e["boot"], e["seq"]) for e in events] == [(1, s) for s in range(1, 11)] + [(2, 1)]
    assert len({e["id"] for e in events}) == 11


@pytest.fixture
def auth_broker(tmp_path: Path) -> Iterator[Mosquitto]:
    """A broker that only accepts user ``dev`` with password ``right``."""
    pwfile = tmp_path / "passwd"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(pwfile), "dev", "right"], check=True)
    broker = Mosquitto(tmp_path / "auth", extra_config=f"password_file {pwfile}", anonymous=False)
    broker.start()
    yield broker
    broker.kill()


async def test_credentials_from_password_file(auth_broker: Mosquitto, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("right\n")
    outbox = Outbox(tmp_path / "o.db", DEVICE, 1)
    r = Running(auth_broker, outbox, 1)
    r.link = MqttLink(
        _settings(auth_broker, username="dev", password_file=str(secret)),
        DEVICE,
        1,
        outbox,
        r._on_message,
        r._on_connection,
    )
    task = asyncio.create_task(r.link.run())
    await r.wait_connected()
    await r.link.shutdown(StatusMessage(online=False, boot=1))
    await task


async def test_refused_connection_is_logged_without_hot_loop(
    auth_broker: Mosquitto, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("wrong\n")
    settings = _settings(auth_broker, username="dev", password_file=str(secret))
    link = MqttLink(
        settings, DEVICE, 1, Outbox(tmp_path / "o.db", DEVICE, 1), lambda *a: None, lambda *a: None
    )
    task = asyncio.create_task(link.run())
    await asyncio.sleep(2.0)
    await link.shutdown(StatusMessage(online=False, boot=1), flush_timeout=0.5)
    await task
    refused = [r for r in caplog.records if "refused the connection" in r.getMessage()]
    assert refused and "password" in refused[0].getMessage().lower()
    # back-off 0.1 → 0.5 s with equal jitter (each wait ≥ half its step): at most ~10 in 2 s, not a hot loop
    assert 1 <= len(refused) <= 12
    assert not link.connected


def test_missing_password_file_is_a_clear_error(tmp_path: Path) -> None:
    settings = LinkSettings(username="dev", password_file=str(tmp_path / "nope"))
    with pytest.raises(LinkConfigError, match="password_file"):
        MqttLink(settings, DEVICE, 1, Outbox(tmp_path / "o.db", DEVICE, 1), lambda *a: None, lambda *a: None)


@pytest.mark.parametrize("url", ["http://x", "mqtt://", "mqtt://u:p@host", "mqtt://host:99999"])
def test_bad_broker_url(url: str) -> None:
    with pytest.raises(LinkConfigError, match="broker URL"):
        LinkSettings(broker=url)


def test_broker_url_defaults() -> None:
    assert LinkSettings(broker="mqtts://example.org").endpoint() == ("example.org", 8883, True)
    assert LinkSettings().endpoint() == ("127.0.0.1", 1883, False)


async def test_status_change_is_republished_retained(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 2)
    async with running(mosquitto, outbox, boot=2) as r, agent(mosquitto, [T.status]) as observer:
        await r.wait_connected()
        r.link.set_status(StatusMessage(online=True, boot=2, state="idle", volume=0.5))
        await observer.wait_for(lambda: any(p.get("state") == "idle" for p in observer.payloads(T.status)))
        assert await read_retained(mosquitto, T.status) == {
            "v": 1, "online": True, "boot": 2, "state": "idle", "volume": 0.5,
        }  # fmt: skip


async def test_shutdown_without_broker_does_not_hang(mosquitto: Mosquitto, tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 1)
    mosquitto.stop()
    r = Running(mosquitto, outbox, 1)
    task = asyncio.create_task(r.link.run())
    outbox.append(TapBody(source="sim", ts=1.0))
    await asyncio.sleep(0.5)
    async with asyncio.timeout(10):
        await r.link.shutdown(StatusMessage(online=False, boot=1), flush_timeout=1.0)
        await task
    assert len(outbox) == 1  # kept for the next start
    assert not r.link.connected and all(not c for c, _ in r.connections)


async def test_cancelled_link_leaves_with_the_will(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """Without shutdown() (task cancelled), the broker still publishes the Will: no stale online:true."""
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 6)
    r = Running(mosquitto, outbox, 6)
    async with agent(mosquitto, [T.status]) as observer:
        task = asyncio.create_task(r.link.run())
        await r.wait_connected()
        await observer.wait_for(lambda: any(p.get("online") for p in observer.payloads(T.status)))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await observer.wait_for(lambda: observer.payloads(T.status)[-1].get("online") is False)
    assert await read_retained(mosquitto, T.status) == {"v": 1, "online": False, "boot": 6}


async def test_command_is_redelivered_if_the_device_dies_while_handling_it(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """Incoming commands are acknowledged only after on_message took them (manual PUBACK)."""
    proc = _spawn(mosquitto, tmp_path / "outbox.db", boot=1, crash_on_command=True)
    try:
        _wait_line(proc, "CONNECTED")
        async with agent(mosquitto, []) as ag:
            await ag.publish(T.command, _cmd(1))
        assert await asyncio.to_thread(proc.wait, 10) == 3
    finally:
        _kill9(proc)
    outbox = Outbox(tmp_path / "outbox.db", DEVICE, 2)
    async with running(mosquitto, outbox, boot=2) as r:
        await r.wait_for(lambda: len(r.messages) >= 1)
        assert r.messages == [("command", _cmd(1))]


def test_session_expiry_below_the_contract_minimum_is_refused() -> None:
    with pytest.raises(LinkConfigError, match="3600"):
        LinkSettings(session_expiry_s=60)
