"""The wall clock stepping under a running daemon, as NTP steps a Pi without RTC (booted at its last
shutdown time): replies end when their audio does (no event early or late), commands are judged by
the corrected clock, events keep their order and seq."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from tests.broker import Mosquitto

SHIM = Path(__file__).with_name("wall_clock.c")
REPLY = "Let me tell you about the sea. The ships sail on it all day long, and the fish swim below."


@pytest.fixture(scope="module")
def wall_clock_shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the wall-clock shim")
    out = tmp_path_factory.mktemp("shim") / "wall_clock.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SHIM), "-ldl"], check=True, timeout=60)
    return out


class Clock:
    """The daemon's wall-clock offset from the real one (seconds), stepped by writing a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.set(0.0)

    def set(self, offset_s: float) -> None:
        self.path.write_text(f"{offset_s}\n")


@pytest.fixture
def clock(tmp_path: Path, wall_clock_shim: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    made = Clock(tmp_path / "clock-offset")
    monkeypatch.setenv("LD_PRELOAD", str(wall_clock_shim))
    monkeypatch.setenv("RF_CLOCK_OFFSET_FILE", str(made.path))
    yield made


async def _reply_seconds(harness: AgentHarness, clock: Clock, step_to: float | None) -> float:
    """Real seconds from ``playback_started`` to ``playback_finished`` of one reply, the clock
    stepped to ``step_to`` just after it started."""
    say = await harness.say(REPLY)
    await harness.wait_for("playback_started", 30, say=say)
    started = time.monotonic()
    if step_to is not None:
        clock.set(step_to)
    await harness.wait_for("playback_finished", 60, say=say, interrupted=False)
    return time.monotonic() - started


async def test_clock_steps_neither_hurry_nor_hold_replies_and_expiry_follows_the_corrected_clock(
    mosquitto: Mosquitto, tmp_path: Path, clock: Clock
) -> None:
    clock.set(-3600.0)  # booted an hour behind: the time of the last shutdown
    daemon = DaemonProcess(mosquitto.url, "rel-clock", tmp_path / "daemon")
    async with AgentHarness(mosquitto.url, device_id="rel-clock") as harness:
        await harness.set_agent_online(True)
        daemon.start()
        try:
            await daemon.wait_ready(timeout=120)
            await harness.wait_status(state="asleep", timeout=20)
            await harness.sim_tap()
            await harness.wait_for("wake", 10)
            plain = await _reply_seconds(harness, clock, None)
            forward = await _reply_seconds(harness, clock, 0.0)  # NTP syncs: one hour forward
            back = await _reply_seconds(harness, clock, -600.0)  # a step back of ten minutes
            clock.set(0.0)
            # Expiry by the corrected clock: 5 s expired is rejected, 30 s ahead is executed.
            await _judged_by_the_corrected_clock(harness)
        finally:
            daemon.stop()
    assert plain > 2.0
    # The steps are 3600 s and 600 s: a reply hurried or held by them is off by far more than a busy
    # machine's synthesis jitter (a few seconds).
    assert forward > plain - 4.0, f"a forward step ended the reply early: {forward:.1f} s vs {plain:.1f} s"
    assert back < plain + 5.0, f"a backward step held the reply: {back:.1f} s vs {plain:.1f} s"
    seqs = [e.seq for e in harness.events if e.boot == 1]
    assert seqs == sorted(seqs) and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert not harness.check_contract(allow_open=True)


async def _judged_by_the_corrected_clock(harness: AgentHarness) -> None:
    await asyncio.sleep(0.2)  # past the shim's re-read interval
    stale = await harness.stop(expires_at=time.time() - 5.0)
    rejected = await harness.wait_for("command_rejected", 10, command=stale)
    assert rejected.reason == "expired"
    fresh = await harness.say("Still here.", expires_at=time.time() + 30.0)
    await harness.wait_for("playback_finished", 30, say=fresh, interrupted=False)
