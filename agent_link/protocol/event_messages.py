"""Event messages (device → agent) of protocol v1.

Each event is a *body* (``WakeBody``...: its type, ``ts`` and fields, what the device core decides)
inside an *envelope* (``id``, ``boot``, ``seq``: what the outbox adds when it stores the event).
``WakeEvent`` is both: the message on the wire. ``body.to_event(id=..., boot=..., seq=...)`` builds it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from agent_link.protocol.message_base import (
    FailureReason,
    RejectReason,
    SleepVia,
    SpeechEnd,
    TapSource,
    TranscriptSource,
    VersionedMessage,
)


class EventBody(VersionedMessage):
    """What an event says, without the envelope the outbox adds (``id``, ``boot``, ``seq``)."""

    ts: float
    """Unix time (s) when it happened."""

    def to_event(self, *, id: str, boot: int, seq: int) -> Event:
        """The wire event: this body in its envelope (validated)."""
        event: Event = _EVENT_OF[type(self)].model_validate(
            {**self.model_dump(), "id": id, "boot": boot, "seq": seq}
        )
        return event


class _EventEnvelope(EventBody):
    id: str = Field(min_length=1)
    """Unique event id, stable across re-sends."""
    boot: int = Field(ge=0)
    """Daemon start counter."""
    seq: int = Field(ge=1)
    """Sequence number, +1 per event within a boot (starts at 1)."""

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON-ready dict, envelope first (``v type id boot seq ts``), then the fields."""
        data = self.model_dump(mode="json")
        head = {key: data.pop(key) for key in ("v", "type", "id", "boot", "seq", "ts")}
        return {**head, **data}


def _env(type_: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": type_, "id": "robot-1-7-41", "boot": 7, "seq": 41, "ts": 1764441600.125, **fields}


# ---- bodies (what the device core emits) --------------------------------------------------------------
class WakeBody(EventBody):
    """A tap woke the device from ``asleep``."""

    type: Literal["wake"] = "wake"
    source: TapSource
    """What was tapped: ``button``, ``screen``, ``keyboard`` or ``sim``."""


class AsleepBody(EventBody):
    """The device has fallen asleep."""

    type: Literal["asleep"] = "asleep"
    reason: SleepVia
    """What put it to sleep: a ``sleep`` command or a ``[sleep]`` tag."""


class TapBody(EventBody):
    """A tap while awake (user activity)."""

    type: Literal["tap"] = "tap"
    source: TapSource
    """What was tapped: ``button``, ``screen``, ``keyboard`` or ``sim``."""


class SpeechStartedBody(EventBody):
    """VAD saw the user start speaking."""

    type: Literal["speech_started"] = "speech_started"
    utterance: str = Field(min_length=1)
    """Utterance id (opened by ``speech_started``)."""
    over_playback: bool = False
    """v1.1, optional: the user started speaking while the device was speaking (full duplex: a
    barge-in; the reply goes on, ducked, until the agent sends ``stop``); false or absent otherwise."""


class SpeechEndedBody(EventBody):
    """The user stopped speaking; ``audio_ms`` is the utterance length in ms."""

    type: Literal["speech_ended"] = "speech_ended"
    utterance: str = Field(min_length=1)
    """Utterance id (opened by ``speech_started``)."""
    audio_ms: int = Field(ge=0)
    """Length of the utterance audio, in ms (the whole utterance, pauses included)."""
    end: SpeechEnd | None = None
    """v1.1, optional: why the utterance ended: ``turn_complete`` (a short pause, and the end-of-turn
    model judged the turn finished), ``silence`` (the fallback silence ran out: the model judged it
    unfinished, or no model is configured), ``max_length`` (the utterance reached its maximum length)."""


class TranscriptBody(EventBody):
    """Text of one utterance, with a confidence in [0, 1]."""

    type: Literal["transcript"] = "transcript"
    utterance: str = Field(min_length=1)
    """Utterance id (opened by ``speech_started``)."""
    text: str
    """What was said (or typed)."""
    confidence: float = Field(ge=0.0, le=1.0)
    """In [0, 1]: typed = 1, 0 = no signal from the provider; < 0.4 = heard poorly."""
    language: str
    """Language of the transcript (e.g. ``en``)."""
    source: TranscriptSource
    """``voice`` (microphone) or ``typed`` (sim/text, keyboard)."""
    audio_ms: int = Field(ge=0)
    """Length of the utterance audio, in ms."""
    decode_ms: int = Field(ge=0)
    """Time the transcriber took, in ms."""


class UtteranceFailedBody(EventBody):
    """An utterance that produced no transcript."""

    type: Literal["utterance_failed"] = "utterance_failed"
    utterance: str = Field(min_length=1)
    """Utterance id (opened by ``speech_started``)."""
    reason: FailureReason
    """Why there is no transcript."""
    detail: str = ""
    """Human-readable explanation."""


class PlaybackStartedBody(EventBody):
    """The first audio of a reply reached the speaker."""

    type: Literal["playback_started"] = "playback_started"
    say: str = Field(min_length=1)
    """Reply id (the ``say`` of the commands)."""


class PlaybackFinishedBody(EventBody):
    """The last audio of a reply was played, or it was stopped (``interrupted``)."""

    type: Literal["playback_finished"] = "playback_finished"
    say: str = Field(min_length=1)
    """Reply id (the ``say`` of the commands)."""
    interrupted: bool
    """True if the reply was cut short (``stop``, sleep, error; after a restart, by the next boot)."""


class SleepIgnoredBody(EventBody):
    """A sleep request ignored because ``sleep_allowed`` was false; ``say`` set when via tag."""

    type: Literal["sleep_ignored"] = "sleep_ignored"
    via: SleepVia
    """The ignored request: a ``sleep`` command or a ``[sleep]`` tag."""
    say: str | None = None
    """Reply id whose ``[sleep]`` tag was ignored (via tag), else null."""


class CommandRejectedBody(EventBody):
    """A command that was not executed; ``command`` is its id, or null if unreadable."""

    type: Literal["command_rejected"] = "command_rejected"
    command: str | None
    """Id of the rejected command, or null if it could not be read."""
    reason: RejectReason
    """``invalid``, ``unknown_type``, ``expired``, ``unsupported_version`` or ``asleep``."""
    detail: str
    """What was wrong, for humans (which field, why)."""


# ---- events (the wire messages: body + envelope) -------------------------------------------------
class WakeEvent(_EventEnvelope, WakeBody):
    """A tap woke the device from ``asleep``."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("wake", source="button")


class AsleepEvent(_EventEnvelope, AsleepBody):
    """The device has fallen asleep."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("asleep", reason="command")


class TapEvent(_EventEnvelope, TapBody):
    """A tap while awake (user activity)."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("tap", source="screen")


class SpeechStartedEvent(_EventEnvelope, SpeechStartedBody):
    """VAD saw the user start speaking."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("speech_started", utterance="u-7-3")


class SpeechEndedEvent(_EventEnvelope, SpeechEndedBody):
    """The user stopped speaking; ``audio_ms`` is the utterance length in ms."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env(
        "speech_ended", utterance="u-7-3", audio_ms=1840, end="turn_complete"
    )


class TranscriptEvent(_EventEnvelope, TranscriptBody):
    """Text of one utterance, with a confidence in [0, 1]."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env(
        "transcript",
        utterance="u-7-3",
        text="What's the weather like?",
        confidence=0.91,
        language="en",
        source="voice",
        audio_ms=1840,
        decode_ms=420,
    )


