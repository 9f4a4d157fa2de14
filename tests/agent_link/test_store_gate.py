"""Outbox, command-id store and command gate."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate, Rejection
from agent_link.link.outbox import Outbox, OutboxError
from agent_link.protocol.event_messages import SpeechStartedBody, TapBody, UtteranceFailedBody, WakeBody
from agent_link.protocol.messages import SayCommand, decode_event


def _say(cid: str, **extra: object) -> bytes:
    return json.dumps({"v": 1, "type": "say", "id": cid, "say": "r", "text": "hi", **extra}).encode()


# ---- outbox ----------------------------------------------------------------------------------------
def test_outbox_order_seq_and_ids(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 3)
    events = [box.append(TapBody(source="sim", ts=10.0 + i)) for i in range(5)]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert [e.id for e in events] == [f"dev-3-{i}" for i in range(1, 6)]
    pending = box.pending(10)
    assert [decode_event(p) for _, p in pending] == events
    assert [k for k, _ in pending] == sorted(k for k, _ in pending)
    assert [decode_event(p).seq for _, p in box.pending(2)] == [1, 2]


def test_outbox_survives_reopen_and_ack(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 1)
    for i in range(3):
        box.append(SpeechStartedBody(utterance=f"u{i}", ts=float(i)))
    box.close()  # "restart": the same boot reopened continues its seq, a new boot starts at 1
    same = Outbox(tmp_path / "o.db", "dev", 1)
    assert same.append(TapBody(source="sim", ts=3.0)).seq == 4
    same.close()
    box = Outbox(tmp_path / "o.db", "dev", 2)
    new = box.append(TapBody(source="button", ts=9.0))
    assert (new.seq, new.id) == (1, "dev-2-1")
    pending = box.pending(100)
    assert [(decode_event(p).boot, decode_event(p).seq) for _, p in pending] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 1),
    ]
    first_payload = pending[0][1]
    box.ack(pending[0][0])
    assert len(box) == 4 and box.pending(1)[0][1] != first_payload
    again = Outbox(tmp_path / "o.db", "dev", 2)  # ids and payloads are stable across re-sends
    assert again.pending(100) == box.pending(100)


def test_pending_reads_what_is_on_disk_without_waiting_for_a_commit(tmp_path: Path) -> None:
    """The link lists pending events on the event loop: a commit in progress (the writer's lock held,
    its rows written, its fsync not done) neither holds it up nor shows it anything not yet on disk."""
    box = Outbox(tmp_path / "o.db", "dev", 1)
    for i in range(2):
        box.append(TapBody(source="sim", ts=float(i)))
    payload = box.pending(1)[0][1]
    with ThreadPoolExecutor(1) as pool, box._lock:  # a writer mid-commit: its transaction open
        box._db.execute("BEGIN IMMEDIATE")
        box._db.execute("INSERT INTO events (id, boot, seq, payload) VALUES ('dev-1-3', 1, 3, ?)", (payload,))
        seen = pool.submit(box.pending).result(timeout=10)  # a read that waited would time out here
        assert [decode_event(p).seq for _, p in seen] == [1, 2]
        box._db.execute("COMMIT")
        assert len(pool.submit(box.pending).result(timeout=10)) == 3  # committed: on disk, seen
    box.close()


def test_the_link_s_reads_never_pin_the_write_ahead_log(tmp_path: Path) -> None:
    """Months of append, list, acknowledge: a reader that kept a read transaction open would stop
    SQLite's checkpoints from restarting the WAL, and it would grow with every event."""
    box = Outbox(tmp_path / "o.db", "dev", 1)
    sizes = []
    for i in range(2400):
        box.append(TapBody(source="sim", ts=float(i)))
        for key, _ in box.pending(10):
            box.ack(key)
        if i % 1200 == 1199:
            sizes.append((tmp_path / "o.db-wal").stat().st_size)
    assert sizes[0] == sizes[1] < 5_000_000, sizes  # the 1000-page checkpoint size, reused
    box.close()


