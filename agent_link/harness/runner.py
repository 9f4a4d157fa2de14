"""Run scenarios against a device from the command line or a test: connect, load a voice, report."""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence

from agent_link.harness.client import AgentHarness
from agent_link.harness.scenario import ScenarioContext, ScenarioResult, run_scenarios, summary
from agent_link.harness.scenarios import select
from agent_link.harness.user_voice import UserVoice

_LOGGER = logging.getLogger(__name__)


def voice_speaker(harness: AgentHarness, voice: UserVoice) -> Callable[[str], Awaitable[None]]:
    """``say_to_device(text)``: synthesise ``text`` (in a worker thread) and send it as ``sim/audio``."""

    async def say_to_device(text: str) -> None:
        wav = await asyncio.to_thread(voice.wav, text)
        await harness.sim_audio(wav)

    return say_to_device


def voice_mumbler(harness: AgentHarness, voice: UserVoice) -> Callable[[str], Awaitable[None]]:
    """``mumble_to_device(text)``: ``text`` mumbled (quiet, muffled, in noise) as ``sim/audio``."""

    async def mumble_to_device(text: str) -> None:
        wav = await asyncio.to_thread(voice.mumble_wav, text)
        await harness.sim_audio(wav)

    return mumble_to_device


def shell_restart(command: str) -> Callable[[], Awaitable[None]]:
    """``restart_device()`` running a shell command (e.g. ``systemctl restart robot-face``)."""

    async def restart() -> None:
        proc = await asyncio.create_subprocess_exec(*shlex.split(command))
        code = await proc.wait()
        if code != 0:
            raise AssertionError(f"restart command {command!r} exited with {code}")

    return restart


async def run_named(
    names: Sequence[str],
    harness: AgentHarness,
    *,
    restart_device: Callable[[], Awaitable[None]] | None = None,
    voice: UserVoice | None = None,
    timeout: float = 20.0,
    log: Callable[[str], None] = print,
    skip_restarts: bool = False,
    manual_tap: bool = False,
) -> list[ScenarioResult]:
    """Run scenarios/suites by name on a connected harness; prints the live report and a summary.

    ``manual_tap``: a real device without simulation — the person at the bench is asked to tap.
    """
    chosen = select(names)
    if skip_restarts:
        chosen = [s for s in chosen if not s.restarts]

    async def ask_for_tap() -> None:
        log("    👉 tap the device now")

    ctx = ScenarioContext(
        harness=harness,
        restart_device=restart_device,
        tap=ask_for_tap if manual_tap else None,
        say_to_device=voice_speaker(harness, voice) if voice else None,
        mumble_to_device=voice_mumbler(harness, voice) if voice else None,
        timeout=timeout,
        log=log,
    )
    results = await run_scenarios(chosen, ctx)
    log(summary(results))
    return results
