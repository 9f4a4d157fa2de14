"""The command gate: decode, drop duplicates, reject expired commands."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agent_link.link.command_ids import CommandIdStore
from agent_link.protocol.messages import Command, ProtocolError, RejectReason, decode_command

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


class CommandGate:
    """Turns a raw command payload into a Command to execute, a Rejection, or None (duplicate).

    Order: decode (ProtocolError → Rejection), duplicate id → None (a redelivered command is
    executed, or rejected, once), remember the id, ``expires_at`` before ``now`` → Rejection
    ``expired``, else the Command.
    """

    def __init__(self, store: CommandIdStore) -> None:
        self.store = store

    def check(self, payload: bytes, now: float) -> Command | Rejection | None:
        """Decide what to do with one command payload received at unix time ``now``."""
        try:
            command = decode_command(payload)
        except ProtocolError as err:
            _LOGGER.warning("Rejected command %s: %s", err.command_id, err)
            return Rejection(err.command_id, err.reason, err.detail)
        if self.store.seen(command.id):
            _LOGGER.info("Duplicate command %s (%s) ignored", command.id, command.type)
            return None
        self.store.remember(command.id)
        if command.expires_at is not None and command.expires_at < now:
            detail = (
                f"command {command.id} expired at {command.expires_at:.3f}, "
                f"received at {now:.3f} ({now - command.expires_at:.3f} s late)"
            )
            _LOGGER.warning("Rejected: %s", detail)
            return Rejection(command.id, "expired", detail)
        return command
