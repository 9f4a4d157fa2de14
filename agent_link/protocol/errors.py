"""The one error type raised for any malformed protocol message."""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationError

DecodeReason = Literal["invalid", "unknown_type", "unsupported_version"]
"""``command_rejected.reason`` values a decoding problem maps to."""


class ProtocolError(ValueError):
    """A payload that is not a valid protocol v1 message.

    ``reason`` is the contract's ``command_rejected.reason`` (``invalid``, ``unknown_type`` or
    ``unsupported_version``), ``detail`` says precisely what was wrong (which field, why), and
    ``command_id`` is the message ``id`` if one could be read (for the rejection event).
    """

    def __init__(self, reason: DecodeReason, detail: str, command_id: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: DecodeReason = reason
        self.detail = detail
        self.command_id = command_id


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_validation_error(err: ValidationError, max_errors: int = 3) -> str:
    """A one-line, human-readable summary of a pydantic error naming each bad field."""
    parts = []
    for item in err.errors(include_url=False)[:max_errors]:
        loc = ".".join(str(p) for p in item["loc"]) or "(message)"
        if item["type"] == "missing":
            parts.append(f"missing field '{loc}'")
        else:
            got = item.get("input")
            parts.append(f"field '{loc}': {item['msg']} (got {type(got).__name__} {_short(got)})")
    extra = err.error_count() - max_errors
    if extra > 0:
        parts.append(f"and {extra} more")
    return "; ".join(parts)
