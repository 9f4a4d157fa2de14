"""systemd service notifications (``sd_notify``): readiness, watchdog pings, stopping, status.

The protocol is one datagram of ``KEY=VALUE`` lines sent to the AF_UNIX socket named by
``$NOTIFY_SOCKET`` (a path, or an abstract socket written with a leading ``@``). Without
``NOTIFY_SOCKET`` (not started by systemd, or ``Type=simple``) every call is a no-op.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping

_LOGGER = logging.getLogger(__name__)


def _socket_address(value: str) -> str | None:
    """The connectable address for a ``NOTIFY_SOCKET`` value, or None if it is not AF_UNIX."""
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


class SystemdNotifier:
    """Sends ``sd_notify`` messages; every method is a no-op when not run under systemd.

    Sending never raises: a failure is logged (the daemon must keep running), and :meth:`send`
    returns whether the message went out.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        raw = env.get("NOTIFY_SOCKET") or None
        self._address = _socket_address(raw) if raw else None
        if raw and self._address is None:
            _LOGGER.warning("NOTIFY_SOCKET %r is not an AF_UNIX socket; notifications disabled", raw)
        self._watchdog_usec = env.get("WATCHDOG_USEC")
        self._watchdog_pid = env.get("WATCHDOG_PID")
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """True when there is a notify socket to talk to."""
        return self._address is not None

    def send(self, *lines: str) -> bool:
        """Send one datagram made of ``lines`` (``KEY=VALUE``); True if it was sent."""
        if self._address is None:
            return False
        payload = "\n".join(lines).encode()
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.sendto(payload, self._address)
                return True
            except OSError as exc:
                _LOGGER.warning("sd_notify %s failed: %s", lines[0] if lines else "", exc)
                self._close_locked()
                return False

    def ready(self, status: str | None = None) -> bool:
        """Tell systemd start-up is complete (models loaded, broker link up)."""
        lines = ["READY=1"]
        if status:
            lines.append(f"STATUS={_one_line(status)}")
        return self.send(*lines)

    def watchdog(self) -> bool:
        """Ping the watchdog (only while healthy)."""
        return self.send("WATCHDOG=1")

    def watchdog_trigger(self) -> bool:
        """Tell systemd the service is hung: it is handled like a missed watchdog ping."""
        return self.send("WATCHDOG=trigger")

    def stopping(self, status: str | None = None) -> bool:
        """Tell systemd the service is shutting down."""
        lines = ["STOPPING=1"]
        if status:
            lines.append(f"STATUS={_one_line(status)}")
        return self.send(*lines)

    def status(self, text: str) -> bool:
        """Set the one-line status shown by ``systemctl status``."""
        return self.send(f"STATUS={_one_line(text)}")

    def extend_timeout(self, seconds: float) -> bool:
        """Ask for ``seconds`` more before the start/stop timeout (slow model loading)."""
        return self.send(f"EXTEND_TIMEOUT_USEC={max(0, int(seconds * 1_000_000))}")

    def watchdog_interval(self) -> float | None:
        """The watchdog timeout in seconds if systemd expects pings from this process, else None.

        Ping at half this interval. None when ``WATCHDOG_USEC`` is unset/invalid/zero or
        ``WATCHDOG_PID`` names another process.
        """
        if not self._watchdog_usec:
            return None
        if self._watchdog_pid:
            try:
                if int(self._watchdog_pid) != os.getpid():
                    return None
            except ValueError:
                return None
        try:
            usec = int(self._watchdog_usec)
        except ValueError:
            _LOGGER.warning("ignoring invalid WATCHDOG_USEC %r", self._watchdog_usec)
            return None
        return usec / 1_000_000 if usec > 0 else None

    async def keep_alive(self, healthy: Callable[[], bool]) -> None:
        """Ping the watchdog every half interval while ``healthy()``; returns at once without a watchdog.

        Cancel the task to stop it. An unhealthy check skips the ping (systemd then restarts us
        once the interval passes without one).
        """
        interval = self.watchdog_interval()
        if interval is None or not self.enabled:
            return
        while True:
            if healthy():
                self.watchdog()
            else:
                _LOGGER.warning("unhealthy: skipping the watchdog ping")
            await asyncio.sleep(interval / 2)

    def close(self) -> None:
        """Close the socket (a later send reopens it)."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _one_line(text: str) -> str:
    return " ".join(text.split())
