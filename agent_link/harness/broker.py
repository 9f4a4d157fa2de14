"""A private mosquitto broker on a free loopback port: for the demo, the tests and bench runs."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Mosquitto:
    """One mosquitto process with its own config, log and persistence directory.

    ``stop()`` (SIGTERM, persists sessions) / ``kill()`` (SIGKILL) and ``start()`` again on the
    same port and persistence directory, so persistent sessions survive a broker restart.
    """

    def __init__(
        self, workdir: Path, port: int | None = None, extra_config: str = "", anonymous: bool = True
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.persistence_dir = self.workdir / "data"
        self.persistence_dir.mkdir(exist_ok=True)
        self.log_path = self.workdir / "mosquitto.log"
        self.config_path = self.workdir / "mosquitto.conf"
        self.config_path.write_text(
            f"listener {self.port} 127.0.0.1\n"
            f"allow_anonymous {'true' if anonymous else 'false'}\n"
            "persistence true\n"
            f"persistence_location {self.persistence_dir}/\n"
            "autosave_interval 1\n"
            "user root\n"
            f"log_dest file {self.log_path}\n"
            "log_type all\n"
            "max_keepalive 65535\n"
            # As deploy/mosquitto: without it a PUBLISH that follows a PUBACK on the same socket
            # waits for the client's delayed ACK (~40 ms on every command → event round trip).
            "set_tcp_nodelay true\n"
            f"{extra_config}\n"
        )
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``mqtt://127.0.0.1:<port>``."""
        return f"mqtt://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def listener_ports(self) -> list[int]:
        """The ports of every ``listener`` line in the config (``port`` if none)."""
        text = self.config_path.read_text()
        return [int(p) for p in re.findall(r"^listener (\d+)", text, re.MULTILINE)] or [self.port]

    def start(self, timeout: float = 10.0) -> None:
        """Start the broker and wait until every listener accepts connections (mosquitto opens them
        one after another: the first can answer while the next is not open yet)."""
        if self.running:
            return
        self._proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.config_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        waiting = self.listener_ports()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"mosquitto exited with {self._proc.returncode}: {err}\n{self.log()}")
            with contextlib.suppress(OSError), socket.create_connection((self.host, waiting[0]), timeout=0.2):
                waiting.pop(0)
                if not waiting:
                    return
                continue
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"mosquitto did not accept connections on port {waiting[0]}:\n{self.log()}")

    def _end(self, sig: signal.Signals, timeout: float = 10.0) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            self._proc = None
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
        self._proc = None

    def stop(self) -> None:
        """SIGTERM: mosquitto saves its persistence database and exits."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: the broker dies without saving (state since the last autosave is lost)."""
        self._end(signal.SIGKILL)

    def restart(self) -> None:
        """Stop (SIGTERM) and start again on the same port and persistence directory."""
        self.stop()
        self.start()

    def log(self) -> str:
        """The broker's log so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
