"""The whole conformance suite against the real simulated daemon (one scenario per test)."""

from __future__ import annotations

import asyncio

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.runner import voice_mumbler, voice_speaker
from agent_link.harness.scenario import ScenarioContext, run_scenario, summary
from agent_link.harness.scenarios import select
from agent_link.harness.user_voice import UserVoice
from tests.e2e.daemon import DeviceDaemon

SCENARIOS = select(["conformance"])
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
        log=lines.append,
    )


def test_suite_lists_every_required_behaviour() -> None:
    required = {
        "wake_greeting", "goodbye_then_sleep", "goodbye_tag", "idle_sleep", "activity_blocks_sleep",
        "activity_starts_during_goodbye", "speech_behind_goodbye", "stop_mid_reply", "streamed_reply", "typed_text",
        "voice_transcript", "mumble_heard_poorly", "duplicate_command", "expired_command", "malformed_commands",
        "say_while_asleep", "restart_keeps_sleep_allowed", "asleep_hears_nothing", "contract",
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
