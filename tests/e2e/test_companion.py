"""The stand-in companion and the demo driver against the real simulated daemon."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from agent_link.harness.brain import CompanionBrain
from agent_link.harness.client import AgentHarness
from agent_link.harness.companion import CompanionAgent
from agent_link.harness.companion_settings import CompanionSettings
from agent_link.harness.demo import AGAIN, CONFIRM, SCRIPT, STOP_YES, run_demo
from agent_link.harness.user_voice import UserVoice
from tests.e2e.daemon import DeviceDaemon

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def companion(harness: AgentHarness) -> AsyncIterator[CompanionAgent]:
    """A rule-based companion (3 s silence timer) running against the daemon."""
    brain = CompanionBrain(settings=CompanionSettings(sleep_after_silence_s=3.0))
    agent = CompanionAgent(harness, brain, log=print, tick_s=0.25)
    task = asyncio.create_task(agent.run())
    try:
        yield agent
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _reply_played(h: AgentHarness, agent: CompanionAgent, count: int, timeout: float = 30) -> str:
    """Wait for the companion's ``count``-th reply to finish playing; returns its text."""
    for _ in range(int(timeout * 10)):
        if len(agent.replies) >= count:
            break
        await asyncio.sleep(0.1)
    assert len(agent.replies) >= count, f"only {len(agent.replies)} replies: {agent.replies}"
    reply = agent.replies[count - 1]
    await h.wait_for("playback_finished", timeout, say=reply.say)
    return reply.text


async def test_companion_conversation_with_activity_and_silence(
    harness: AgentHarness, companion: CompanionAgent
) -> None:
    h = harness
    await h.wait_status(state="asleep", timeout=30)
    h.mark()
    await h.sim_tap()
    await h.wait_for("wake", 10)
    assert "How are you" in await _reply_played(h, companion, 1)
    await h.sim_text("I'm fine, thanks.")
    assert "memory game" in await _reply_played(h, companion, 2)
    await h.sim_text("Let's do the memory game.")
    await h.wait_status(sleep_allowed=False, timeout=10)
    assert "apple" in await _reply_played(h, companion, 3)
    await h.sim_text("Good night.")
    assert "Shall we stop" in await _reply_played(h, companion, 4)
    await asyncio.sleep(4.0)  # longer than the silence timer: no sleep inside an activity
    assert h.status is not None and h.status.state != "asleep"
    await h.sim_text("Yes.")
    await h.wait_status(sleep_allowed=True, timeout=10)
    await _reply_played(h, companion, 5)
    # 3 s of silence in free conversation: sleep without a word
    asleep = await h.wait_for("asleep", 15)
    assert asleep.reason == "command"
    assert len(companion.replies) == 5
    # woken again: greeting again, then "bye" → goodbye with [sleep]
    await h.sim_tap()
    await h.wait_for("wake", 10)
    assert "How are you" in await _reply_played(h, companion, 6)
    await h.sim_text("Bye!")
    assert "[sleep]" in await _reply_played(h, companion, 7)
    assert (await h.wait_for("asleep", 10)).reason == "tag"
    h.assert_contract()


async def test_demo_conversation(harness: AgentHarness, user_voice: UserVoice, daemon: DeviceDaemon) -> None:
    lines: list[str] = []
    result = await run_demo(harness, voice=user_voice, log=lines.append)
    print("\n".join(lines))
    assert result.ok, (
        "\n".join(lines[-40:])
        + f"\n--- daemon log ---\n{daemon.log(60)}\n--- the microphone over the whole run ---\n"
        + daemon.diagnosis("echo", "duplex", "microphone", "Simulated", "speech_started", "utterance_failed")
    )
    # every scripted line was played, plus a yes wherever a garbled title got "do you mean ...?"
    assert [t.line for t in result.turns if t.line not in (CONFIRM, AGAIN, STOP_YES)] == list(SCRIPT)
    _assert_story(harness)


def _assert_story(h: AgentHarness) -> None:
    """The demo's milestones happened in this order (commands sent and events received, by time)."""
    timeline: list[tuple[float, str]] = []
    for sent in h.sent:
        cmd = sent.command
        if cmd is None:
            continue
        if cmd.type == "say":
            timeline.append((sent.sent, f"say {cmd.text}"))
        elif cmd.type == "sleep_allowed":
            timeline.append((sent.sent, f"sleep_allowed {cmd.value}"))
    for ev in h.events:
        if ev.type in ("wake", "sleep_ignored", "asleep", "transcript"):
            detail = f" {ev.confidence:.2f}" if ev.type == "transcript" else ""
            timeline.append((ev.ts, ev.type + detail))
    timeline.sort()
    story = [what for _, what in timeline]
    milestones = [
        ("wake", lambda w: w == "wake"),
        ("greeting", lambda w: "How are you" in w),
        (
            "offer",
            lambda w: w.startswith("say") and "memory game" in w.lower(),
        ),
        ("poorly heard turn", lambda w: w.startswith("transcript") and float(w.split()[-1]) < 0.4),
        ("not caught", lambda w: "didn't catch" in w),
        ("activity started, sleep not allowed", lambda w: w == "sleep_allowed False"),
        ("stray sleep ignored", lambda w: w == "sleep_ignored"),
        ("activity left", lambda w: w == "sleep_allowed True"),
        ("goodbye", lambda w: w.startswith("say") and "[sleep]" in w),
        ("asleep", lambda w: w == "asleep"),
    ]
    position = 0
    for name, matches in milestones:
        found = next((i for i in range(position, len(story)) if matches(story[i])), None)
        assert found is not None, (
            f"milestone {name!r} missing after {story[position - 1 : position + 1]}: {story}"
        )
        position = found + 1
    # the poorly heard turn changed nothing: between it and the next clear transcript, no mode change
    poor = next(i for i, w in enumerate(story) if w.startswith("transcript") and float(w.split()[-1]) < 0.4)
    nxt = next(i for i in range(poor + 1, len(story)) if story[i].startswith("transcript"))
    assert not any(w.startswith("sleep_allowed") or w == "asleep" for w in story[poor:nxt]), story[poor:nxt]
