"""The real device daemon as a child process, for fault injection: start, kill -9, stop, read its log."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_DAEMON_CONFIG: dict[str, dict[str, Any]] = {
    "device": {"sim_speaker": "null", "watchdog": False},
    "mqtt": {"keepalive_s": 5, "reconnect_min_s": 0.2, "reconnect_max_s": 2.0, "connect_timeout_s": 3.0},
    "hearing": {"stt_threads": 1},
    "speaking": {"tts_threads": 1},
}
"""Config used by the reliability runs: no WAV files, short keepalive, fast reconnects, 1 thread per model."""


def toml_text(config: dict[str, dict[str, Any]]) -> str:
    """A TOML file of ``[section] key = value`` tables (scalars, strings, string lists only)."""
    lines: list[str] = []
    for section, table in config.items():
        lines.append(f"[{section}]")
        for key, value in table.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"unsupported TOML value {value!r}")


def merge_config(
    base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """``base`` with the tables of ``extra`` merged in (extra wins)."""
    merged = {section: dict(table) for section, table in base.items()}
    for section, table in (extra or {}).items():
        merged.setdefault(section, {}).update(table)
    return merged


def daemon_command() -> list[str]:
    """How to start ``robot-face`` with this interpreter (the console script beside it, else ``-m device``)."""
    script = Path(sys.executable).with_name("robot-face")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "device"]


class DaemonProcess:
    """``robot-face run`` (simulation by default) in a child process with its own state dir and log.

    The log file collects every run (append); ``wait_log`` waits for the n-th occurrence of a line,
    so readiness and reconnects of a restarted daemon are seen without racing the old output.
    """

    def __init__(
        self,
        broker_url: str,
        device_id: str,
        workdir: str | Path,
        *,
        simulate: bool = True,
        config: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.broker_url = broker_url
        self.device_id = device_id
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state_dir = self.workdir / "state"
        self.log_path = self.workdir / "daemon.log"
        self.config_path = self.workdir / "config.toml"
        self.config_path.write_text(toml_text(merge_config(DEFAULT_DAEMON_CONFIG, config)))
        self.simulate = simulate
        self.starts = 0
        """How many times the process was started."""
        self.kills = 0
        """How many times it was killed with SIGKILL."""
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The process id while running."""
        return self._proc.pid if self.running and self._proc else None

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def argv(self) -> list[str]:
        """The command line of the daemon."""
        args = [
            *daemon_command(),
            "run",
            "--config", str(self.config_path),
            "--broker", self.broker_url,
            "--device-id", self.device_id,
            "--state-dir", str(self.state_dir),
            "--face", "none",
        ]  # fmt: skip
        return args + (["--simulate"] if self.simulate else [])

    def start(self) -> None:
        """Start the daemon (returns at once; see :meth:`wait_ready`)."""
        if self.running:
            return
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        with self.log_path.open("ab") as log:
            log.write(f"==== start {self.starts + 1} ====\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir
            )
        self.starts += 1

    async def wait_ready(self, timeout: float = 90.0) -> float:
        """Wait until this start logged "Ready:" (models loaded); returns seconds waited."""
        t0 = time.monotonic()
        await self.wait_log(r"INFO +device\.\S+: Ready:", self.starts, timeout)
        return time.monotonic() - t0

    async def wait_log(self, pattern: str, count: int = 1, timeout: float = 30.0) -> None:
        """Wait until ``pattern`` (a regex) occurs at least ``count`` times in the log."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while len(regex.findall(self.log())) < count:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self._proc.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"daemon log never showed {pattern!r} x{count} in {timeout:.0f} s:\n{self.tail()}"
                )
            await asyncio.sleep(0.05)

    def count(self, pattern: str) -> int:
        """Occurrences of the regex ``pattern`` in the log so far."""
        return len(re.findall(pattern, self.log()))

    def kill(self) -> None:
        """SIGKILL: no shutdown, no clean DISCONNECT (the broker publishes the Last Will)."""
        self._signal(signal.SIGKILL)
        self.kills += 1

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait for a clean exit; returns the exit code (None if it was not running)."""
        return self._signal(signal.SIGTERM, timeout)

    def _signal(self, sig: signal.Signals, timeout: float = 15.0) -> int | None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            self._proc = None
            return None
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        self._proc = None
        return code

    def log(self) -> str:
        """The whole log so far (every run)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the log."""
        return "\n".join(self.log().splitlines()[-lines:])

    def errors(self) -> list[str]:
        """Log lines at ERROR level or with a traceback."""
        return [line for line in self.log().splitlines() if " ERROR " in line or "Traceback" in line]