def test_bench_outbox_prints_the_reads_beside_the_locked_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from device.cli import main

    assert main(["bench", "outbox", "--events", "20", "--dir", str(tmp_path), "--commit-ms", "10"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[1].strip(): line.split()[-3:] for line in out.splitlines() if " ms" not in line
            and ("own reader" in line or "writer's lock" in line)}  # fmt: skip
    assert set(rows) == {"own reader (the link's)", "under the writer's lock"}, out
    for median, p99, worst in rows.values():
        assert 0.0 < float(median) <= float(p99) <= float(worst)
    # the locked read waits for the commit in progress (10 ms held), the link's own reader does not
    assert float(rows["own reader (the link's)"][0]) < float(rows["under the writer's lock"][0]) / 2


def test_a_bad_event_body_cannot_even_be_built(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        WakeBody(source=1, ts=1.0)  # type: ignore[arg-type]
    box = Outbox(tmp_path / "o.db", "dev", 1)
    assert box.append(WakeBody(source="sim", ts=1.0)).seq == 1
    assert len(box) == 1


def test_outbox_bounded(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 1, max_events=3)
    for i in range(5):
        box.append(TapBody(source="sim", ts=float(i)))
    assert [decode_event(p).seq for _, p in box.pending(10)] == [3, 4, 5]


def test_outbox_disk_full_is_outbox_error(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 1)
    box.append(TapBody(source="sim", ts=1.0))
    (pages,) = box._db.execute("PRAGMA page_count").fetchone()
    box._db.execute(f"PRAGMA max_page_count={pages}")  # SQLITE_FULL: "database or disk is full"
    stored = 1
    with pytest.raises(OutboxError, match="full"):
        for _ in range(200):
            box.append(UtteranceFailedBody(utterance="u", reason="stt_error", detail="x" * 3000, ts=2.0))
            stored += 1
    assert len(box) == stored  # nothing half-written; the seq is not consumed by a failed append
    assert box.last_seq == stored


def _statements(box: Outbox) -> list[str]:
    """The SQL statements the outbox's connection runs from now on (SQLite's trace callback)."""
    seen: list[str] = []
    box._db.set_trace_callback(seen.append)
    return seen


def test_a_batch_is_numbered_in_order_and_stored_by_one_commit(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 2)
    box.append(TapBody(source="sim", ts=0.0))
    statements = _statements(box)
    events = box.append_all([SpeechStartedBody(utterance=f"u{i}", ts=float(i)) for i in range(1, 6)])
    assert [(e.seq, e.ts) for e in events] == [(i + 1, float(i)) for i in range(1, 6)]
    assert statements.count("BEGIN IMMEDIATE") == 1 and statements.count("COMMIT") == 1
    assert box.append_all([]) == [] and box.last_seq == 6 and len(box) == 6
    box.close()
    again = Outbox(tmp_path / "o.db", "dev", 2)  # on disk: seq continues after the batch
    assert [decode_event(p).seq for _, p in again.pending(10)] == [1, 2, 3, 4, 5, 6]
    assert again.append(TapBody(source="sim", ts=9.0)).seq == 7


def test_a_batch_that_does_not_fit_stores_nothing_and_consumes_no_seq(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 1)
    box.append(TapBody(source="sim", ts=1.0))
    (pages,) = box._db.execute("PRAGMA page_count").fetchone()
    box._db.execute(f"PRAGMA max_page_count={pages + 2}")  # room for a little, not for the batch
    big = [UtteranceFailedBody(utterance="u", reason="stt_error", detail="x" * 3000, ts=2.0)] * 20
    with pytest.raises(OutboxError, match=r"cannot store 20 events.*full"):
        box.append_all(big)
    assert len(box) == 1 and box.last_seq == 1  # all or nothing: the first event stays, alone
    assert box.append(TapBody(source="sim", ts=3.0)).seq == 2
    assert [decode_event(p).seq for _, p in box.pending(10)] == [1, 2]


def test_a_batch_beyond_the_bound_drops_the_oldest(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db", "dev", 1, max_events=3)
    box.append(TapBody(source="sim", ts=0.0))
    box.append_all([TapBody(source="sim", ts=float(i)) for i in range(1, 5)])
    assert [decode_event(p).seq for _, p in box.pending(10)] == [3, 4, 5] and len(box) == 3


def test_outbox_unusable_path_is_outbox_error(tmp_path: Path) -> None:
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(OutboxError, match="cannot open outbox"):
        Outbox(tmp_path / "a-directory", "dev", 1)


# ---- command ids -----------------------------------------------------------------------------------
def test_command_ids_persist_and_evict_oldest(tmp_path: Path) -> None:
    store = CommandIdStore(tmp_path / "ids.db", capacity=3)
    for cid in ["a", "b", "c"]:
        store.remember(cid)
    assert all(store.seen(c) for c in "abc")
    store.remember("d")
    assert not store.seen("a") and store.seen("d") and len(store) == 3
    store.close()
    reopened = CommandIdStore(tmp_path / "ids.db", capacity=3)
    assert [reopened.seen(c) for c in "abcd"] == [False, True, True, True]


# ---- gate ------------------------------------------------------------------------------------------
def test_gate_executes_duplicates_once_also_after_restart(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    first = gate.check(_say("c-1"), now=100.0)
    assert isinstance(first, SayCommand) and first.id == "c-1"
    assert gate.check(_say("c-1"), now=101.0) is None
    gate.store.close()
    restarted = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    assert restarted.check(_say("c-1"), now=102.0) is None
    assert isinstance(restarted.check(_say("c-2"), now=102.0), SayCommand)


def test_gate_rejects_expired(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    result = gate.check(_say("c-1", expires_at=99.5), now=100.0)
    assert isinstance(result, Rejection)
    assert (result.command_id, result.reason) == ("c-1", "expired")
    assert "99.500" in result.detail and "100.000" in result.detail
    assert gate.check(_say("c-1", expires_at=99.5), now=100.0) is None  # redelivery: rejected once
    assert isinstance(gate.check(_say("c-2", expires_at=100.5), now=100.0), SayCommand)


def test_gate_rejects_malformed(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    result = gate.check(b'{"v":1,"type":"say","id":"c-9","say":"r","text":7}', now=1.0)
    assert isinstance(result, Rejection)
    assert (result.command_id, result.reason) == ("c-9", "invalid") and "'text'" in result.detail
    assert result.event_fields() == {"command": "c-9", "reason": "invalid", "detail": result.detail}
    big = gate.check(b"x" * 70_000, now=1.0)
    assert isinstance(big, Rejection) and big.command_id is None and "70000" in big.detail
