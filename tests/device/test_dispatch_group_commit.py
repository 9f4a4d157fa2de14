"""The dispatch's group commit of the outbox: events published together are stored by one commit in a
worker thread, in order; the loop runs meanwhile; the link and the records only see stored events."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.event_messages import (
    CommandRejectedBody,
    Event,
    EventBody,
    TapBody,
    UtteranceFailedBody,
    WakeBody,
)
from agent_link.protocol.messages import decode_event
from device.core.actions import Publish, Record
from device.core.state import Settings
from device.shell.dispatch import Dispatch
from device.shell.fleet_device import SimDevice
from tests.broker import Mosquitto
from tests.reliability.inprocess import RunningDaemon, sim_config


@dataclass
class SlowCommits:
    """The outbox's commits, seen through SQLite's trace callback; each takes ``delay`` s longer (slow
    storage), in the thread that commits."""

    delay: float
    threads: list[str] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)

    def __call__(self, sql: str) -> None:
        if sql == "COMMIT":
            self.threads.append(threading.current_thread().name)
            self.started.set()
            time.sleep(self.delay)


def slow_commits(outbox: Outbox, delay: float = 0.0) -> SlowCommits:
    commits = SlowCommits(delay)
    outbox._db.set_trace_callback(commits)
    return commits


class Log:
    """What the link and the records were told, in order; with the stored events' seqs at the time."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.lines: list[tuple[str, ...]] = []

    def notify_outbox(self) -> None:
        self.lines.append(("notify",))

    def open(self, kind: str, id: str) -> None:
        self.lines.append(("open", id))

    def close(self, kind: str, id: str) -> None:
        stored = ",".join(str(decode_event(p).seq) for _, p in self.outbox.pending())
        self.lines.append(("close", id, stored))


class NoSettings:
    def save_settings(self, settings: Settings) -> None:
        pass


def _dispatch(tmp_path: Path) -> tuple[Dispatch, Outbox, Log]:
    outbox = Outbox(tmp_path / "o.db", "dev", 1)
    log = Log(outbox)
    dispatch = Dispatch(put=lambda _: None, outbox=outbox, link=log, records=log, settings=NoSettings())
    return dispatch, outbox, log


def _rejected(n: int) -> Publish:
    return Publish(CommandRejectedBody(command=f"c{n}", reason="expired", detail="late", ts=float(n)))


def _stored(outbox: Outbox) -> list[tuple[int, float]]:
    return [(e.seq, e.ts) for e in (decode_event(p) for _, p in outbox.pending(1000))]


async def test_the_publishes_of_one_loop_turn_are_stored_by_one_commit(tmp_path: Path) -> None:
    dispatch, outbox, log = _dispatch(tmp_path)
    commits = slow_commits(outbox)
    await dispatch.execute([_rejected(n) for n in range(1, 41)])  # 40 refused chunks
    assert len(outbox) == 0 and log.lines == []  # queued: nothing stored on the loop
    await dispatch.flush()
    assert _stored(outbox) == [(n, float(n)) for n in range(1, 41)]
    assert len(commits.threads) == 1 and commits.threads[0] != threading.main_thread().name
    assert log.lines == [("notify",)]
    outbox.close()


async def test_seq_follows_the_order_of_the_publishes_across_batches(tmp_path: Path) -> None:
    dispatch, outbox, _ = _dispatch(tmp_path)
    commits = slow_commits(outbox, delay=0.1)
    await dispatch.execute([_rejected(n) for n in range(1, 6)])
    await asyncio.to_thread(commits.started.wait, 5.0)  # the first batch is being committed ...
    await dispatch.execute([_rejected(n) for n in range(6, 9)])  # ... these queue behind it
    await asyncio.sleep(0.01)
    await dispatch.execute([_rejected(n) for n in range(9, 11)])
    await dispatch.flush()
    assert _stored(outbox) == [(n, float(n)) for n in range(1, 11)]
    assert len(commits.threads) == 2  # 5, then the 5 queued while it ran
    outbox.close()


