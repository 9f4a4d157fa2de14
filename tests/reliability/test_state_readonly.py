"""The state directory turning read-only (a failing SD card): no event lost, nothing saved lost, the
fault on the face and in the log, recovery when writable; also a daemon that starts on such a card."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.link import command_ids as command_ids_module
from agent_link.link import outbox as outbox_module
from agent_link.link.command_ids import REOPEN_INTERVAL_S, CommandIdStore
from agent_link.link.outbox import Outbox
from agent_link.protocol.event_messages import TapBody
from agent_link.protocol.messages import StatusMessage, decode_event
from device.core.actions import Publish, Record
from device.core.state import Settings
from device.persistence import StateDir
from device.shell.dispatch import Dispatch
from face.state import FaceState
from tests.broker import Mosquitto
from tests.device.test_dispatch import Link, NoSettings, Records
from tests.reliability.inprocess import RunningDaemon, sim_config
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


async def test_a_group_commit_that_meets_the_fault_keeps_its_batch_in_memory_in_order(
    disk: FailingDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatch's group commit hits the read-only card: the batch is kept in memory, numbered in
    publish order after what is on disk, the link woken and the record closed as for one append; after
    the repair the next commit writes it all back."""
    monkeypatch.setattr(outbox_module, "RECOVERY_INTERVAL_S", 0.0)
    box = Outbox(disk.mountpoint / "outbox.sqlite3", "dev", 3)
    records, link = Records(), Link()
    dispatch = Dispatch(put=lambda _: None, outbox=box, link=link, records=records, settings=NoSettings())
    await dispatch.execute([Publish(TapBody(source="sim", ts=float(i))) for i in (1, 2)])
    await dispatch.flush()
    disk.fail()
    batch = [Publish(TapBody(source="sim", ts=float(i))) for i in (3, 4, 5)]
    await dispatch.execute([*batch, Publish(TapBody(source="sim", ts=6.0), closes=Record("replies", "r1"))])
    await dispatch.flush()
    assert box.fault is not None and _seqs(box) == [1, 2, 3, 4, 5, 6] and box.last_seq == 6
    assert [decode_event(p).ts for _, p in box.pending(1000)] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert link.notified == 2 and records.log == [("close", "replies", "r1")]
    disk.repair()
    await dispatch.execute([Publish(TapBody(source="sim", ts=7.0))])
    await dispatch.flush()
    assert box.fault is None and _seqs(box) == [1, 2, 3, 4, 5, 6, 7]
    box.close()
    reopened = Outbox(disk.mountpoint / "outbox.sqlite3", "dev", 3)
    assert _seqs(reopened) == [1, 2, 3, 4, 5, 6, 7] and reopened.last_seq == 7
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


def test_state_dir_keeps_what_it_cannot_write_and_writes_it_back(disk: FailingDisk) -> None:
    """Settings and open records saved while the card is read-only are kept, and on disk after the repair."""
    state = StateDir(disk.mountpoint / "state")
    assert state.next_boot() == 1 and state.fault is None
    state.save_settings(Settings(volume=0.2))
    replies = state.open_ids("replies")
    replies.open("r1")
    disk.fail()
    state.save_settings(Settings(volume=0.4))  # does not raise
    state.save_settings(Settings(volume=0.6, language="de"))  # the last one counts
    replies.open("r2")
    assert state.fault is not None and "cannot be written" in state.fault
    assert {p.name for p in state.unsaved} == {"settings.json", "open-replies.json"}
    assert state.retry() is False  # still read-only
    disk.repair()
    assert state.retry() is True and state.fault is None and state.unsaved == []
    again = StateDir(disk.mountpoint / "state")
    assert again.load_settings(Settings()) == Settings(volume=0.6, language="de")
    assert again.open_ids("replies").load() == ["r1", "r2"]
    assert again.next_boot() == 2


