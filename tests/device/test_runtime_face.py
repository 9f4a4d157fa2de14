"""The daemon drives the face (wiring only: the face rules are tested on the core, test_core_rules.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent_link.harness.client import AgentHarness
from face.state import FaceState
from tests.broker import Mosquitto
from tests.reliability.inprocess import RunningDaemon, sim_config


async def test_a_tap_plays_the_wake_animation_then_the_awake_face(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    config = sim_config(mosquitto.url, "face-wake", tmp_path / "state", **{"face.wake_duration_s": 0.4})
    async with AgentHarness(mosquitto.url, device_id="face-wake") as harness, RunningDaemon(config) as rt:
        model = rt.face.model
        assert model.state is FaceState.ASLEEP
        await harness.set_agent_online(True)
        await harness.sim_tap()
        await harness.wait_for("wake", timeout=10)
        seen = [model.state]
        deadline = time.monotonic() + 5
        while seen[-1] is not FaceState.IDLE and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            seen.append(model.state)
        assert seen[0] is FaceState.WAKING and seen[-1] is FaceState.IDLE, seen


async def test_stop_closes_the_mouth_at_once(mosquitto: Mosquitto, tmp_path: Path) -> None:
    config = sim_config(mosquitto.url, "face-stop", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="face-stop") as harness, RunningDaemon(config) as rt:
        await harness.set_agent_online(True)
        await harness.sim_tap()
        await harness.wait_for("wake", timeout=10)
        text = "This is one long sentence that goes on and on about robots, boats and lighthouses by the sea"
        say = await harness.say(text)
        await harness.wait_for("playback_started", timeout=20, say=say)
        deadline = time.monotonic() + 5
        while not rt.face.model.speaking and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert rt.face.model.speaking  # the mouth timeline of a several-second sentence
        await harness.stop()
        await harness.wait_for("playback_finished", timeout=10, say=say)
        assert not rt.face.model.speaking  # the rest of the sentence's mouth movements are dropped
