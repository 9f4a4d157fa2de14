"""The state directory turning read-only (a failing SD card): no event lost, recovery when writable."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.link import outbox as outbox_module
from agent_link.link.command_ids import REOPEN_INTERVAL_S
from agent_link.link.outbox import Outbox
from agent_link.protocol.event_messages import TapBody
from agent_link.protocol.messages import decode_event
from tests.broker import Mosquitto
from tests.reliability.readonly_fs import FailingDisk, available

pytestmark = pytest.mark.skipif(available() is not None, reason=f"failing disk: {available()}")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[FailingDisk]:
    made = FailingDisk(tmp_path)
    try:
        yield made
    finally:
        made.close()


def _seqs(box: Outbox) -> list[int]:
    return [decode_event(p).seq for _, p in box.pending(1000)]


def test_outbox_keeps_events_in_memory_while_read_only_and_writes_them_back(
    disk: FailingDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "RECOVERY_INTERVAL_S", 0.0)
    box = Outbox(disk.mountpoint / "outbox.sqlite3", "dev", 3)
    for i in range(3):
        box.append(TapBody(source="sim", ts=float(i)))
    (first_key, _), *_ = box.pending(1)
    box.ack(first_key)  # seq 1 acknowledged before the fault
    disk.fail()
    for i in range(3, 6):
        box.append(TapBody(source="sim", ts=float(i)))
    assert disk.read_only and box.fault is not None and "cannot be written" in box.fault
    assert _seqs(box) == [2, 3, 4, 5, 6] and len(box) == 5 and box.last_seq == 6
    # The broker acknowledges some, during the fault: one from disk, one from memory.
    pending = box.pending(1000)
    box.ack(pending[0][0])
    box.ack(pending[2][0])
    assert _seqs(box) == [3, 5, 6]
    disk.repair()
    box.append(TapBody(source="sim", ts=7.0))  # the next write finds the disk writable again
    assert box.fault is None and _seqs(box) == [3, 5, 6, 7]
    box.close()
    reopened = Outbox(disk.mountpoint / "outbox.sqlite3", "dev", 3)
    assert _seqs(reopened) == [3, 5, 6, 7] and reopened.last_seq == 7  # on disk, seq continues
    reopened.close()


async def test_daemon_keeps_conversing_on_a_read_only_state_dir_and_recovers(
    disk: FailingDisk, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """The real daemon, its state directory on a filesystem the kernel turns read-only mid-conversation:
    it goes on hearing and answering, says so in its log, every event reaches the agent with seq
    unbroken, and once the filesystem is repaired the outbox and the command ids are on disk again."""
    daemon = DaemonProcess(mosquitto.url, "rel-readonly", tmp_path / "daemon")
    daemon.state_dir = disk.mountpoint / "state"
    async with AgentHarness(mosquitto.url, device_id="rel-readonly") as harness:
        await harness.set_agent_online(True)
        daemon.start()
        try:
            await daemon.wait_ready(timeout=120)
            await harness.wait_status(state="asleep", timeout=20)
            await harness.sim_tap()
            await harness.wait_for("wake", 10)
            await _exchange(harness, "before the card fails")
            disk.fail()
            assert disk.read_only
            for i in range(3):
                await _exchange(harness, f"while the card is read only {i}")
            await daemon.wait_log(r"State directory read-only\? outbox .* cannot be written", timeout=10)
            await daemon.wait_log(r"Cannot persist command id", timeout=10)
            disk.repair()
            await asyncio.sleep(outbox_module.RECOVERY_INTERVAL_S + 0.5)
            await _exchange(harness, "after the repair")
            await daemon.wait_log(r"Outbox .* can be written again", timeout=10)
            await asyncio.sleep(REOPEN_INTERVAL_S + 0.5)
            await _exchange(harness, "and once more")
            await daemon.wait_log(r"Command id store .* can be written again", timeout=10)
            last_seq = max(e.seq for e in harness.events if e.boot == 1)
        finally:
            daemon.stop()
        assert daemon.running is False
    seqs = sorted({e.seq for e in harness.events if e.boot == 1})
    assert seqs == list(range(1, seqs[-1] + 1)), "an event was lost"
    assert not harness.check_contract(allow_open=True)
    # On disk again: the outbox numbered on from where memory was, the ids of the commands since.
    with contextlib.closing(sqlite3.connect(daemon.state_dir / "outbox.sqlite3")) as db:
        (stored_seq,) = db.execute("SELECT last_seq FROM boot_seq WHERE boot = 1").fetchone()
    assert stored_seq >= last_seq
    with contextlib.closing(sqlite3.connect(daemon.state_dir / "command-ids.sqlite3")) as db:
        (ids,) = db.execute("SELECT COUNT(*) FROM ids").fetchone()
    sent = {m.command.id for m in harness.sent if m.command is not None}
    assert ids >= len(sent) > 0


async def _exchange(harness: AgentHarness, text: str) -> None:
    """Typed text is heard (a transcript); the agent's reply is spoken to its end."""
    await harness.sim_text(text)
    await harness.wait_for("transcript", 15, text=text)
    say = await harness.say(f"You said: {text}.")
    await harness.wait_for("playback_finished", 30, say=say)
