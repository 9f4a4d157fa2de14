"""End-to-end fixtures: one broker, one real simulated daemon and one harness per module."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from agent_link.harness.client import AgentHarness
from agent_link.harness.user_voice import UserVoice
from tests.broker import Mosquitto
from tests.e2e.daemon import DeviceDaemon


@pytest.fixture(scope="module")
def e2e_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """A mosquitto shared by a module's tests."""
    broker = Mosquitto(tmp_path_factory.mktemp("broker"))
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


@pytest.fixture(scope="module")
def daemon(e2e_broker: Mosquitto, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeviceDaemon]:
    """The real daemon in simulation (Whisper + Piper loaded once per module)."""
    device = DeviceDaemon(e2e_broker.url, f"e2e-{uuid.uuid4().hex[:8]}", tmp_path_factory.mktemp("device"))
    device.start()
    try:
        yield device
    finally:
        code = device.stop()
        print(f"daemon exit code {code}; log tail:\n{device.log(30)}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def harness(daemon: DeviceDaemon) -> AsyncIterator[AgentHarness]:
    """A harness connected to the daemon, once the daemon's status says it is online."""
    async with AgentHarness(daemon.broker_url, device_id=daemon.device_id) as h:
        try:
            await h.wait_status(online=True, timeout=90)
        except AssertionError as err:
            raise AssertionError(f"{err}\ndaemon log:\n{daemon.log()}") from None
        yield h


@pytest.fixture(scope="session")
def user_voice() -> UserVoice:
    """The user's voice (Piper, loaded once per session)."""
    return UserVoice.load()
