"""Scenario runner and report, the scenario registry, and the harness CLI commands."""

from __future__ import annotations

import argparse

import pytest

from agent_link.harness.cli import register
from agent_link.harness.client import AgentHarness
from agent_link.harness.scenario import (
    Scenario,
    ScenarioContext,
    ScenarioRun,
    run_scenario,
    summary,
)
from agent_link.harness.scenarios import select
from tests.broker import Mosquitto


async def test_failed_step_reports_what_arrived_and_stops(mosquitto: Mosquitto) -> None:
    reached: list[str] = []

    async def body(run: ScenarioRun) -> None:
        async with run.step("typed text is echoed"):
            reached.append("first")
        async with run.step("device wakes"):
            await run.h.wait_for("wake", 0.3, source="sim")
        reached.append("after the failure")

    lines: list[str] = []
    async with AgentHarness(mosquitto.url, device_id="nobody") as h:
        result = await run_scenario(
            Scenario("demo_fail", "fails", body), ScenarioContext(h, log=lines.append)
        )
    assert not result.ok
    assert reached == ["first"]
    assert [(s.name, s.ok) for s in result.steps] == [("typed text is echoed", True), ("device wakes", False)]
    report = "\n".join(lines)
    assert "✔ typed text is echoed" in report
    assert "✘ device wakes" in report
    assert "no wake(source='sim') within 0.3 s" in report and "(nothing)" in report
    assert "FAIL demo_fail" in report
    assert "0/1 scenarios passed" in summary([result])


async def test_crash_outside_steps_is_a_failure(mosquitto: Mosquitto) -> None:
    async def body(run: ScenarioRun) -> None:
        raise RuntimeError("boom")

    async with AgentHarness(mosquitto.url, device_id="nobody") as h:
        result = await run_scenario(
            Scenario("crash", "crashes", body), ScenarioContext(h, log=lambda _: None)
        )
    assert not result.ok and "RuntimeError: boom" in result.error


def test_select_by_suite_and_name() -> None:
    suite = [s.name for s in select(["conformance"])]
    assert "wake_greeting" in suite and "restart_keeps_sleep_allowed" in suite
    assert [s.name for s in select(["typed_text", "typed_text"])] == ["typed_text"]
    with pytest.raises(KeyError, match="no scenario or suite named 'nope'"):
        select(["nope"])


def test_cli_registers_and_lists(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    bench = argparse.ArgumentParser().add_subparsers()  # the harness adds `bench link` there
    register(sub, bench)
    args = parser.parse_args(["harness", "list"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "suites: conformance" in out and "malformed_commands" in out
    args = parser.parse_args(["harness", "run", "conformance", "--broker", "mqtt://h:1", "--device-id", "d"])
    assert args.scenarios == ["conformance"] and args.device_id == "d"
    args = parser.parse_args(["harness", "companion", "--sleep-after", "10"])
    assert args.sleep_after == 10.0


def test_cli_run_unknown_scenario_fails_before_connecting(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.broker import free_port

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register(sub, sub)
    port = free_port()
    args = parser.parse_args(["harness", "run", "nope", "--no-voice", "--broker", f"mqtt://127.0.0.1:{port}"])
    assert args.func(args) == 2
    assert "no scenario or suite named 'nope'" in capsys.readouterr().out