class UtteranceFailedEvent(_EventEnvelope, UtteranceFailedBody):
    """An utterance that produced no transcript."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env(
        "utterance_failed", utterance="u-7-4", reason="too_short", detail="120 ms of speech, minimum 250 ms"
    )


class PlaybackStartedEvent(_EventEnvelope, PlaybackStartedBody):
    """The first audio of a reply reached the speaker."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("playback_started", say="r-12")


class PlaybackFinishedEvent(_EventEnvelope, PlaybackFinishedBody):
    """The last audio of a reply was played, or it was stopped (``interrupted``)."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("playback_finished", say="r-12", interrupted=False)


class SleepIgnoredEvent(_EventEnvelope, SleepIgnoredBody):
    """A sleep request ignored because ``sleep_allowed`` was false; ``say`` set when via tag."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env("sleep_ignored", via="tag", say="r-12")


class CommandRejectedEvent(_EventEnvelope, CommandRejectedBody):
    """A command that was not executed; ``command`` is its id, or null if unreadable."""

    EXAMPLE: ClassVar[dict[str, Any]] = _env(
        "command_rejected", command="c-106", reason="invalid", detail="field 'text': Input should be a string"
    )


Event = (
    WakeEvent
    | AsleepEvent
    | TapEvent
    | SpeechStartedEvent
    | SpeechEndedEvent
    | TranscriptEvent
    | UtteranceFailedEvent
    | PlaybackStartedEvent
    | PlaybackFinishedEvent
    | SleepIgnoredEvent
    | CommandRejectedEvent
)
"""Any event the device publishes."""

EVENT_TYPES: dict[str, type[Event]] = {
    "wake": WakeEvent,
    "asleep": AsleepEvent,
    "tap": TapEvent,
    "speech_started": SpeechStartedEvent,
    "speech_ended": SpeechEndedEvent,
    "transcript": TranscriptEvent,
    "utterance_failed": UtteranceFailedEvent,
    "playback_started": PlaybackStartedEvent,
    "playback_finished": PlaybackFinishedEvent,
    "sleep_ignored": SleepIgnoredEvent,
    "command_rejected": CommandRejectedEvent,
}
"""Event ``type`` → class."""

ENVELOPE_FIELDS = frozenset({"v", "type", "id", "boot", "seq", "ts"})
"""Fields every event carries; not allowed in ``make_event`` fields."""

_EVENT_OF: dict[type[EventBody], type[Event]] = {cls.__bases__[1]: cls for cls in EVENT_TYPES.values()}
"""Body class → event class (each event class is ``(_EventEnvelope, its body)``)."""
