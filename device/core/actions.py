"""Actions the orchestrator core asks the runtime shell to perform (imperative names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_link.protocol.event_messages import EventBody
from audio.events import VisemeCue
from face.state import FaceState


@dataclass(frozen=True, slots=True)
class OpenMicrophone:
    """Open the microphone stream (on wake)."""


@dataclass(frozen=True, slots=True)
class CloseMicrophone:
    """Close the microphone stream (on sleep): nothing is heard while asleep."""


@dataclass(frozen=True, slots=True)
class SetHalfDuplex:
    """Tell the listener the device is (not) speaking, so it ignores its own voice."""

    speaking: bool


@dataclass(frozen=True, slots=True)
class DuckSpeech:
    """The user speaks over a reply: play the output ``level_db`` (< 0) under its volume, ramping
    smoothly, until ``UnduckSpeech`` (the reply goes on: only the agent stops it)."""

    level_db: float


@dataclass(frozen=True, slots=True)
class UnduckSpeech:
    """The user stopped speaking over the reply: back to the full volume, ramping smoothly."""


@dataclass(frozen=True, slots=True)
class Speak:
    """Queue speakable text (tags removed) for reply ``say``; ``final`` ends the reply."""

    say: str
    text: str
    final: bool


@dataclass(frozen=True, slots=True)
class StopSpeaking:
    """Silence the output now and drop every queued reply."""


@dataclass(frozen=True, slots=True)
class HoldSpeech:
    """Start no reply queued after reply ``say`` until ``ReleaseSpeech(say)`` (a stop keeps holds).

    A sleep waits at the end of ``say``: what was queued behind it must not sound (even for one
    output buffer) before the orchestrator knows whether the device falls asleep. ``at_once``: hold
    from now on (``say`` was stopped, its end will never play); replaces an earlier hold of ``say``.
    """

    say: str
    at_once: bool = False


@dataclass(frozen=True, slots=True)
class ReleaseSpeech:
    """The sleep that waited at the end of reply ``say`` is resolved (ignored, or asleep): play on."""

    say: str


@dataclass(frozen=True, slots=True)
class ApplySettings:
    """Apply session settings to the parts: STT ``language``, TTS ``voice`` (a configured voice's
    spec or a voice name the agent chose; "" = the packaged voice), ``volume``."""

    language: str
    voice: str
    volume: float


@dataclass(frozen=True, slots=True)
class SaveSettings:
    """Persist the settings that survive a restart."""

    sleep_allowed: bool
    language: str
    voice: str | None
    volume: float


RecordKind = Literal["utterances", "replies"]


@dataclass(frozen=True, slots=True)
class OpenRecord:
    """Record on disk that utterance/reply ``id`` is open (before its opening event or first sound),
    so that a restart can close what a kill left open."""

    kind: RecordKind
    id: str


@dataclass(frozen=True, slots=True)
class Record:
    """An open record (see ``OpenRecord``)."""

    kind: RecordKind
    id: str


@dataclass(frozen=True, slots=True)
class Publish:
    """Store and publish a protocol event (the outbox adds the envelope); then forget the open
    record ``closes`` (only once the event is stored: otherwise the next boot closes it)."""

    body: EventBody
    closes: Record | None = None


@dataclass(frozen=True, slots=True)
class ShowExpression:
    """Show ``emotion`` on the face from unix time ``at`` on."""

    emotion: str
    at: float


@dataclass(frozen=True, slots=True)
class PlayVisemes:
    """Move the mouth along ``cues``, relative to unix time ``start_ts``."""

    cues: tuple[VisemeCue, ...]
    start_ts: float


@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Deliver ``TimerFired(name)`` at unix time ``at`` (replaces a timer of the same name)."""

    name: str
    at: float


@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Forget the timer ``name``."""

    name: str


@dataclass(frozen=True, slots=True)
class ShowFace:
    """Switch the face to ``state`` (the wake-up animation is ``FaceState.WAKING``)."""

    state: FaceState


@dataclass(frozen=True, slots=True)
class Notice:
    """The face perks up: the user started speaking."""


@dataclass(frozen=True, slots=True)
class Note:
    """Nothing to do but log what the core decided (``level``: a ``logging`` level name)."""

    level: Literal["debug", "info", "warning", "error"]
    message: str


Action = (
    OpenMicrophone
    | CloseMicrophone
    | SetHalfDuplex
    | DuckSpeech
    | UnduckSpeech
    | Speak
    | StopSpeaking
    | HoldSpeech
    | ReleaseSpeech
    | ApplySettings
    | SaveSettings
    | OpenRecord
    | Publish
    | ShowFace
    | Notice
    | Note
    | ShowExpression
    | PlayVisemes
    | ScheduleTimer
    | CancelTimer
)
