"""What the harness records and raises: bad device payloads, sent messages, timeouts, new ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from agent_link.protocol.messages import Command


class HarnessTimeout(AssertionError):
    """Nothing matching arrived in time; the message says what was awaited and what arrived."""


@dataclass(frozen=True)
class BadMessage:
    """A device payload that did not decode (a contract violation by the device)."""

    topic: str
    payload: bytes
    error: str
    received: float


@dataclass(frozen=True)
class SentMessage:
    """Something the harness published: ``what`` is the command type, ``raw``, ``sim/tap``..."""

    topic: str
    what: str
    payload: bytes
    sent: float
    command: Command | None = None


def new_id(prefix: str = "h") -> str:
    """A fresh unique id for a command or reply."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
