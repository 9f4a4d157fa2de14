"""Waking and sleeping. Only a tap wakes the device; awake, a tap is reported (``tap``). The device
sleeps only when the agent asks (command or ``[sleep]`` tag) and only after the speech queued before
the request, the ``sleep_allowed`` veto checked when a sleep would take effect. Falling asleep closes
the microphone and every open utterance, and stops every reply.

A tap or a sleep stepped ahead of data may wait for its marker (``Reached``, ``device.core.early``): a
tap, when data queued before it may put the device to sleep or an earlier tap's report waits; a sleep,
always (data queued before it may add speech to wait for). At the marker every data item that arrived
before it has been stepped: a tap held back is reported or wakes the device, and a sleep that waited
for the marker takes effect or is looked at again.
"""

from __future__ import annotations

from dataclasses import replace

from agent_link.protocol.event_messages import AsleepBody, SleepIgnoredBody, TapBody, WakeBody
from agent_link.protocol.message_base import TapSource
from device.core.actions import Action, CancelTimer, CloseMicrophone, OpenMicrophone, Publish
from device.core.early import (
    blocked,
    judged_awake,
    remember,
    sleep_allowed_then,
    sleep_may_come,
    stopped_here,
    take,
    tap_waits,
)
from device.core.inputs import Reached, Tapped
from device.core.rules import THINKING_TIMER, Rules, stop_speaking
from device.core.rules.hearing import failed
from device.core.state import DeviceState, EarlyControl, PendingSleep, Phase


def on_tap(state: DeviceState, ev: Tapped, out: list[Action], rules: Rules) -> DeviceState:
    if state.arrival and (tap_waits(state) or (state.awake and sleep_may_come(state))):
        # Data queued before the tap may put the device to sleep, or an earlier tap's report waits:
        # at its marker it is a tap, or it wakes the device.
        return remember(state, EarlyControl("tap", state.arrival, ev.ts, source=ev.source))
    if state.awake:
        out.append(Publish(TapBody(source=ev.source, ts=ev.ts)))
        return state
    return remember(_wake(state, ev.source, ev.ts, out), EarlyControl("wake", state.arrival, ev.ts))


def _wake(state: DeviceState, source: TapSource, ts: float, out: list[Action]) -> DeviceState:
    out.append(OpenMicrophone())
    out.append(Publish(WakeBody(source=source, ts=ts)))
    return replace(state, phase=Phase.IDLE, thinking=False)


def sleep_if_awake(state: DeviceState, due: list[PendingSleep], ts: float, out: list[Action]) -> DeviceState:
    for pending in due:
        if judged_awake(state):
            state = _sleep_now(state, pending, ts, out)
    return state


def _sleep_now(state: DeviceState, pending: PendingSleep, ts: float, out: list[Action]) -> DeviceState:
    """A sleep request takes effect now, unless ``sleep_allowed`` is false at this moment."""
    if not sleep_allowed_then(state):
        say = pending.say if pending.via == "tag" else None
        out.append(Publish(SleepIgnoredBody(via=pending.via, say=say, ts=ts)))
        return state
    out.append(CloseMicrophone())
    for utterance in ([state.hearing] if state.hearing else []) + sorted(state.decoding):
        out.append(failed(utterance, "interrupted", "the device fell asleep", ts))
    if state.replies:
        state = stop_speaking(stopped_here(state), out)
    if state.thinking:
        out.append(CancelTimer(THINKING_TIMER))
    out.append(Publish(AsleepBody(reason=pending.via, ts=ts)))
    return replace(state, phase=Phase.ASLEEP, hearing=None, decoding=frozenset(), thinking=False, sleeps=())


def sleep_command(state: DeviceState, ts: float, out: list[Action], arrival: int) -> DeviceState:
    """A sleep command: after the replies queued before it; stepped early (``arrival``), it waits for
    its marker at least (data queued before it may still add speech to wait for)."""
    after = frozenset(r.say for r in state.replies)
    # Replies a stop stepped early ended unseen would still be queued here in arrival order: their
    # end is that stop's (its marker).
    wait = max([arrival, *(c.arrival for c in state.early if c.kind == "stop" and c.ended)])
    pending = PendingSleep("command", after, arrival=arrival, not_before=wait)
    if after or wait:
        return replace(state, sleeps=(*state.sleeps, pending))
    return _sleep_now(state, pending, ts, out)


def on_reached(state: DeviceState, ev: Reached, out: list[Action], rules: Rules) -> DeviceState:
    """Every data item that arrived before control item ``ev.arrival`` has been stepped."""
    control, state = take(replace(state, arrival=ev.arrival), ev.arrival)
    if control is None:
        return state
    if control.kind == "tap":
        if judged_awake(state):
            out.append(Publish(TapBody(source=control.source, ts=control.ts)))
            return state
        return _wake(state, control.source, control.ts, out)
    if control.kind == "sleep" and not any(p.arrival == control.arrival for p in state.sleeps):
        # Asleep when it was stepped, or put to sleep by data that arrived before it: a tap that came
        # between woke the device, so in arrival order this sleep finds it awake.
        return sleep_command(state, control.ts, out, 0) if judged_awake(state) else state
    due: list[PendingSleep] = []
    waiting: list[PendingSleep] = []
    for pending in state.sleeps:
        if pending.not_before == control.arrival:
            pending = replace(pending, not_before=0)
        (waiting if pending.after or blocked(state, pending) else due).append(pending)
    return sleep_if_awake(replace(state, sleeps=tuple(waiting)), due, control.ts, out)
