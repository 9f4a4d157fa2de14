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

from pydantic import Field, ValidationError

from agent_link.protocol.errors import ProtocolError, describe_validation_error
from agent_link.protocol.event_messages import (
    ENVELOPE_FIELDS,
    EVENT_TYPES,
    AsleepEvent,
    CommandRejectedEvent,
    Event,
    PlaybackFinishedEvent,
    PlaybackStartedEvent,
    SleepIgnoredEvent,
    SpeechEndedEvent,
    SpeechStartedEvent,
    TapEvent,
    TranscriptEvent,
    UtteranceFailedEvent,
    WakeEvent,
)
from agent_link.protocol.message_base import (
    MAX_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    Duplex,
    FailureReason,
    Message,
    RejectReason,
    State,
    TapSource,
    VersionedMessage,
)

__all__ = [
    "COMMAND_TYPES",
    "EVENT_TYPES",
    "MAX_PAYLOAD_BYTES",
    "PROTOCOL_VERSION",
    "AgentStatus",
    "AsleepEvent",
    "Command",
    "CommandRejectedEvent",
    "ConfigCommand",
    "Event",
    "FailureReason",
    "Message",
    "PlaybackFinishedEvent",
    "PlaybackStartedEvent",
    "ProtocolError",
    "RejectReason",
    "SayCommand",
    "SimTap",
    "SimText",
    "SleepAllowedCommand",
    "SleepCommand",
    "SleepIgnoredEvent",
    "SpeechEndedEvent",
    "SpeechStartedEvent",
    "State",
    "StatusMessage",
    "StopCommand",
    "TapEvent",
    "TapSource",
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


# ---- commands (agent → device) ---------------------------------------------------------------------
class _CommandEnvelope(VersionedMessage):
    id: str = Field(min_length=1)
    """Unique command id; duplicates are executed once."""
    expires_at: float | None = None
    """Optional unix time (s) after which the command must not be executed."""


class SayCommand(_CommandEnvelope):
    """Speak ``text``: one chunk of reply ``say``; the last chunk has ``final: true``."""

    type: Literal["say"] = "say"
    say: str = Field(min_length=1)
    """Reply id; chunks with the same id stream one reply."""
    text: str
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
    language: str | None = Field(default=None, min_length=1)
    """STT language and TTS voice language (e.g. ``en``)."""
    voice: str | None = Field(default=None, min_length=1)
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


# ---- status and other topics -----------------------------------------------------------------------
class StatusMessage(VersionedMessage):
    """Retained device status (birth, death/Last Will, current state); ``None`` fields are omitted."""

    OMIT_NONE: ClassVar[bool] = True
    online: bool
    """False in the Last Will and the clean-shutdown status."""
    boot: int = Field(ge=0)
    """Daemon start counter."""
    state: State | None = None
    """``asleep``, ``idle``, ``listening``, ``thinking`` or ``speaking``."""
    sleep_allowed: bool | None = None
    """False while an activity forbids sleeping."""
    language: str | None = None
    """Session language (e.g. ``en``)."""
    volume: float | None = Field(default=None, ge=0.0, le=1.0)
    """Output volume in [0, 1]."""
    duplex: Duplex | None = None
    """v1.1, optional: ``full`` (echo cancellation on: the device hears the user over its own voice)
    or ``half`` (what the microphone hears while the device speaks, plus a short tail, is discarded)."""
    duplex_reason: str | None = None
    """v1.1, optional: why the device is half duplex (echo cancellation off, the canceller still
    converging, or a fault it fell back from); absent when full or when echo cancellation is
    configured off."""
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
        "duplex": "full",
        "version": "0.3.0",
        "ts": 1764441600.125,
    }


class AgentStatus(Message):
    """Retained ``{root}/agent/status``; absent or ``online: false`` = agent unreachable."""

    online: bool
    """Whether the agent is reachable."""
    EXAMPLE: ClassVar[dict[str, Any]] = {"online": True}


class SimTap(Message):
    """``sim/tap`` payload ``{}``: a tap from source ``sim``."""

    EXAMPLE: ClassVar[dict[str, Any]] = {}


class SimText(Message):
    """``sim/text`` payload: typed input, becomes a ``transcript`` with ``source: typed``."""

    text: str
    """The typed text."""
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
    clash = sorted(ENVELOPE_FIELDS & fields.keys())
    if clash:
        raise ProtocolError("invalid", f"{event_type} event: envelope fields {clash} must not be in fields")
    unknown = sorted(fields.keys() - cls.model_fields.keys())
    if unknown:
        raise ProtocolError("invalid", f"{event_type} event: unknown fields {unknown}")
    obj = {**fields, "v": 1, "type": event_type, "id": id, "boot": boot, "seq": seq, "ts": ts}
    result: Event = _validate(cls, obj, f"{event_type} event", id)
    return result
