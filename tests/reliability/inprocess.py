"""The daemon's Runtime in the test's own event loop, for faults injected from inside (audio, disk)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from audio.edges.capture import SimulatedMicrophone
from device.config import Config, load_config
from device.shell.runtime import Runtime


def sim_config(broker_url: str, device_id: str, state_dir: Path, **extra: Any) -> Config:
    """A simulation config like the reliability daemons': null speaker, fast reconnects, 1 thread."""
    overrides: dict[str, Any] = {
        "broker": broker_url,
        "device_id": device_id,
        "state_dir": str(state_dir),
        "simulate": True,
        "face.renderer": "none",
        "device.sim_speaker": "null",
        "device.watchdog": False,
        "mqtt.reconnect_min_s": 0.2,
        "mqtt.reconnect_max_s": 2.0,
        "hearing.stt_threads": 1,
        "hearing.reopen_interval_s": 0.5,
        "speaking.tts_threads": 1,
    }
    overrides.update(extra)
    return load_config(None, overrides)


class RunningDaemon:
    """``async with RunningDaemon(config) as rt:`` runs the Runtime until the block ends."""

    def __init__(self, config: Config) -> None:
        self.runtime = Runtime(config)
        self._task: asyncio.Task[int] | None = None

    async def __aenter__(self) -> Runtime:
        self._task = asyncio.create_task(self.runtime.run())
        deadline = time.monotonic() + 90
        while not (
            any(t.get_name() == "orchestrator" for t in self.runtime._tasks) and self.runtime.link.connected
        ):
            if self._task.done():
                self._task.result()
            if time.monotonic() > deadline:
                raise TimeoutError("runtime not ready within 90 s")
            await asyncio.sleep(0.05)
        return self.runtime

    async def __aexit__(self, *exc: object) -> None:
        self.runtime.request_stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 30)


def sim_mic(rt: Runtime) -> SimulatedMicrophone:
    """The running daemon's simulated microphone (the in-process runs configure one)."""
    assert isinstance(rt.source, SimulatedMicrophone), rt.source
    return rt.source
