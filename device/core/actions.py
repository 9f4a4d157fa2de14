"""Actions the orchestrator core asks the runtime shell to perform (imperative names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audio.events import VisemeCue


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
    """Start no reply queued after reply ``say`` until ``ReleaseSpeech(say)`` or a stop.

    A sleep waits at the end of ``say``: what was queued behind it must not sound (even for one
    output buffer) before the orchestrator knows whether the device falls asleep.
    """

    say: str


@dataclass(frozen=True, slots=True)
class ReleaseSpeech:
    """The sleep that waited at the end of reply ``say`` is resolved (ignored, or asleep): play on."""

    say: str


@dataclass(frozen=True, slots=True)
class ApplySettings:
    """Apply session settings to the parts (STT language, TTS voice, volume)."""

    language: str
    voice: str | None
    volume: float


@dataclass(frozen=True, slots=True)
class SaveSettings:
    """Persist the settings that survive a restart."""

    sleep_allowed: bool
    language: str
    voice: str | None
    volume: float


@dataclass(frozen=True, slots=True)
class Publish:
    """Publish a protocol event (envelope added by the outbox); ``ts`` is when it happened."""

    event_type: str
    fields: dict[str, Any]
    ts: float


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


Action = (
    OpenMicrophone
    | CloseMicrophone
    | SetHalfDuplex
    | Speak
    | StopSpeaking
    | HoldSpeech
    | ReleaseSpeech
    | ApplySettings
    | SaveSettings
    | Publish
    | ShowExpression
    | PlayVisemes
    | ScheduleTimer
    | CancelTimer
)
