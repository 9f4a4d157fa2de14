"""Events into the orchestrator that do not come from ``audio`` (those are in ``audio.events``).

Every event carries ``ts``: unix seconds when it happened. The orchestrator core never reads a clock.

The shell's inbox steps control (``is_control``) ahead of data. It hands each input over ``Stamped``
with its arrival number, and puts a ``Reached`` marker among the data where each control item
arrived: the core judges data by what was in force when it arrived (``device.core.early``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_link.protocol.message_base import RejectReason, TapSource
from agent_link.protocol.messages import SleepAllowedCommand, SleepCommand, StopCommand
from audio.events import AudioEvent

if TYPE_CHECKING:
    from agent_link.protocol.messages import Command


@dataclass(frozen=True, slots=True)
class Booted:
    """The daemon started; the previous boot left these utterances and replies open (a kill)."""

    open_utterances: tuple[str, ...]
    open_replies: tuple[str, ...]
    ts: float


@dataclass(frozen=True, slots=True)
class Tapped:
    """A tap from a button, the screen, a keyboard key or the simulator."""

    source: TapSource
    ts: float


@dataclass(frozen=True, slots=True)
class TypedText:
    """Text typed by the user (sim/text or the face page's text box), given an utterance id."""

    utterance: str
    text: str
    ts: float


@dataclass(frozen=True, slots=True)
class CommandReceived:
    """A valid, fresh, first-seen command from the agent."""

    command: Command
    ts: float


@dataclass(frozen=True, slots=True)
class CommandRefused:
    """A command the link layer could not accept (malformed, expired...): to be rejected."""

    command_id: str | None
    reason: RejectReason
    detail: str
    ts: float


@dataclass(frozen=True, slots=True)
class LinkChanged:
    """The broker connection went up or down."""

    connected: bool
    detail: str
    ts: float


@dataclass(frozen=True, slots=True)
class AgentPresence:
    """The agent's retained status: online or not (absent counts as offline)."""

    online: bool
    ts: float


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer the orchestrator scheduled with ``ScheduleTimer`` is due."""

    name: str
    ts: float


@dataclass(frozen=True, slots=True)
class StorageProblem:
    """The state directory stopped taking writes (``ok=False``: a read-only or failing card; what
    could not be written is kept in memory) or takes them again (``ok=True``); ``detail`` says which."""

    ok: bool
    detail: str
    ts: float


@dataclass(frozen=True, slots=True)
class Reached:
    """The inbox's marker: every data item that arrived before control item ``arrival`` was stepped.

    ``ts`` is the control item's own time (what takes effect at the marker keeps it)."""

    arrival: int
    ts: float


DeviceInput = (
    Booted
    | Tapped
    | TypedText
    | CommandReceived
    | CommandRefused
    | LinkChanged
    | AgentPresence
    | TimerFired
    | StorageProblem
    | Reached
    | AudioEvent
)


@dataclass(frozen=True, slots=True)
class Stamped:
    """An input with its arrival number in the inbox (1, 2, ...; a bare input counts as in order)."""

    arrival: int
    input: DeviceInput

    @property
    def ts(self) -> float:
        """When the input happened."""
        return self.input.ts


def is_control(event: DeviceInput) -> bool:
    """Control goes ahead of data: a tap, and the ``stop``, ``sleep`` and ``sleep_allowed`` commands."""
    if isinstance(event, Tapped):
        return True
    return isinstance(event, CommandReceived) and isinstance(
        event.command, StopCommand | SleepCommand | SleepAllowedCommand
    )
