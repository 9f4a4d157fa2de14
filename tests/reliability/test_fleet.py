"""The fleet simulator: real orchestrator + outbox + gate + link per device, one agent connection."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from agent_link.harness.fleet.fleet import run_fleet
from audio.events import PlaybackFinished, PlaybackStarted
from device.shell.fleet_cli import register
from device.shell.fleet_device import InstantSpeaker, SimDevice
from tests.broker import Mosquitto

pytestmark = pytest.mark.timeout(180)


async def test_instant_speaker_plays_and_stops() -> None:
    got: list[object] = []
    speaker = InstantSpeaker(got.append, seconds_per_char=0.001, max_s=0.05)
    speaker.speak("a", "Hello", final=False)
    speaker.speak("a", " there", final=True)
    speaker.speak("b", "Second", final=False)
    await asyncio.sleep(0.1)
    speaker.stop()
    kinds = [(type(e).__name__, e.say, getattr(e, "interrupted", None)) for e in got]  # type: ignore[attr-defined]
    assert kinds == [
        ("PlaybackStarted", "a", None),
        ("PlaybackStarted", "b", None),
        ("PlaybackFinished", "a", False),
        ("PlaybackFinished", "b", True),
    ]
    assert isinstance(got[0], PlaybackStarted) and isinstance(got[-1], PlaybackFinished)


async def test_instant_speaker_holds_what_comes_after_a_held_reply_until_released() -> None:
    got: list[PlaybackStarted | PlaybackFinished] = []
    speaker = InstantSpeaker(got.append, seconds_per_char=0.001, max_s=0.02)  # type: ignore[arg-type]
    speaker.speak("bye", "Bye", final=True)
    speaker.hold("bye")
    speaker.speak("next", "Later", final=True)
    await asyncio.sleep(0.06)
    kinds = [(type(e).__name__, e.say) for e in got]
    assert kinds == [("PlaybackStarted", "bye"), ("PlaybackFinished", "bye")]
    speaker.release("bye")
    await asyncio.sleep(0.06)
    kinds = [(type(e).__name__, e.say) for e in got[2:]]
    assert kinds == [("PlaybackStarted", "next"), ("PlaybackFinished", "next")]


async def test_fleet_of_25_devices_converses_without_violations(mosquitto: Mosquitto, tmp_path: Path) -> None:
    report = await run_fleet(mosquitto.url, 25, tmp_path / "fleet", conversations=2, make_device=SimDevice)
    print(report.summary())
    assert report.failed == 0 and report.conversations == 50
    assert report.violations == []
    assert set(report.latencies_ms) == {
        "sim/tap → wake", "sim/text → transcript", "say → playback_started", "sleep → asleep",
    }  # fmt: skip
    assert all(len(v) == 50 for v in report.latencies_ms.values())
    assert report.messages >= 50 * 4 * 2  # each step: a command and at least one event


def test_sim_fleet_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    bench = sub.add_parser("bench").add_subparsers()
    register(sub, bench)
    args = parser.parse_args(["sim-fleet", "5", "--json"])
    assert args.func(args) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["devices"] == 5 and line["conversations"] == 5 and line["violations"] == 0
    assert line["p99_ms"] >= line["median_ms"] > 0