def test_state_dir_read_only_at_start_runs_from_memory_and_numbers_the_boot_by_the_clock(
    disk: FailingDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card already read-only when the daemon starts: every store opens, reads what it holds, keeps
    new things in memory; the boot number cannot come again after a restart; all written after the repair."""
    monkeypatch.setattr(outbox_module, "RECOVERY_INTERVAL_S", 0.0)
    monkeypatch.setattr(command_ids_module, "REOPEN_INTERVAL_S", 0.0)
    root = disk.mountpoint / "state"
    first = StateDir(root)
    assert first.next_boot() == 1
    first.save_settings(Settings(volume=0.3))
    box = Outbox(first.outbox_path, "dev", 1)
    box.append(TapBody(source="sim", ts=1.0))
    box.close()
    ids = CommandIdStore(first.command_ids_path)
    ids.remember("c-before")
    ids.close()
    disk.fail()
    t0 = time.time()
    state = StateDir(root)  # no StateDirUnusable
    never_made = StateDir(disk.mountpoint / "not-yet")  # cannot even be made: the same
    assert state.fault is not None and never_made.fault is not None
    never_made_boot = never_made.next_boot()
    boot = state.next_boot()
    assert boot >= int(t0)  # above any count: a restart before the repair cannot reuse its event ids
    assert state.load_settings(Settings()) == Settings(volume=0.3)  # reading still works
    box = Outbox(state.outbox_path, "dev", boot)
    assert box.fault is not None and [decode_event(p).boot for _, p in box.pending()] == [1]
    box.append(TapBody(source="sim", ts=2.0))
    assert [(e.boot, e.seq) for e in map(decode_event, (p for _, p in box.pending()))] == [(1, 1), (boot, 1)]
    ids = CommandIdStore(state.command_ids_path)
    assert ids.fault is not None and ids.seen("c-before")  # duplicates from before still count
    ids.remember("c-during")
    state.save_settings(Settings(volume=0.7))
    disk.repair()
    assert state.retry() and never_made.retry() and box.retry() and ids.retry()
    assert state.fault is None and box.fault is None and ids.fault is None
    box.close()
    ids.close()
    assert (never_made.root / "boot").read_text().strip() == str(never_made_boot)
    reopened = StateDir(root)
    assert reopened.next_boot() == boot + 1
    assert reopened.load_settings(Settings()) == Settings(volume=0.7)
    assert _seqs(Outbox(reopened.outbox_path, "dev", boot)) == [1, 1]
    assert CommandIdStore(reopened.command_ids_path).seen("c-during")


def test_nothing_is_written_beneath_the_card_while_it_is_unmounted(
    disk: FailingDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between unmounting the failed card and mounting it again, the mount point is a plain writable
    directory: the stores must not take it for the card come back (and write there, hidden later)."""
    monkeypatch.setattr(outbox_module, "RECOVERY_INTERVAL_S", 0.0)
    monkeypatch.setattr(command_ids_module, "REOPEN_INTERVAL_S", 0.0)
    state = StateDir(disk.mountpoint / "state")
    boot = state.next_boot()
    box = Outbox(state.outbox_path, "dev", boot)
    ids = CommandIdStore(state.command_ids_path)
    box.append(TapBody(source="sim", ts=1.0))
    ids.remember("c1")
    disk.fail()
    state.save_settings(Settings(volume=0.9))
    box.append(TapBody(source="sim", ts=2.0))
    ids.remember("c2")

    def meanwhile() -> None:
        assert not state.retry() and not box.retry() and not ids.retry()
        assert not (disk.mountpoint / "state").exists()

    disk.repair(while_unmounted=meanwhile)
    assert state.retry() and box.retry() and ids.retry()
    box.close()
    ids.close()
    assert StateDir(state.root).load_settings(Settings()) == Settings(volume=0.9)
    assert _seqs(Outbox(state.outbox_path, "dev", boot)) == [1, 2]
    assert CommandIdStore(state.command_ids_path).seen("c2")


async def test_a_storage_fault_shows_on_the_face_and_settings_saved_meanwhile_are_not_lost(
    disk: FailingDisk, mosquitto: Mosquitto
) -> None:
    """The daemon's Runtime, its state on a card that fails while awake: the face shows the fault (and
    the log says it), a ``config`` received meanwhile is applied, and on disk once the card is repaired."""
    config = sim_config(mosquitto.url, "rel-ro-face", disk.mountpoint / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-ro-face") as harness, RunningDaemon(config) as rt:
        await harness.set_agent_online(True)
        await harness.sim_tap()
        await harness.wait_for("wake", 10)
        await _exchange(harness, "before the card fails")
        disk.fail()
        await harness.config(volume=0.35)
        await harness.wait_status(volume=0.35, timeout=10)
        await _until(lambda: rt.state.shown is FaceState.ERROR, 10)
        assert "storage" in rt.state.faults
        await _exchange(harness, "while the card is read only")
        disk.repair()
        await _until(lambda: "storage" not in rt.state.faults, 20)
        await _until(lambda: rt.state.shown is FaceState.IDLE, 5)
        saved = json.loads((disk.mountpoint / "state" / "settings.json").read_text())
        assert saved["volume"] == 0.35
        await _exchange(harness, "after the repair")
    harness.assert_contract()


async def test_daemon_started_on_a_read_only_state_dir_converses_and_recovers(
    disk: FailingDisk, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """The real daemon started on a card the kernel already made read-only (it used to exit 2): it
    runs, says so in its log, converses, keeps a ``config`` in memory, and once the card is repaired
    writes its boot number and settings, so the next start numbers on from it."""
    daemon = DaemonProcess(mosquitto.url, "rel-ro-start", tmp_path / "daemon")
    daemon.state_dir = disk.mountpoint / "state"
    async with AgentHarness(mosquitto.url, device_id="rel-ro-start") as harness:
        await harness.set_agent_online(True)
        try:
            daemon.start()
            await daemon.wait_ready(timeout=120)
            await harness.wait_status(state="asleep", boot=1, timeout=20)
            daemon.stop()
            disk.fail()
            t0 = time.time()
            daemon.start()
            await daemon.wait_ready(timeout=120)
            status = await _new_boot(harness, 1)
            assert status.boot >= int(t0)
            await daemon.wait_log(r"ERROR .*Storage fault: .*cannot be written", timeout=10)
            await harness.sim_tap()
            await harness.wait_for("wake", 10)
            await _exchange(harness, "on a read only card")
            await harness.config(volume=0.45)
            await harness.wait_status(volume=0.45, timeout=10)
            disk.repair()
            await daemon.wait_log(r"Storage back: ", timeout=20)
            await _exchange(harness, "after the repair")
            assert daemon.stop() == 0
            daemon.start()
            await daemon.wait_ready(timeout=120)
            again = await _new_boot(harness, status.boot)
        finally:
            daemon.stop()
    assert again.boot == status.boot + 1 and again.volume == 0.45
    seqs = sorted({e.seq for e in harness.events if e.boot == status.boot})
    assert seqs == list(range(1, seqs[-1] + 1)), "an event was lost"
    assert not harness.check_contract(allow_open=True)


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not reached within {timeout} s")
        await asyncio.sleep(0.05)


async def _new_boot(harness: AgentHarness, old: int) -> StatusMessage:
    """The online status of a boot other than ``old``."""

    def fresh() -> bool:
        st = harness.status
        return st is not None and st.online and st.boot != old

    await _until(fresh, 20)
    assert harness.status is not None
    return harness.status
