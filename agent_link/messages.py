"""Protocol v1 messages: typed, validated, encoded to and decoded from JSON bytes.

Every message of ``/work/shared/protocol-v1.md`` is a frozen pydantic model in strict mode: a wrong
type is rejected (a JSON ``true`` is never a number, ``"1"`` never an int; an int is accepted where a
float is expected), unknown fields are tolerated and dropped. Decoding never returns ``None``: bad
input raises :class:`ProtocolError` with a ``reason`` from the contract's ``command_rejected.reason``
values, a precise ``detail`` and the message ``id`` when one could be read.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_link.protocol_error import ProtocolError, describe_validation_error

__all__ = [
    "COMMAND_TYPES",
    "EVENT_TYPES",
    "MAX_PAYLOAD_BYTES",
    "MAX_SAY_TEXT_CHARS",
    "PROTOCOL_VERSION",
    "AgentStatus",
    "AsleepEvent",
    "Command",
    "CommandRejectedEvent",
    "ConfigCommand",
    "Event",
    "Message",
    "PlaybackFinishedEvent",
    "PlaybackStartedEvent",
    "ProtocolError",
    "SayCommand",
    "SimTap",
    "SimText",
    "SleepAllowedCommand",
    "SleepCommand",
    "SleepIgnoredEvent",
    "SpeechEndedEvent",
    "SpeechStartedEvent",
    "StatusMessage",
    "StopCommand",
    "TapEvent",
    "TranscriptEvent",
    "UtteranceFailedEvent",
    "WakeEvent",
    "decode_agent_status",
    "decode_command",
    "decode_event",
    "decode_sim_text",
    "decode_status",
    "make_event",
]

PROTOCOL_VERSION = 1
"""The only protocol version this device speaks."""

MAX_PAYLOAD_BYTES = 65536
"""Largest accepted payload (64 KiB); anything larger is rejected as ``invalid``."""

MAX_SAY_TEXT_CHARS = 4000
"""Longest accepted ``say.text`` chunk, in characters."""

State = Literal["asleep", "idle", "listening", "thinking", "speaking"]
TapSource = Literal["button", "screen", "keyboard", "sim"]
FailureReason = Literal["no_speech", "too_short", "too_long", "stt_error", "interrupted"]
RejectReason = Literal["invalid", "unknown_type", "expired", "unsupported_version", "asleep"]


class Message(BaseModel):
    """Base of every protocol message: strict types, unknown fields ignored, immutable."""

    model_config = ConfigDict(
        strict=True, extra="ignore", frozen=True, allow_inf_nan=False, use_attribute_docstrings=True
    )

    EXAMPLE: ClassVar[dict[str, Any]] = {}
    """A valid example payload (used by the docs, the schema export and the tests)."""

    OMIT_NONE: ClassVar[bool] = False
    """Leave ``None`` fields out of the encoded JSON (status messages) instead of writing null."""

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (envelope fields ``v``, ``type``, ``id`` first)."""
        data = self.model_dump(mode="json", exclude_none=self.OMIT_NONE)
        head: dict[str, Any] = {key: data.pop(key) for key in ("v", "type", "id") if key in data}
        return {**head, **data}

    def encode(self) -> bytes:
        """The message as compact UTF-8 JSON bytes (the MQTT payload)."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False).encode()


class _Versioned(Message):
    v: Literal[1] = 1
    """Protocol version, always 1."""

    @field_validator("v", mode="before")
    @classmethod
    def _v_not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("v must be the integer 1, not a boolean")
        return value


# ---- commands (agent → device) ---------------------------------------------------------------------
class _CommandEnvelope(_Versioned):
    id: str = Field(min_length=1, max_length=200)
    """Unique command id; duplicates are executed once."""
    expires_at: float | None = None
    """Optional unix time (s) after which the command must not be executed."""


class SayCommand(_CommandEnvelope):
    """Speak ``text``: one chunk of reply ``say``; the last chunk has ``final: true``."""

    type: Literal["say"] = "say"
    say: str = Field(min_length=1, max_length=200)
    """Reply id; chunks with the same id stream one reply."""
    text: str = Field(max_length=MAX_SAY_TEXT_CHARS)
    """Text to speak, may contain ``[tag]`` markers."""
    final: bool = True
    """True on the last chunk of the reply."""
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "v": 1,
        "type": "say",
        "id": "c-101",
        "say": "r-12",
        "text": "Hello there! [happy] Nice to see you.",
        "final": True,
    }


class StopCommand(_CommandEnvelope):
    """Stop speaking now and drop queued speech."""

    type: Literal["stop"] = "stop"
    EXAMPLE: ClassVar[dict[str, Any]] = {"v": 1, "type": "stop", "id": "c-102"}


class SleepCommand(_CommandEnvelope):
    """Fall asleep once the speech queued before it has played (unless sleep is not allowed)."""

    type: Literal["sleep"] = "sleep"
    EXAMPLE: ClassVar[dict[str, Any]] = {"v": 1, "type": "sleep", "id": "c-103", "expires_at": 1764441660.0}


class SleepAllowedCommand(_CommandEnvelope):
    """Allow or forbid sleeping (false while an activity runs)."""

    type: Literal["sleep_allowed"] = "sleep_allowed"
    value: bool
    """Whether ``sleep`` commands and ``[sleep]`` tags take effect."""
    EXAMPLE: ClassVar[dict[str, Any]] = {"v": 1, "type": "sleep_allowed", "id": "c-104", "value": False}


class ConfigCommand(_CommandEnvelope):
    """Session settings; each field optional, persisted by the device."""

    type: Literal["config"] = "config"
    language: str | None = Field(default=None, min_length=1, max_length=32)
    """STT language and TTS voice language (e.g. ``en``)."""
    voice: str | None = Field(default=None, min_length=1, max_length=200)
    """TTS voice name."""
    volume: float | None = Field(default=None, ge=0.0, le=1.0)
    """Output volume in [0, 1]."""
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "v": 1,
        "type": "config",
        "id": "c-105",
        "language": "en",
        "voice": "en_US-joe-medium",
        "volume": 0.8,
    }


Command = SayCommand | StopCommand | SleepCommand | SleepAllowedCommand | ConfigCommand
"""Any command the device accepts."""

COMMAND_TYPES: dict[str, type[Command]] = {
    "say": SayCommand,
    "stop": StopCommand,
    "sleep": SleepCommand,
    "sleep_allowed": SleepAllowedCommand,
    "config": ConfigCommand,
}
"""Command ``type`` → class."""


# ---- events (device → agent) -----------------------------------------------------------------------
class _EventEnvelope(_Versioned):
    id: str = Field(min_length=1)
    """Unique event id, stable across re-sends."""
    boot: int = Field(ge=0)
    """Daemon start counter."""
    seq: int = Field(ge=1)
    """Sequence number, +1 per event within a boot (starts at 1)."""
    ts: float
    """Unix time (s) when it happened."""


def _env(type_: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": type_, "id": "robot-1-7-41", "boot": 7, "seq": 41, "ts": 1764441600.125, **fields}


class WakeEvent(_EventEnvelope):
    """A tap woke the device from ``asleep``."""

    type: Literal["wake"] = "wake"
    source: TapSource
    EXAMPLE: ClassVar[dict[str, Any]] = _env("wake", source="button")


class AsleepEvent(_EventEnvelope):
    """The device has fallen asleep."""

    type: Literal["asleep"] = "asleep"
    reason: Literal["command", "tag"]
    EXAMPLE: ClassVar[dict[str, Any]] = _env("asleep", reason="command")


class TapEvent(_EventEnvelope):
    """A tap while awake (user activity)."""

    type: Literal["tap"] = "tap"
    source: TapSource
    EXAMPLE: ClassVar[dict[str, Any]] = _env("tap", source="screen")


class SpeechStartedEvent(_EventEnvelope):
    """VAD saw the user start speaking."""

    type: Literal["speech_started"] = "speech_started"
    utterance: str = Field(min_length=1)
    EXAMPLE: ClassVar[dict[str, Any]] = _env("speech_started", utterance="u-7-3")


class SpeechEndedEvent(_EventEnvelope):
    """The user stopped speaking; ``audio_ms`` is the utterance length in ms."""

    type: Literal["speech_ended"] = "speech_ended"
    utterance: str = Field(min_length=1)
    audio_ms: int = Field(ge=0)
    EXAMPLE: ClassVar[dict[str, Any]] = _env("speech_ended", utterance="u-7-3", audio_ms=1840)


class TranscriptEvent(_EventEnvelope):
    """Text of one utterance, with a confidence in [0, 1]."""

    type: Literal["transcript"] = "transcript"
    utterance: str = Field(min_length=1)
    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    language: str
    source: Literal["voice", "typed"]
    audio_ms: int = Field(ge=0)
    decode_ms: int = Field(ge=0)
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


class UtteranceFailedEvent(_EventEnvelope):
    """An utterance that produced no transcript."""

    type: Literal["utterance_failed"] = "utterance_failed"
    utterance: str = Field(min_length=1)
    reason: FailureReason
    detail: str = ""
    EXAMPLE: ClassVar[dict[str, Any]] = _env(
        "utterance_failed", utterance="u-7-4", reason="too_short", detail="120 ms of speech, minimum 250 ms"
    )


class PlaybackStartedEvent(_EventEnvelope):
    """The first audio of a reply reached the speaker."""

    type: Literal["playback_started"] = "playback_started"
    say: str = Field(min_length=1)
    EXAMPLE: ClassVar[dict[str, Any]] = _env("playback_started", say="r-12")


class PlaybackFinishedEvent(_EventEnvelope):
    """The last audio of a reply was played, or it was stopped (``interrupted``)."""

    type: Literal["playback_finished"] = "playback_finished"
    say: str = Field(min_length=1)
    interrupted: bool
    EXAMPLE: ClassVar[dict[str, Any]] = _env("playback_finished", say="r-12", interrupted=False)


class SleepIgnoredEvent(_EventEnvelope):
    """A sleep request ignored because ``sleep_allowed`` was false; ``say`` set when via tag."""

    type: Literal["sleep_ignored"] = "sleep_ignored"
    via: Literal["command", "tag"]
    say: str | None = None
    EXAMPLE: ClassVar[dict[str, Any]] = _env("sleep_ignored", via="tag", say="r-12")


class CommandRejectedEvent(_EventEnvelope):
    """A command that was not executed; ``command`` is its id, or null if unreadable."""

    type: Literal["command_rejected"] = "command_rejected"
    command: str | None
    reason: RejectReason
    detail: str
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

_ENVELOPE_FIELDS = frozenset({"v", "type", "id", "boot", "seq", "ts"})


# ---- status and other topics -----------------------------------------------------------------------
class StatusMessage(_Versioned):
    """Retained device status (birth, death/Last Will, current state); ``None`` fields are omitted."""

    OMIT_NONE: ClassVar[bool] = True
    online: bool
    """False in the Last Will and the clean-shutdown status."""
    boot: int = Field(ge=0)
    """Daemon start counter."""
    state: State | None = None
    sleep_allowed: bool | None = None
    language: str | None = None
    volume: float | None = Field(default=None, ge=0.0, le=1.0)
    version: str | None = None
    """Device software version."""
    ts: float | None = None
    """Unix time (s) of this status."""
    EXAMPLE: ClassVar[dict[str, Any]] = {
        "v": 1,
        "online": True,
        "boot": 7,
        "state": "asleep",
        "sleep_allowed": True,
        "language": "en",
        "volume": 0.8,
        "version": "0.3.0",
        "ts": 1764441600.125,
    }


class AgentStatus(Message):
    """Retained ``{root}/agent/status``; absent or ``online: false`` = agent unreachable."""

    online: bool
    EXAMPLE: ClassVar[dict[str, Any]] = {"online": True}


class SimTap(Message):
    """``sim/tap`` payload ``{}``: a tap from source ``sim``."""

    EXAMPLE: ClassVar[dict[str, Any]] = {}


class SimText(Message):
    """``sim/text`` payload: typed input, becomes a ``transcript`` with ``source: typed``."""

    text: str = Field(max_length=MAX_SAY_TEXT_CHARS)
    EXAMPLE: ClassVar[dict[str, Any]] = {"text": "hello robot"}


# ---- decoding --------------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _load_object(payload: bytes | str, what: str) -> dict[str, Any]:
    """Parse a payload into a JSON object, raising ProtocolError ``invalid`` on any problem."""
    size = len(payload.encode() if isinstance(payload, str) else payload)
    if size > MAX_PAYLOAD_BYTES:
        raise ProtocolError(
            "invalid", f"{what} payload is {size} bytes, over the {MAX_PAYLOAD_BYTES} byte limit"
        )
    try:
        text = payload if isinstance(payload, str) else payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProtocolError("invalid", f"{what} payload is not UTF-8: {err}") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        raise ProtocolError("invalid", f"{what} payload is not valid JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("invalid", f"{what} payload must be a JSON object, got {type(obj).__name__}")
    return obj


def _read_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("id")
    return value if isinstance(value, str) and value else None


def _check_envelope(obj: dict[str, Any], what: str, command_id: str | None) -> str:
    """Check ``v`` and ``type``; return the type."""
    if "v" not in obj:
        raise ProtocolError("invalid", f"{what}: missing field 'v' (protocol version)", command_id)
    version = obj["v"]
    if isinstance(version, bool) or not isinstance(version, int | float):
        raise ProtocolError(
            "invalid", f"{what}: field 'v' must be the integer 1, got {type(version).__name__}", command_id
        )
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            "unsupported_version",
            f"{what}: protocol version {version!r} is not supported (only 1)",
            command_id,
        )
    if "type" not in obj:
        raise ProtocolError("invalid", f"{what}: missing field 'type'", command_id)
    type_ = obj["type"]
    if not isinstance(type_, str):
        raise ProtocolError(
            "invalid", f"{what}: field 'type' must be a string, got {type(type_).__name__}", command_id
        )
    if "id" not in obj:
        raise ProtocolError("invalid", f"{what}: missing field 'id'", command_id)
    return type_


def _validate(cls: type[Message], obj: Any, what: str, command_id: str | None = None) -> Any:
    try:
        return cls.model_validate(obj)
    except ValidationError as err:
        raise ProtocolError("invalid", f"{what}: {describe_validation_error(err)}", command_id) from None


def decode_command(payload: bytes | str) -> Command:
    """Decode and validate a command payload; raise :class:`ProtocolError` if it is not one."""
    obj = _load_object(payload, "command")
    command_id = _read_id(obj)
    type_ = _check_envelope(obj, "command", command_id)
    cls = COMMAND_TYPES.get(type_)
    if cls is None:
        known = ", ".join(COMMAND_TYPES)
        raise ProtocolError("unknown_type", f"unknown command type {type_!r} (known: {known})", command_id)
    result: Command = _validate(cls, obj, f"{type_} command", command_id)
    return result


def decode_event(payload: bytes | str) -> Event:
    """Decode and validate an event payload (agent side); raise :class:`ProtocolError` if invalid."""
    obj = _load_object(payload, "event")
    event_id = _read_id(obj)
    type_ = _check_envelope(obj, "event", event_id)
    cls = EVENT_TYPES.get(type_)
    if cls is None:
        raise ProtocolError("unknown_type", f"unknown event type {type_!r}", event_id)
    result: Event = _validate(cls, obj, f"{type_} event", event_id)
    return result


def decode_status(payload: bytes | str) -> StatusMessage:
    """Decode a retained device status payload; raise :class:`ProtocolError` if invalid."""
    obj = _load_object(payload, "status")
    if "v" in obj and not isinstance(obj["v"], bool) and obj["v"] != PROTOCOL_VERSION:
        raise ProtocolError("unsupported_version", f"status: protocol version {obj['v']!r} is not supported")
    result: StatusMessage = _validate(StatusMessage, {"v": 1, **obj}, "status")
    return result


def decode_agent_status(payload: bytes | str) -> AgentStatus:
    """Decode ``{root}/agent/status``; an empty payload (retained message cleared) means offline."""
    if not payload:
        return AgentStatus(online=False)
    result: AgentStatus = _validate(AgentStatus, _load_object(payload, "agent status"), "agent status")
    return result


def decode_sim_text(payload: bytes | str) -> SimText:
    """Decode a ``sim/text`` payload; raise :class:`ProtocolError` if invalid."""
    result: SimText = _validate(SimText, _load_object(payload, "sim/text"), "sim/text")
    return result


def make_event(event_type: str, fields: dict[str, Any], *, id: str, boot: int, seq: int, ts: float) -> Event:
    """Build and validate an event; raise :class:`ProtocolError` for an unknown type or bad fields."""
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        raise ProtocolError(
            "unknown_type", f"unknown event type {event_type!r} (known: {', '.join(EVENT_TYPES)})"
        )
    clash = sorted(_ENVELOPE_FIELDS & fields.keys())
    if clash:
        raise ProtocolError("invalid", f"{event_type} event: envelope fields {clash} must not be in fields")
    unknown = sorted(fields.keys() - cls.model_fields.keys())
    if unknown:
        raise ProtocolError("invalid", f"{event_type} event: unknown fields {unknown}")
    obj = {**fields, "v": 1, "type": event_type, "id": id, "boot": boot, "seq": seq, "ts": ts}
    result: Event = _validate(cls, obj, f"{event_type} event", id)
    return result
