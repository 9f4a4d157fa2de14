"""The real ``robot-face run --simulate`` daemon as a child process, for end-to-end tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class DeviceDaemon:
    """One daemon process (``python -m device run --simulate``) with its own state dir and log."""

    def __init__(
        self, broker_url: str, device_id: str, workdir: Path, settings: tuple[str, ...] = ()
    ) -> None:
        """``settings``: ``SECTION.KEY=VALUE`` overrides passed as ``--set``."""
        self.settings = settings
        self.broker_url = broker_url
        self.device_id = device_id
        self.state_dir = workdir / "state"
        self.log_path = workdir / "daemon.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: object | None = None

    def command(self) -> list[str]:
        """The daemon's command line."""
        return [
            sys.executable, "-m", "device", "run", "--simulate",
            "--broker", self.broker_url,
            "--device-id", self.device_id,
            "--state-dir", str(self.state_dir),
            "--face", "none",
            *(arg for kv in self.settings for arg in ("--set", kv)),
        ]  # fmt: skip

    def start(self) -> None:
        """Start the daemon (readiness is seen on its retained status)."""
        if self.running:
            return
        log = self.log_path.open("ab")
        self._log_file = log
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
        self._proc = subprocess.Popen(self.command(), cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (clean shutdown) and wait; SIGKILL if it hangs. Returns the exit code."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None
        if self._log_file is not None:
            self._log_file.close()  # type: ignore[attr-defined]
            self._log_file = None
        return proc.returncode

    def restart(self) -> None:
        """Stop cleanly and start again with the same state dir."""
        self.stop()
        time.sleep(0.2)
        self.start()

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Block until the daemon logged that its models are loaded (the status is online before)."""
        deadline = time.monotonic() + timeout
        while "Ready: models loaded" not in self.log(tail=10_000):
            if not self.running or time.monotonic() > deadline:
                raise AssertionError(f"daemon {self.device_id} never became ready:\n{self.log()}")
            time.sleep(0.1)

    def diagnosis(self, *words: str) -> str:
        """The boot line and every line of the daemon's output holding one of ``words`` (what a
        failure's 80-line tail may have scrolled away)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no daemon log)"
        boot = [line for line in lines if "boot " in line and "robot-face" in line][:1]
        return "\n".join(boot + [line for line in lines if any(w in line for w in words)])

    def log(self, tail: int = 60) -> str:
        """The last ``tail`` lines of the daemon's output."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no daemon log)"
        return "\n".join(lines[-tail:])
