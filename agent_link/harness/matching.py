"""Event matching and readable descriptions: what a harness waits for and what it prints."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agent_link.protocol.messages import Event

EventPredicate = Callable[[Event], bool]
EventSpec = str | EventPredicate | tuple[str, dict[str, Any]]
"""What to look for: an event ``type``, a predicate, or ``(type, {field: value})``."""

_ENVELOPE = ("v", "type", "id", "boot", "seq", "ts")


class SequenceMismatch(AssertionError):
    """Events did not contain the expected sequence (the message lists what arrived)."""


def event_fields(event: Event) -> dict[str, Any]:
    """The event's own fields (without the envelope), in declaration order."""
    data = event.model_dump()
    return {key: value for key, value in data.items() if key not in _ENVELOPE}


def describe(event: Event, t0: float | None = None) -> str:
    """One readable line: ``#41 b7 transcript utterance=u-1 text='hi' confidence=0.93``."""
    parts = []
    for key, value in event_fields(event).items():
        if value is None:
            continue
        if isinstance(value, float):
            parts.append(f"{key}={value:.2f}")
        elif isinstance(value, str) and key in ("text", "detail"):
            shown = value if len(value) <= 70 else value[:67] + "..."
            parts.append(f"{key}={shown!r}")
        else:
            parts.append(f"{key}={value}")
    when = f" +{event.ts - t0:.2f}s" if t0 is not None else ""
    return f"#{event.seq} b{event.boot}{when} {event.type} {' '.join(parts)}".rstrip()


def _fields_match(event: Event, fields: dict[str, Any]) -> bool:
    for key, want in fields.items():
        got = getattr(event, key, _MISSING)
        if got is _MISSING:
            return False
        if callable(want) and not isinstance(want, type):
            if not want(got):
                return False
        elif got != want:
            return False
    return True


_MISSING = object()


def matches(event: Event, spec: EventSpec, fields: dict[str, Any] | None = None) -> bool:
    """Whether ``event`` fits ``spec`` and every ``fields`` value (a value or a predicate on it)."""
    extra = dict(fields or {})
    if isinstance(spec, tuple):
        type_, spec_fields = spec
        extra = {**spec_fields, **extra}
        ok = event.type == type_
    elif isinstance(spec, str):
        ok = event.type == spec
    else:
        ok = bool(spec(event))
    return ok and _fields_match(event, extra)


def describe_spec(spec: EventSpec, fields: dict[str, Any] | None = None) -> str:
    """Readable form of a spec: ``asleep(reason='tag')``."""
    extra = dict(fields or {})
    if isinstance(spec, tuple):
        name, spec_fields = spec
        extra = {**spec_fields, **extra}
    elif isinstance(spec, str):
        name = spec
    else:
        name = getattr(spec, "__name__", "predicate")
    shown = ", ".join(f"{k}={'<check>' if callable(v) else repr(v)}" for k, v in extra.items())
    return f"{name}({shown})" if shown else name


def describe_all(events: Iterable[Event], t0: float | None = None, limit: int = 30) -> str:
    """Several events, one per line (the last ``limit``), or ``(nothing)``."""
    items = list(events)
    if not items:
        return "    (nothing)"
    skipped = len(items) - limit
    lines = [f"    {describe(ev, t0)}" for ev in items[-limit:]]
    if skipped > 0:
        lines.insert(0, f"    ... {skipped} earlier")
    return "\n".join(lines)


def assert_sequence(events: Sequence[Event], specs: Sequence[EventSpec]) -> list[Event]:
    """Check that ``events`` contain ``specs`` in this order (other events may come between).

    Returns the matched events; raises :class:`SequenceMismatch` naming the first missing step.
    """
    found: list[Event] = []
    pos = 0
    for index, spec in enumerate(specs):
        while pos < len(events) and not matches(events[pos], spec):
            pos += 1
        if pos >= len(events):
            got = ", ".join(describe_spec(s) for s in specs[:index]) or "nothing yet"
            raise SequenceMismatch(
                f"expected {describe_spec(spec)} (step {index + 1} of {len(specs)}) after [{got}];"
                f" events were:\n{describe_all(events)}"
            )
        found.append(events[pos])
        pos += 1
    return found


def assert_absent(events: Sequence[Event], spec: EventSpec, fields: dict[str, Any] | None = None) -> None:
    """Check that no event fits ``spec``; raises :class:`SequenceMismatch` listing offenders."""
    bad = [ev for ev in events if matches(ev, spec, fields)]
    if bad:
        raise SequenceMismatch(f"unexpected {describe_spec(spec, fields)}:\n{describe_all(bad)}")
