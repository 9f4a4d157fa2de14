"""A mosquitto child process the reliability runner can stop, kill and restart (same port, same data)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Protocol

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


class Broker(Protocol):
    """What the runner needs from a broker (``tests.broker.Mosquitto`` fits too)."""

    host: str
    port: int

    @property
    def url(self) -> str: ...

    def start(self, timeout: float = 10.0) -> None: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MosquittoProcess:
    """mosquitto on 127.0.0.1:``port`` with persistence in ``workdir`` (config text replaceable)."""

    def __init__(self, workdir: str | Path, port: int | None = None, extra_config: str = "") -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.log_path = self.workdir / "mosquitto.log"
        self.config_path = self.workdir / "mosquitto.conf"
        data = self.workdir / "data"
        data.mkdir(exist_ok=True)
        self.config_path.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
            f"persistence_location {data}/\nautosave_interval 1\nuser root\n"
            f"log_dest file {self.log_path}\nlog_type error\nlog_type warning\nlog_type notice\n"
            f"max_keepalive 65535\n{extra_config}\n"
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

    def start(self, timeout: float = 10.0) -> None:
        """Start and wait until it accepts connections."""
        if self.running:
            return
        self._proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.config_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {self._proc.returncode}; see {self.log_path}")
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=0.2):
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"mosquitto did not accept connections on port {self.port}")

    def _end(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self) -> None:
        """SIGTERM: saves persistence and exits."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: dies without saving."""
        self._end(signal.SIGKILL)
