"""sd_notify: a test socket plays systemd's notify socket."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from device.shell.notify import SystemdNotifier


class NotifySocket:
    """An AF_UNIX datagram socket bound like systemd's, collecting what the service sends."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(2.0)

    def receive(self) -> list[str]:
        return self.sock.recv(4096).decode().split("\n")

    def nothing_pending(self) -> bool:
        self.sock.setblocking(False)
        try:
            self.sock.recv(4096)
        except BlockingIOError:
            return True
        finally:
            self.sock.settimeout(2.0)
        return False


@pytest.fixture
def path_socket(tmp_path: Path) -> Iterator[tuple[NotifySocket, str]]:
    address = str(tmp_path / "notify")
    listener = NotifySocket(address)
    yield listener, address
    listener.sock.close()


def test_ready_status_watchdog_stopping_are_sent(path_socket: tuple[NotifySocket, str]) -> None:
    listener, address = path_socket
    notifier = SystemdNotifier({"NOTIFY_SOCKET": address})
    assert notifier.enabled
    assert notifier.ready("models loaded,\nbroker up")
    assert listener.receive() == ["READY=1", "STATUS=models loaded, broker up"]
    assert notifier.status("listening")
    assert listener.receive() == ["STATUS=listening"]
    assert notifier.watchdog()
    assert listener.receive() == ["WATCHDOG=1"]
    assert notifier.extend_timeout(90)
    assert listener.receive() == ["EXTEND_TIMEOUT_USEC=90000000"]
    assert notifier.stopping()
    assert listener.receive() == ["STOPPING=1"]
    assert notifier.watchdog_trigger()
    assert listener.receive() == ["WATCHDOG=trigger"]
    notifier.close()


def test_abstract_socket_with_at_sign() -> None:
    name = f"robot-face-test-{uuid.uuid4().hex}"
    listener = NotifySocket("\0" + name)
    try:
        notifier = SystemdNotifier({"NOTIFY_SOCKET": "@" + name})
        assert notifier.ready()
        assert listener.receive() == ["READY=1"]
    finally:
        listener.sock.close()


def test_reads_os_environ_by_default(
    path_socket: tuple[NotifySocket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    listener, address = path_socket
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    assert SystemdNotifier().watchdog()
    assert listener.receive() == ["WATCHDOG=1"]


def test_without_notify_socket_everything_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = SystemdNotifier()
    assert not notifier.enabled
    assert not notifier.ready()
    assert not notifier.watchdog()
    assert not notifier.stopping()
    assert not notifier.status("x")
    assert notifier.watchdog_interval() is None


def test_unsupported_address_disables_notifications() -> None:
    notifier = SystemdNotifier({"NOTIFY_SOCKET": "vsock:2:1234"})
    assert not notifier.enabled
    assert not notifier.ready()


def test_socket_gone_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "missing")})
    assert not notifier.ready()
    assert "sd_notify READY=1 failed" in caplog.text
    listener = NotifySocket(str(tmp_path / "missing"))  # systemd came back: the next send works
    try:
        assert notifier.watchdog()
        assert listener.receive() == ["WATCHDOG=1"]
    finally:
        listener.sock.close()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "self"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "x"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], expected: float | None) -> None:
    env = {k: (str(os.getpid()) if v == "self" else v) for k, v in env.items()}
    assert SystemdNotifier({"NOTIFY_SOCKET": "@x", **env}).watchdog_interval() == expected


async def test_keep_alive_pings_at_half_interval_only_while_healthy(
    path_socket: tuple[NotifySocket, str],
) -> None:
    listener, address = path_socket
    healthy = True
    notifier = SystemdNotifier({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"})
    task = asyncio.create_task(notifier.keep_alive(lambda: healthy))
    try:
        first = await asyncio.to_thread(listener.receive)
        second = await asyncio.to_thread(listener.receive)
        assert first == second == ["WATCHDOG=1"]
        healthy = False
        await asyncio.sleep(0.35)  # at least one ping slot while unhealthy
        while not listener.nothing_pending():
            pass  # drain pings sent before the flip
        await asyncio.sleep(0.25)
        assert listener.nothing_pending()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_keep_alive_returns_without_watchdog(path_socket: tuple[NotifySocket, str]) -> None:
    _, address = path_socket
    await asyncio.wait_for(SystemdNotifier({"NOTIFY_SOCKET": address}).keep_alive(lambda: True), 1.0)
