"""Found by the fuzzer: a stopped reply the speaker never heard of stays open forever.

A ``say`` whose first chunk has no speakable text (only tags, ``final: false``) is kept in the
orchestrator's state but never handed to the speaker; ``stop`` then finishes only the replies the
speaker knows, so this one never gets its ``playback_finished`` and every later ``sleep`` waits for
it forever (the device can no longer be put to sleep). A chunk arriving for a reply that was already
stopped (the agent's stream still running) is handled: the last test guards that.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.protocol.messages import SayCommand, SleepCommand, StopCommand
from audio.events import PlaybackFinished
from device.core.actions import Speak, StopSpeaking
from device.core.inputs import CommandReceived, Tapped
from device.core.orchestrator import initial_state, step
from device.core.state import Settings
from tests.broker import Mosquitto
from tests.reliability.inprocess import RunningDaemon, sim_config

pytestmark = pytest.mark.timeout(120)


def test_stop_closes_a_tag_only_reply_in_the_orchestrator() -> None:
    state, _ = step(initial_state(Settings()), Tapped("sim", 1.0))
    state, acts = step(state, CommandReceived(SayCommand(id="a", say="a", text="[happy]", final=False), 2.0))
    assert Speak("a", "", False) in acts, "the speaker must know every reply, even a tag-only one"
    state, acts = step(state, CommandReceived(StopCommand(id="b"), 3.0))
    assert StopSpeaking() in acts
    state, _ = step(state, CommandReceived(SleepCommand(id="c"), 4.0))
    state, _ = step(state, PlaybackFinished("a", True, 4.1))  # what the speaker reports for it
    assert not state.awake, f"sleep deferred forever behind reply 'a': {state.sleeps}"


async def test_sleep_after_stopping_a_tag_only_reply(mosquitto: Mosquitto, tmp_path: Path) -> None:
    config = sim_config(mosquitto.url, "rel-stuck", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-stuck") as harness, RunningDaemon(config):
        await harness.set_agent_online(True)
        await harness.sim_tap()
        await harness.wait_for("wake", timeout=15)
        await harness.say("[happy]", say_id="r1", final=False)
        await harness.stop()
        await harness.sleep()
        await harness.wait_for("asleep", timeout=8)


async def test_chunk_after_stop_does_not_block_sleep(mosquitto: Mosquitto, tmp_path: Path) -> None:
    config = sim_config(mosquitto.url, "rel-stuck2", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-stuck2") as harness, RunningDaemon(config):
        await harness.set_agent_online(True)
        await harness.sim_tap()
        await harness.wait_for("wake", timeout=15)
        await harness.say("Let me tell you a long story about the sea.", say_id="r2", final=False)
        await harness.wait_for("playback_started", timeout=30, say="r2")
        await harness.stop()
        await harness.wait_for("playback_finished", timeout=10, say="r2")
        await harness.say(
            "And that is the end.", say_id="r2", final=True
        )  # the agent's stream was still running
        await harness.sleep()
        await harness.wait_for("asleep", timeout=8)
