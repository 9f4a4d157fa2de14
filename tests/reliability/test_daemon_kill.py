"""kill -9 at chosen moments of a conversation: the daemon comes back with its state, nothing lost."""

from __future__ import annotations

import pytest

from agent_link.harness.reliability.suite import KILL_MOMENTS, FaultRunner
from tests.reliability.conftest import slow

pytestmark = pytest.mark.timeout(600)


async def test_kill_at_each_moment_keeps_state_and_loses_nothing(runner: FaultRunner) -> None:
    await runner.start_daemon()
    for moment in KILL_MOMENTS:
        await runner.kill_cycle(moment)
    problems = await runner.verify()
    print(runner.report.summary())
    assert runner.report.faults.total() == len(KILL_MOMENTS)
    assert not problems, "\n".join(problems)
    assert runner.report.lost == 0
    assert not runner.open_utterances(), "an utterance open at a kill must be closed after the restart"


async def test_utterance_open_at_kill_is_closed_after_restart(runner: FaultRunner) -> None:
    await runner.start_daemon()
    await runner.kill_cycle("mid_utterance")
    opened = [ev for ev in runner.harness.events if ev.type == "speech_started"]
    assert opened
    for ev in opened:
        await runner.harness.wait_for("utterance_failed", timeout=10, utterance=ev.utterance)
    assert not await runner.verify(), runner.report.summary()


async def test_reply_playing_at_kill_is_finished_after_restart(runner: FaultRunner) -> None:
    await runner.start_daemon()
    await runner.kill_cycle("mid_reply")
    started = [ev for ev in runner.harness.events if ev.type == "playback_started"]
    assert started
    for ev in started:
        finished = await runner.harness.wait_for("playback_finished", timeout=10, say=ev.say)
        assert finished.interrupted and finished.boot > ev.boot
    assert not await runner.verify(), runner.report.summary()


@slow
async def test_kill_many_times_in_a_row(runner: FaultRunner) -> None:
    await runner.start_daemon()
    for i in range(12):
        await runner.kill_cycle(KILL_MOMENTS[i % len(KILL_MOMENTS)])
    problems = await runner.verify()
    print(runner.report.summary())
    assert not problems, "\n".join(problems)
    assert not runner.open_utterances()
