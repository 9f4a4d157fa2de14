"""Control stepped ahead of data: what was in force when a data item arrived.

The shell's inbox steps control items (a tap; ``stop``, ``sleep``, ``sleep_allowed``) ahead of data that
arrived before them, and puts a marker (``Reached``) among the data where each arrived. Until its marker
is reached, a control item stepped early stays on record (``DeviceState.early``), and data that arrived
before it is judged as it would have been in arrival order:

- ``stop``: a reply first seen after the stop but sent before it is one the stop ended (not spoken);
- ``sleep``: speech sent before it is speech queued before the request; the sleep waits for its marker;
- ``wake`` (a tap that woke the device): data sent before it is judged as asleep;
- ``tap`` (on an awake device that may fall asleep before the marker): reported at the marker, as
  ``tap`` if the device is still awake, else it wakes the device;
- ``sleep_allowed``: a sleep taking effect uses the value in force before it.

Pure queries and record keeping; the rules that act on them are in ``device.core.rules`` (the marker
reached: ``device.core.rules.sleep_wake``), dispatched by ``device.core.orchestrator``.
"""

from __future__ import annotations

from dataclasses import replace

from device.core.state import DeviceState, EarlyControl, PendingSleep


def arrived_before(state: DeviceState, arrival: int) -> bool:
    """The input being stepped arrived before control item ``arrival`` (a bare input: no)."""
    return 0 < state.arrival < arrival


def judged_awake(state: DeviceState) -> bool:
    """Awake as the input being stepped found the device: a tap that came after it does not count."""
    return state.awake and not any(c.kind == "wake" and arrived_before(state, c.arrival) for c in state.early)


def sleep_allowed_then(state: DeviceState) -> bool:
    """``sleep_allowed`` as it was when the input being stepped arrived."""
    for control in state.early:
        if control.kind == "sleep_allowed" and arrived_before(state, control.arrival):
            return control.sleep_allowed
    return state.settings.sleep_allowed


def blocked(state: DeviceState, pending: PendingSleep) -> bool:
    """The sleep waits for a marker not reached yet."""
    return pending.not_before != 0 and any(c.arrival == pending.not_before for c in state.early)


def ending_stop(state: DeviceState) -> EarlyControl | None:
    """The first stop stepped early that the input being stepped arrived before."""
    return next((c for c in state.early if c.kind == "stop" and arrived_before(state, c.arrival)), None)


def ended_by(state: DeviceState, say: str) -> EarlyControl | None:
    """The stop stepped early that ended reply ``say`` before it was seen, if any (marker not reached)."""
    return next((c for c in state.early if c.kind == "stop" and say in c.ended), None)


def stopped_after(state: DeviceState, say: str) -> bool:
    """Reply ``say`` was stopped by a stop stepped early that the input being stepped arrived before."""
    return any(
        c.kind == "stop" and say in c.stopped and arrived_before(state, c.arrival) for c in state.early
    )


def stopped_here(state: DeviceState) -> DeviceState:
    """Every reply is stopped at the input being stepped (the device falls asleep): stops stepped early
    that it arrived before no longer count as what stopped them."""
    return replace(
        state,
        early=tuple(
            replace(c, stopped=frozenset()) if c.kind == "stop" and arrived_before(state, c.arrival) else c
            for c in state.early
        ),
    )


def sleep_may_come(state: DeviceState) -> bool:
    """A sleep may take effect on data already queued: one is pending, or a reply has a ``[sleep]`` tag."""
    return bool(state.sleeps) or any(r.sleep_tag for r in state.replies)


def tap_waits(state: DeviceState) -> bool:
    """A tap stepped early waits for its marker to be reported (or to wake the device)."""
    return any(c.kind == "tap" for c in state.early)


def remember(state: DeviceState, control: EarlyControl) -> DeviceState:
    """Keep a control item on record until its marker (a bare input, arrival 0, needs none)."""
    if control.arrival == 0:
        return state
    return replace(state, early=(*state.early, control))


def update(state: DeviceState, control: EarlyControl) -> DeviceState:
    """Replace the record of the same control item."""
    return replace(state, early=tuple(control if c.arrival == control.arrival else c for c in state.early))


def take(state: DeviceState, arrival: int) -> tuple[EarlyControl | None, DeviceState]:
    """The marker of ``arrival`` is reached: its record (if any) and the state without it."""
    control = next((c for c in state.early if c.arrival == arrival), None)
    if control is None:
        return None, state
    return control, replace(state, early=tuple(c for c in state.early if c.arrival != arrival))
