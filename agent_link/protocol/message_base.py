"""Base of every protocol v1 message, and the shared constants and value types."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator

PROTOCOL_VERSION = 1
"""The only protocol version this device speaks."""

MAX_PAYLOAD_BYTES = 65536
"""Largest accepted payload (64 KiB); anything larger is rejected as ``invalid``."""

State = Literal["asleep", "idle", "listening", "thinking", "speaking"]
"""The device state (``status.state``)."""
TapSource = Literal["button", "screen", "keyboard", "sim"]
"""What was tapped (``wake.source``, ``tap.source``)."""
FailureReason = Literal["no_speech", "too_short", "too_long", "stt_error", "interrupted"]
"""Why an utterance produced no transcript (``utterance_failed.reason``)."""
RejectReason = Literal["invalid", "unknown_type", "expired", "unsupported_version", "asleep"]
"""Why a command was not executed (``command_rejected.reason``)."""
SleepVia = Literal["command", "tag"]
"""What asked for a sleep: a ``sleep`` command or a ``[sleep]`` tag (``asleep.reason``, ``sleep_ignored.via``)."""
SpeechEnd = Literal["turn_complete", "silence", "max_length"]
"""Why an utterance ended (``speech_ended.end``, v1.1)."""
Duplex = Literal["full", "half"]
"""Whether the device hears the user over its own voice (``status.duplex``, v1.1)."""
TranscriptSource = Literal["voice", "typed"]
"""Where a transcript's text came from (``transcript.source``)."""


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


class VersionedMessage(Message):
    """A message with the protocol version field ``v`` (always 1)."""

    v: Literal[1] = 1
    """Protocol version, always 1."""

    @field_validator("v", mode="before")
    @classmethod
    def _v_not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("v must be the integer 1, not a boolean")
        return value
