"""The whole conformance suite against the real simulated daemon (one scenario per test)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.runner import voice_mumbler, voice_speaker
from agent_link.harness.scenario import ScenarioContext, run_scenario, summary
from agent_link.harness.scenarios import select
from agent_link.harness.user_voice import UserVoice
from tests.broker import Mosquitto
from tests.e2e.daemon import DeviceDaemon

SCENARIOS = select(["conformance"])
MAX_UTTERANCE_S = 9.0
"""The conformance daemon's hearing.max_utterance_ms (s): short enough to speak past."""


@pytest.fixture(scope="module")
def daemon(e2e_broker: Mosquitto, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeviceDaemon]:
    """The real daemon in simulation, with a maximum utterance length the max_length scenario can reach."""
    device = DeviceDaemon(
        e2e_broker.url,
        f"e2e-{uuid.uuid4().hex[:8]}",
        tmp_path_factory.mktemp("device"),
        settings=(f"hearing.max_utterance_ms={int(MAX_UTTERANCE_S * 1000)}",),
    )
    device.start()
    try:
        yield device
    finally:
        device.stop()


NAMES = [sc.name for sc in SCENARIOS]


def _context(
    harness: AgentHarness, daemon: DeviceDaemon, voice: UserVoice, lines: list[str]
) -> ScenarioContext:
    async def restart() -> None:
        await asyncio.to_thread(daemon.restart)

    return ScenarioContext(
        harness=harness,
        restart_device=restart,
        say_to_device=voice_speaker(harness, voice),
        mumble_to_device=voice_mumbler(harness, voice),
        timeout=25.0,
        max_utterance_s=MAX_UTTERANCE_S,
        log=lines.append,
    )


def test_suite_lists_every_required_behaviour() -> None:
    required = {
        "wake_greeting", "goodbye_then_sleep", "goodbye_tag", "idle_sleep", "activity_blocks_sleep",
        "activity_starts_during_goodbye", "speech_behind_goodbye", "stop_mid_reply", "streamed_reply", "typed_text",
        "voice_transcript", "mumble_heard_poorly", "duplicate_command", "expired_command", "malformed_commands",
        "say_while_asleep", "restart_keeps_sleep_allowed", "asleep_hears_nothing", "contract",
        "turn_end_complete", "turn_end_silence", "turn_end_max_length",
    }  # fmt: skip
    assert required <= set(NAMES)
    assert NAMES[-1] == "contract"


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", NAMES)
async def test_conformance(
    name: str, harness: AgentHarness, daemon: DeviceDaemon, user_voice: UserVoice
) -> None:
    lines: list[str] = []
    sc = next(s for s in SCENARIOS if s.name == name)
    result = await run_scenario(sc, _context(harness, daemon, user_voice, lines))
    report = "\n".join(lines) + "\n" + summary([result])
    print(report)
    if not result.ok:
        pytest.fail(f"{report}\n--- daemon log tail ---\n{daemon.log(40)}", pytrace=False)
