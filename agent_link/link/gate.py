"""The command gate: decode, drop duplicates, reject expired commands; ids saved by group commit."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from agent_link.link.command_ids import CommandIdStore
from agent_link.protocol.messages import Command, ProtocolError, RejectReason, StopCommand, decode_command

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rejection:
    """A command that must not be executed; becomes a ``command_rejected`` event."""

    command_id: str | None
    """The command's id, or None if it could not be read."""
    reason: RejectReason
    """``invalid``, ``unknown_type``, ``unsupported_version`` or ``expired``."""
    detail: str
    """What was wrong, for humans."""

    def event_fields(self) -> dict[str, str | None]:
        """Fields of the ``command_rejected`` event."""
        return {"command": self.command_id, "reason": self.reason, "detail": self.detail}


Verdict = Command | Rejection | None
"""What the gate decided: execute the Command, refuse (Rejection), or ignore a duplicate (None)."""


@dataclass
class _Admitted:
    payload: bytes | None
    """None: not a command, only kept in arrival order (:meth:`CommandGate.in_order`), or a command
    handed on at arrival (``handed``)."""
    now: float
    then: Callable[[Verdict], None]
    durable: asyncio.Future[None]
    handed: str | None = None
    """The id of a ``stop`` handed on when it arrived: only its id is saved by this commit."""


class CommandGate:
    """Turns a raw command payload into a Command to execute, a Rejection, or None (duplicate).

    Order: decode (ProtocolError → Rejection), duplicate id → None (a redelivered command is
    executed, or rejected, once), remember the id, ``expires_at`` before ``now`` → Rejection
    ``expired``, else the Command.

    :meth:`admit` is the event loop's way in (group commit): the payloads admitted while a commit
    runs wait for it, then are checked and their ids saved together in one transaction (one fsync)
    in a worker thread; each verdict is handed on (``then``) and its future resolved only once its
    id is on disk, so the MQTT acknowledgement that waits for the future never runs ahead of it (a
    command redelivered after a crash is still a duplicate). At most one commit runs at a time: a
    command waits for the one in progress, if any, and its own batch's. What the link hands over
    besides commands keeps its place in arrival order behind them (:meth:`in_order`).
    """

    def __init__(self, store: CommandIdStore) -> None:
        self.store = store
        self._queue: list[_Admitted] = []
        self._committer: asyncio.Task[None] | None = None

    def check(self, payload: bytes, now: float) -> Verdict:
        """Decide what to do with one command payload received at unix time ``now`` (its id is
        saved before this returns: one commit per call, blocking)."""
        verdict, command_id = self._decide(payload, now, set())
        if command_id is not None:
            self.store.remember(command_id)
        return verdict

    def admit(self, payload: bytes, now: float, then: Callable[[Verdict], None]) -> asyncio.Future[None]:
        """Queue ``payload`` (received at unix time ``now``) for the next group commit; ``then`` gets
        the verdict on the event loop after the commit. The future is done when ``then`` ran and the
        id is durable; it never fails (a failure is logged, as for a synchronous check).

        A ``stop`` that finds no command waiting (the usual case) is handed on at once and its id saved
        by the commit after: a stop must not wait for an fsync (measured 3-10 ms here), and a second
        execution changes nothing (if the device dies before the commit, the copy the broker redelivers
        after the restart stops a device that plays nothing). Behind a waiting command it keeps its
        place in arrival order (a chunk that came before it must be judged as before the stop)."""
        loop = asyncio.get_running_loop()
        stop = self._stop_on_arrival(payload, now) if self._committer is None else None
        if stop is None:
            admitted = _Admitted(payload, now, then, loop.create_future())
        else:
            _hand_on(then, stop)
            admitted = _Admitted(None, now, _nothing, loop.create_future(), handed=stop.id)
        self._queue.append(admitted)
        if self._committer is None:
            self._committer = loop.create_task(self._commit_batches())
        return admitted.durable

    def _stop_on_arrival(self, payload: bytes, now: float) -> StopCommand | None:
        """``payload`` as a ``stop`` to execute now: new and not expired (None for anything else,
        which takes the commit's path and its logging)."""
        try:
            command = decode_command(payload)
        except ProtocolError:
            return None
        if not isinstance(command, StopCommand) or self.store.seen(command.id):
            return None
        if command.expires_at is not None and command.expires_at < now:
            return None
        return command

    def in_order(self, then: Callable[[], None]) -> None:
        """Run ``then`` (a non-command message) in arrival order: now if no command waits for a
        commit, else right after those admitted before it are handed on."""
        if self._committer is None:
            then()
            return
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Admitted(None, 0.0, lambda _: then(), future))

    async def drain(self) -> None:
        """Wait until every admitted payload was committed and handed on."""
        while self._committer is not None:
            await asyncio.shield(self._committer)

    async def _commit_batches(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    verdicts = await asyncio.to_thread(
                        self._check_all, [(a.payload, a.now, a.handed) for a in batch]
                    )
                except Exception:  # a bug: logged; the commands are acknowledged as a crash-free check would
                    _LOGGER.exception("Command gate failed on a batch of %d commands", len(batch))
                    verdicts = [None] * len(batch)
                for admitted, verdict in zip(batch, verdicts, strict=True):
                    try:
                        _hand_on(admitted.then, verdict)
                    finally:
                        if not admitted.durable.done():
                            admitted.durable.set_result(None)
        finally:  # also when cancelled (shutdown): what is left is not acknowledged, so it is redelivered
            self._committer = None

    def _check_all(self, items: list[tuple[bytes | None, float, str | None]]) -> list[Verdict]:
        """Check a batch (in a worker thread) and save the new ids in one transaction."""
        fresh: list[str] = []
        seen_here: set[str] = set()
        verdicts: list[Verdict] = []
        for payload, now, handed in items:
            if handed is not None:  # a stop executed on arrival: its id only
                fresh.append(handed)
                seen_here.add(handed)
            if payload is None:
                verdicts.append(None)
                continue
            verdict, command_id = self._decide(payload, now, seen_here)
            verdicts.append(verdict)
            if command_id is not None:
                fresh.append(command_id)
                seen_here.add(command_id)
        if fresh:
            self.store.remember_all(fresh)
        return verdicts

    def _decide(self, payload: bytes, now: float, seen_here: set[str]) -> tuple[Verdict, str | None]:
        """The verdict on one payload and the id to remember (None: nothing new to save)."""
        try:
            command = decode_command(payload)
        except ProtocolError as err:
            _LOGGER.warning("Rejected command %s: %s", err.command_id, err)
            return Rejection(err.command_id, err.reason, err.detail), None
        if command.id in seen_here or self.store.seen(command.id):
            _LOGGER.info("Duplicate command %s (%s) ignored", command.id, command.type)
            return None, None
        if command.expires_at is not None and command.expires_at < now:
            detail = (
                f"command {command.id} expired at {command.expires_at:.3f}, "
                f"received at {now:.3f} ({now - command.expires_at:.3f} s late)"
            )
            _LOGGER.warning("Rejected: %s", detail)
            return Rejection(command.id, "expired", detail), command.id
        return command, command.id


def _nothing(verdict: Verdict) -> None:
    """What is left to do for a command handed on at arrival."""


def _hand_on(then: Callable[[Verdict], None], verdict: Verdict) -> None:
    try:
        then(verdict)
    except Exception:
        _LOGGER.exception("Handing on a command verdict failed")
