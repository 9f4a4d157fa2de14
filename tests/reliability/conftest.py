"""Fixtures of the reliability suite: a simulated daemon process, a harness, speech audio."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.harness.reliability.suite import FaultRunner, ReliabilityReport
from tests.broker import Mosquitto

SLOW = os.environ.get("RF_SLOW") == "1"


def slow(test: Callable[..., Any]) -> Callable[..., Any]:
    """``@pytest.mark.slow``, skipped unless ``RF_SLOW=1``."""
    marked: Callable[..., Any] = pytest.mark.slow(
        pytest.mark.skipif(not SLOW, reason="long run; set RF_SLOW=1")(test)
    )
    return marked


@pytest.fixture(scope="session")
def speech_wav() -> bytes:
    """About four seconds of clear speech (the project's own Piper voice), 16 kHz WAV."""
    from agent_link.harness.user_voice import UserVoice

    voice = UserVoice.load()
    return voice.wav("Tell me a story about the sea, the ships that sail on it and the fish below.")


@pytest.fixture
def daemon(mosquitto: Mosquitto, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DaemonProcess]:
    """The real daemon in simulation (not started); killed at teardown, its log shown on failure."""
    name = request.node.name.replace("[", "-").replace("]", "")[:40]
    proc = DaemonProcess(mosquitto.url, f"rel-{name}", tmp_path / "daemon")
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture
async def harness(mosquitto: Mosquitto, daemon: DaemonProcess) -> AsyncIterator[AgentHarness]:
    """An agent harness for the daemon's device id, with the agent marked online."""
    async with AgentHarness(mosquitto.url, device_id=daemon.device_id) as agent:
        await agent.set_agent_online(True)
        yield agent


@pytest.fixture
def runner(
    mosquitto: Mosquitto, daemon: DaemonProcess, harness: AgentHarness, speech_wav: bytes
) -> FaultRunner:
    """The fault runner over the fixtures above."""
    return FaultRunner(mosquitto, daemon, harness, ReliabilityReport(), seed=7, speech_wav=speech_wav)
