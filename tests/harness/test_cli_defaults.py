"""Agent-side tools left on their defaults meet the device: the harness's device id, sim-fleet's prefix."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import agent_link.harness.fleet.fleet
from agent_link.harness.cli import DEFAULT_DEVICE_ID
from agent_link.harness.fleet.fleet import FleetReport, run_fleet
from device.cli import build_parser, config_from_args
from device.config import Config, DeviceSettings
from device.shell.fleet_device import SimDevice
from tests.broker import Mosquitto


@pytest.mark.parametrize(
    "command", [["run", "conformance"], ["console"], ["companion"], ["demo"]], ids=lambda c: c[0]
)
def test_harness_default_device_id_is_the_devices(command: list[str]) -> None:
    parser = build_parser()
    harness = parser.parse_args(["harness", *command])
    device = config_from_args(parser.parse_args(["run", "--simulate"]))  # `robot-face run` on defaults
    assert isinstance(device, Config)
    assert harness.device_id == DEFAULT_DEVICE_ID == DeviceSettings().id == device.device.id


def _fake_fleet(prefixes: list[str]) -> Any:
    async def fake(
        url: str, count: int, state_dir: Path, conversations: int = 1, prefix: str = "", **_: Any
    ) -> FleetReport:
        prefixes.append(prefix)
        return FleetReport(devices=count, conversations=count * conversations)

    return fake


def test_sim_fleet_prefix_names_the_devices(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prefixes: list[str] = []
    monkeypatch.setattr(agent_link.harness.fleet.fleet, "run_fleet", _fake_fleet(prefixes))
    parser = build_parser()
    for argv in (["sim-fleet", "3", "10"], ["sim-fleet", "3", "--prefix", "lab2-"]):
        args = parser.parse_args([*argv, "--broker", "mqtt://127.0.0.1:1", "--json"])
        assert args.func(args) == 0
    assert prefixes == ["sim3", "sim10", "lab2-3"]  # the default is unchanged: sim<N>
    assert [json.loads(line)["devices"] for line in capsys.readouterr().out.splitlines()] == [3, 10, 3]


@pytest.mark.parametrize("bad", ["", "a/b", "x+", "#"])
def test_sim_fleet_prefix_must_be_a_topic_level(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["sim-fleet", "3", "--prefix", bad])
    assert exit_.value.code == 2 and "--prefix" in capsys.readouterr().err


async def test_two_fleets_with_different_prefixes_share_one_broker(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    a, b = await asyncio.gather(
        run_fleet(mosquitto.url, 4, tmp_path / "a", prefix="a4", make_device=SimDevice),
        run_fleet(mosquitto.url, 4, tmp_path / "b", prefix="b4", make_device=SimDevice),
    )
    for report in (a, b):
        assert report.failed == 0 and report.conversations == 4 and report.violations == []