async def test_the_loop_runs_while_a_slow_commit_is_in_progress(tmp_path: Path) -> None:
    dispatch, outbox, log = _dispatch(tmp_path)
    commits = slow_commits(outbox, delay=0.5)
    t0 = time.monotonic()
    await dispatch.execute([_rejected(n) for n in range(1, 6)])
    assert time.monotonic() - t0 < 0.1  # the publish returns at once
    await asyncio.to_thread(commits.started.wait, 5.0)
    gaps = []
    for _ in range(10):  # the loop keeps turning (10 ms sleeps) while the 500 ms commit runs
        t = time.monotonic()
        await asyncio.sleep(0.01)
        gaps.append(time.monotonic() - t)
    assert max(gaps) < 0.2, gaps
    assert log.lines == [] and dispatch._committer is not None  # ... and it is still running
    # A reader (the link, on the loop) does not wait for the commit: it sees none of the batch
    # before it is on disk (had it waited for the writer, it would have seen all five), then all.
    assert outbox.pending() == []
    await dispatch.flush()
    assert log.lines == [("notify",)]  # the link is woken back on the loop, after the commit
    assert [key for key, _ in outbox.pending()] == [1, 2, 3, 4, 5]
    outbox.close()


async def test_a_record_is_closed_after_its_event_is_stored_and_the_link_woken(tmp_path: Path) -> None:
    dispatch, outbox, log = _dispatch(tmp_path)
    slow_commits(outbox, delay=0.05)
    await dispatch.execute(
        [
            Publish(TapBody(source="sim", ts=1.0)),
            Publish(WakeBody(source="sim", ts=2.0), closes=Record("replies", "r1")),
        ]
    )
    await asyncio.sleep(0.02)
    assert log.lines == []  # not while its event is being committed
    await dispatch.flush()
    assert log.lines == [("notify",), ("close", "r1", "1,2")]
    outbox.close()


async def test_a_batch_that_does_not_fit_is_stored_one_at_a_time_as_far_as_it_goes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dispatch, outbox, log = _dispatch(tmp_path)
    (pages,) = outbox._db.execute("PRAGMA page_count").fetchone()
    outbox._db.execute(f"PRAGMA max_page_count={pages + 4}")  # a full disk: room for a few events
    big = [
        UtteranceFailedBody(utterance="u", reason="stt_error", detail="x" * 3000, ts=float(n))
        for n in range(20)
    ]
    with caplog.at_level(logging.ERROR):
        await dispatch.execute([Publish(body) for body in big])
        await dispatch.flush()
    stored = _stored(outbox)
    assert 0 < len(stored) < 20 and stored == [(n + 1, float(n)) for n in range(len(stored))]
    assert caplog.text.count("NOT stored") == 20 - len(stored) and "full" in caplog.text
    assert log.lines == [("notify",)]
    outbox.close()


async def test_the_fleet_device_stores_what_was_published_before_it_closes(tmp_path: Path) -> None:
    device = SimDevice("d1", LinkSettings(), tmp_path)  # its link never started: nothing is sent
    slow_commits(device.outbox, delay=0.1)
    await device.dispatch.execute([_rejected(n) for n in range(1, 4)])
    await device.close()
    again = Outbox(tmp_path / "d1.outbox.sqlite3", "d1", 1)
    assert _stored(again) == [(1, 1.0), (2, 2.0), (3, 3.0)]
    again.close()


async def test_an_event_published_as_the_daemon_stops_is_stored_and_sent(
    mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM's path (``request_stop``) with an event whose commit has not even begun (its worker
    thread is slow to get there): it is committed, and the link's last flush sends it, before the
    outbox is closed and the device goes offline."""
    config = sim_config(mosquitto.url, "flush-stop", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="flush-stop") as harness:
        async with RunningDaemon(config) as rt:
            await harness.set_agent_online(True)
            append_all, called = rt.outbox.append_all, threading.Event()

            def late(bodies: Sequence[EventBody]) -> list[Event]:
                called.set()
                time.sleep(1.0)
                return append_all(bodies)

            monkeypatch.setattr(rt.outbox, "append_all", late)
            await rt.dispatch.execute([Publish(TapBody(source="sim", ts=time.time()))])
            await asyncio.to_thread(called.wait, 5.0)
        assert not rt.dispatch._to_store and rt.dispatch._committer is None
        await harness.wait_for("tap", timeout=10)
        await harness.wait_status(online=False, timeout=10)
