"""The command gate's group commit: commands admitted together are saved in one transaction, off the
event loop, and handed on (so acknowledged) only once their ids are on disk."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate, Rejection, Verdict
from agent_link.protocol.messages import SayCommand, StopCommand


def _say(cid: str, **extra: object) -> bytes:
    return json.dumps({"v": 1, "type": "say", "id": cid, "say": "r", "text": "hi", **extra}).encode()


def _stop(cid: str) -> bytes:
    return json.dumps({"v": 1, "type": "stop", "id": cid}).encode()


class RecordingStore(CommandIdStore):
    """The real store, recording each group commit (and able to hold one, as a slow disk would)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.commits: list[list[str]] = []
        self.threads: set[int] = set()
        self.hold = threading.Event()
        self.hold.set()
        self.committing = threading.Event()

    def remember_all(self, command_ids: Sequence[str]) -> None:
        self.threads.add(threading.get_ident())
        self.committing.set()
        assert self.hold.wait(10)
        super().remember_all(command_ids)
        self.commits.append(list(command_ids))


class Handed:
    """The verdicts handed on, each with whether its id was durable then (seen by a fresh store)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.verdicts: list[Verdict] = []
        self.durable: list[bool] = []

    def __call__(self, verdict: Verdict) -> None:
        self.verdicts.append(verdict)
        if isinstance(verdict, SayCommand | StopCommand):
            reopened = CommandIdStore(self.path)  # another process after a crash would read this
            self.durable.append(reopened.seen(verdict.id))
            reopened.close()


async def test_commands_admitted_together_are_saved_in_one_commit_before_they_are_handed_on(
    tmp_path: Path,
) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    futures = [gate.admit(_say(f"c-{i}"), 100.0, handed) for i in range(40)]
    assert not any(f.done() for f in futures)  # nothing is acknowledged before the commit
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    assert store.commits == [[f"c-{i}" for i in range(40)]]
    assert [v.id for v in handed.verdicts if isinstance(v, SayCommand)] == [f"c-{i}" for i in range(40)]
    assert handed.durable == [True] * 40
    assert threading.get_ident() not in store.threads  # the fsync ran in a worker thread


async def test_a_stop_behind_a_burst_waits_for_one_commit_at_most(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    store.hold.clear()  # the first commit takes long (a slow disk)
    first = gate.admit(_say("c-0"), 100.0, handed)
    assert await asyncio.to_thread(store.committing.wait, 10)  # the loop runs while the commit is held
    burst = [gate.admit(_say(f"c-{i}"), 100.0, handed) for i in range(1, 40)]
    stop = gate.admit(_stop("c-stop"), 100.0, handed)
    store.hold.set()
    await asyncio.wait_for(asyncio.gather(first, *burst, stop), 10)
    assert store.commits == [["c-0"], [*(f"c-{i}" for i in range(1, 40)), "c-stop"]]
    assert isinstance(handed.verdicts[-1], StopCommand) and handed.durable[-1]


async def test_a_stop_that_finds_nothing_waiting_is_handed_on_before_its_commit(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    store.hold.clear()  # its commit takes long (a slow disk)
    stop = gate.admit(_stop("c-stop"), 100.0, handed)
    assert [type(v) for v in handed.verdicts] == [StopCommand]  # executed on arrival ...
    assert handed.durable == [False]  # ... before its id is on disk
    assert await asyncio.to_thread(store.committing.wait, 10)
    again = gate.admit(_stop("c-stop"), 100.0, handed)  # the agent's retry, during the commit
    chunk = gate.admit(_say("c-1"), 100.0, handed)
    assert not stop.done()  # acknowledged only once the id is durable
    store.hold.set()
    await asyncio.wait_for(asyncio.gather(stop, again, chunk), 10)
    assert store.commits == [["c-stop"], ["c-1"]]
    assert handed.verdicts[1:] == [None, handed.verdicts[2]] and isinstance(handed.verdicts[2], SayCommand)
    reopened = CommandIdStore(tmp_path / "ids.db")
    assert reopened.seen("c-stop")  # a redelivery after a restart is a duplicate
    reopened.close()


async def test_a_stop_behind_a_waiting_chunk_keeps_its_place(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    store.hold.clear()
    chunk = gate.admit(_say("c-0"), 100.0, handed)
    stop = gate.admit(_stop("c-stop"), 100.0, handed)
    assert handed.verdicts == []  # the chunk came first: the stop must not overtake it
    store.hold.set()
    await asyncio.wait_for(asyncio.gather(chunk, stop), 10)
    assert [type(v) for v in handed.verdicts] == [SayCommand, StopCommand] and handed.durable == [True, True]


async def test_an_expired_or_repeated_stop_takes_the_commit_path(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    store.remember("old")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    late = json.dumps({"v": 1, "type": "stop", "id": "late", "expires_at": 99.0}).encode()
    await asyncio.wait_for(gate.admit(late, 100.0, handed), 10)
    await asyncio.wait_for(gate.admit(_stop("old"), 100.0, handed), 10)
    rejected, duplicate = handed.verdicts
    assert isinstance(rejected, Rejection) and rejected.reason == "expired" and duplicate is None


async def test_duplicates_expiry_and_bad_payloads_in_a_batch(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "ids.db")
    store.remember("old")
    gate = CommandGate(store)
    handed = Handed(tmp_path / "ids.db")
    payloads = [_say("a"), _say("a"), _say("old"), _say("late", expires_at=99.0), b"{not json", _say("b")]
    await asyncio.wait_for(asyncio.gather(*(gate.admit(p, 100.0, handed) for p in payloads)), 10)
    a, dup, old, late, bad, b = handed.verdicts
    assert isinstance(a, SayCommand) and isinstance(b, SayCommand) and (a.id, b.id) == ("a", "b")
    assert dup is None and old is None
    assert isinstance(late, Rejection) and late.reason == "expired"
    assert isinstance(bad, Rejection) and bad.reason == "invalid"
    assert store.commits == [["a", "late", "b"]]  # an expired command is remembered too (rejected once)
    await asyncio.wait_for(gate.admit(_say("late", expires_at=99.0), 100.0, handed), 10)
    assert handed.verdicts[-1] is None


async def test_a_redelivered_command_is_a_duplicate_after_a_restart(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    handed: list[Verdict] = []
    await asyncio.wait_for(
        asyncio.gather(*(gate.admit(_say(f"c-{i}"), 1.0, handed.append) for i in range(5))), 10
    )
    gate.store.close()  # "crash" after the acknowledgements: the broker will not resend; a resend
    restarted = CommandGate(CommandIdStore(tmp_path / "ids.db"))  # before them is a duplicate now
    again: list[Verdict] = []
    await asyncio.wait_for(
        asyncio.gather(*(restarted.admit(_say(f"c-{i}"), 2.0, again.append) for i in range(6))), 10
    )
    assert again[:5] == [None] * 5 and isinstance(again[5], SayCommand)


async def test_a_failing_handler_still_completes_the_batch(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    seen: list[Verdict] = []

    def then(verdict: Verdict) -> None:
        seen.append(verdict)
        if len(seen) == 1:
            raise RuntimeError("boom")

    futures = [gate.admit(_say(f"c-{i}"), 1.0, then) for i in range(3)]
    await asyncio.wait_for(asyncio.gather(*futures), 10)
    assert len(seen) == 3
    await gate.drain()


def test_remember_all_is_one_transaction_that_survives_a_reopen(tmp_path: Path) -> None:
    store = CommandIdStore(tmp_path / "ids.db", capacity=5)
    store.remember_all([f"c-{i}" for i in range(7)])
    assert len(store) == 5 and not store.seen("c-1") and store.seen("c-6")
    store.close()
    reopened = CommandIdStore(tmp_path / "ids.db", capacity=5)
    assert [reopened.seen(f"c-{i}") for i in range(7)] == [False, False, True, True, True, True, True]


async def test_other_messages_keep_their_place_behind_commands_awaiting_their_commit(tmp_path: Path) -> None:
    gate = CommandGate(CommandIdStore(tmp_path / "ids.db"))
    order: list[str] = []
    gate.in_order(lambda: order.append("tap-0"))  # nothing waits: at once
    assert order == ["tap-0"]
    done = [
        gate.admit(_say(f"c-{i}"), 1.0, lambda v: order.append(v.id if isinstance(v, SayCommand) else "?"))
        for i in range(3)
    ]
    gate.in_order(lambda: order.append("tap-1"))
    assert order == ["tap-0"]  # the tap waits for the chunks sent before it
    await asyncio.wait_for(asyncio.gather(*done), 10)
    await gate.drain()
    assert order == ["tap-0", "c-0", "c-1", "c-2", "tap-1"]
