"""The orchestrator's one explicit state: protocol phase, session settings, replies in flight."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from agent_link.protocol.message_base import Duplex, SleepVia, TapSource
from face.state import FaceState
from face.tags import Mark


class Phase(StrEnum):
    """The device state of protocol v1 (``status.state``)."""

    ASLEEP = "asleep"
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"


@dataclass(frozen=True, slots=True)
class Settings:
    """Session settings that survive a restart."""

    sleep_allowed: bool = True
    language: str = "en"
    voice: str | None = None
    volume: float = 0.8


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply (one ``say`` id) accepted and not yet finished playing."""

    say: str
    pending_tag: str = ""
    """An unfinished ``[tag`` held back until the next chunk."""
    offset: int = 0
    """Clean characters sent to the speaker so far."""
    marks: tuple[Mark, ...] = ()
    """Emotion marks not yet shown."""
    sleep_tag: bool = False
    final: bool = False
    playing: bool = False
    stopped: bool = False
    """A stop dropped it: its end never plays; later chunks are not spoken."""


@dataclass(frozen=True, slots=True)
class PendingSleep:
    """A sleep request waiting for the speech queued before it (``after``: those say ids)."""

    via: SleepVia
    after: frozenset[str]
    say: str | None = None
    arrival: int = 0
    """The sleep command's arrival number (0: stepped in order): say chunks that arrived before it
    but were stepped after it are still speech queued before the request."""
    not_before: int = 0
    """It takes effect no sooner than the marker of this control item (0: no wait)."""


EarlyKind = Literal["stop", "sleep", "wake", "tap", "sleep_allowed"]


@dataclass(frozen=True, slots=True)
class EarlyControl:
    """A control item stepped ahead of data that arrived before it, until its marker is reached.

    Data that arrived before it is judged by what was in force then (``device.core.early``)."""

    kind: EarlyKind
    """``wake``: a tap that woke the device; ``tap``: a tap on an awake device whose report waits for
    the marker, because a sleep may take effect before it (then the tap wakes the device instead)."""
    arrival: int
    ts: float
    source: TapSource = "sim"
    """The tap's source (``tap``)."""
    sleep_allowed: bool = True
    """The ``sleep_allowed`` value in force before it (``sleep_allowed``)."""
    stopped: frozenset[str] = frozenset()
    """Replies this stop marked stopped (``stop``): their chunks sent before it still count (a final one)."""
    ended: frozenset[str] = frozenset()
    """Replies this stop ended before they were seen (``stop``): their first chunk arrived before it."""
    ended_final: frozenset[str] = frozenset()
    """Of those, the ones whose final chunk came: a chunk after it is refused as in arrival order."""


@dataclass(frozen=True, slots=True)
class DeviceState:
    """Everything the rules depend on. Immutable: ``step`` returns a new one."""

    phase: Phase = Phase.ASLEEP
    settings: Settings = field(default_factory=Settings)
    replies: tuple[Reply, ...] = ()
    sleeps: tuple[PendingSleep, ...] = ()
    hearing: str | None = None
    """The utterance being spoken right now (between speech start and end)."""
    decoding: frozenset[str] = frozenset()
    """Utterances that ended and wait for their transcript."""
    thinking: bool = False
    """A transcript was sent and no reply has started yet (display only)."""
    ended: tuple[str, ...] = ()
    """The most recent replies that finished or were stopped: later chunks for them are refused."""
    early: tuple[EarlyControl, ...] = ()
    """Control items stepped ahead of data whose marker has not been reached yet (oldest first)."""
    arrival: int = 0
    """The arrival number of the input being stepped (0: a bare input, judged in order); 0 between steps."""
    connected: bool = False
    agent_online: bool = False
    faults: frozenset[str] = frozenset()
    """What is failing now: audio directions ("input", "output"), "storage" (the state directory)."""
    shown: FaceState | None = None
    """The face state last decided (``display_of`` when it was decided); None before the first."""
    waking: bool = False
    """The wake-up animation is playing: the awake state shows when it ends (its timer)."""
    barge_in: str | None = None
    """The utterance that started over a reply (full duplex): replies are ducked while it is spoken."""
    early_duck: bool = False
    """The first voiced frames over a reply (``BargeInSuspected``, full duplex): the replies are
    ducked at once, until the barge-in starts (its duck takes over), the early duck's timer
    (``hearing.early_duck_release_ms``) lets go, or no reply plays any more."""
    duck_held: bool = False
    """The barge-in utterance ended a moment ago: the replies stay ducked until its hold timer
    (``hearing.duck_hold_ms``), the next barge-in, or the reply that was talked over ends."""
    duplex: Duplex = "half"
    """The listener's duplex mode (``status.duplex``): "full" = it hears the user over the replies."""
    duplex_reason: str = ""
    """Why it is half duplex ("" when full, or not said yet)."""
    echo_removed_db: float | None = None
    """How much of its own echo the canceller removes (``EchoRemoval``; None = not measured yet):
    a weak canceller's barge-ins duck the replies deeper (``Rules.duck_depth``)."""

    @property
    def awake(self) -> bool:
        """True unless asleep."""
        return self.phase is not Phase.ASLEEP

    def reply(self, say: str) -> Reply | None:
        """The reply in flight with this id, if any."""
        return next((r for r in self.replies if r.say == say), None)
