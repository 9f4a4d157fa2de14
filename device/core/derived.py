"""What follows from the state after each step: the speaker's holds, the face, the status fields.

Derived, not stored: every way the state changes (a sleep that resolves, a reply stopped, the device
falling asleep) changes these with it, so a part cannot be left behind (mute, or on an old face).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from device.core.actions import (
    Action,
    CancelTimer,
    DuckSpeech,
    HoldSpeech,
    Notice,
    ReleaseSpeech,
    ScheduleTimer,
    ShowFace,
    UnduckSpeech,
)
from device.core.state import DeviceState, Phase
from face.state import FaceState

WAKING_TIMER = "waking"
"""The timer that ends the wake-up animation."""
DUCK_HOLD_TIMER = "duck-hold"
"""The timer that ends the duck's hold after a barge-in utterance."""
EARLY_DUCK_TIMER = "early-duck"
"""The timer that ends an early duck no barge-in followed."""


# ---- the sleep hold ------------------------------------------------------------------------------------
def hold_points(state: DeviceState) -> dict[str, bool]:
    """Replies at whose end a sleep waits (→ hold at once: the reply was stopped, its end never plays).

    A reply with a ``[sleep]`` tag, and for a pending ``sleep`` command the last reply queued
    before it. The speaker starts nothing queued after a hold point until it is released.
    """
    if not state.awake:
        return {}
    order = [r.say for r in state.replies]
    points = {r.say for r in state.replies if r.sleep_tag}
    for pending in state.sleeps:
        waited = [order.index(say) for say in pending.after if say in order]
        if waited:
            points.add(order[max(waited)])
    return {r.say: r.stopped for r in state.replies if r.say in points}


def hold_changes(before: DeviceState, after: DeviceState) -> list[Action]:
    """The hold and release actions that take the speaker from ``before``'s holds to ``after``'s."""
    old, new = hold_points(before), hold_points(after)
    actions: list[Action] = [
        HoldSpeech(say, at_once) for say, at_once in sorted(new.items()) if old.get(say) != at_once
    ]
    actions.extend(ReleaseSpeech(say) for say in sorted(old.keys() - new.keys()))
    return actions


# ---- ducking (full duplex) ------------------------------------------------------------------------
def speech_ducked(state: DeviceState) -> bool:
    """Whether the user is speaking an utterance they began over a reply."""
    return state.awake and state.barge_in is not None and state.barge_in == state.hearing


def ducked(state: DeviceState) -> bool:
    """Whether the user's barge-in ducks the replies: the user speaks over a reply, or did a moment
    ago (the hold). The face listens meanwhile."""
    return speech_ducked(state) or (state.awake and state.duck_held)


def volume_ducked(state: DeviceState) -> bool:
    """Whether the replies play ducked: a barge-in (``ducked``), or voice over a reply that may be
    one (the early duck; the face does not change for it)."""
    return ducked(state) or (state.awake and state.early_duck)


def early_duck_end(after: DeviceState, out: list[Action]) -> DeviceState:
    """The early duck ends when the barge-in it was waiting for starts (its duck takes over), when no
    reply plays any more and when the device falls asleep; else its timer ends it."""
    playing = any(r.playing for r in after.replies)
    if after.early_duck and (speech_ducked(after) or not after.awake or not playing):
        out.append(CancelTimer(EARLY_DUCK_TIMER))
        return replace(after, early_duck=False)
    return after


def duck_hold(
    before: DeviceState, after: DeviceState, ts: float, hold_s: float, out: list[Action]
) -> DeviceState:
    """The hold after a barge-in utterance: it starts when the utterance ends (however it ends)
    while the reply it was spoken over still plays, and lasts ``hold_s`` (its timer); it ends early
    when the user barges in again (their speech ducks), when no reply plays any more (the agent
    stopped it, or it ended: the next reply, the agent's answer, plays at full volume) and when the
    device falls asleep."""
    playing = any(r.playing for r in after.replies)
    if after.duck_held and (speech_ducked(after) or not after.awake or not playing):
        out.append(CancelTimer(DUCK_HOLD_TIMER))
        return replace(after, duck_held=False)
    if speech_ducked(before) and not speech_ducked(after) and after.awake and playing and hold_s > 0:
        out.append(ScheduleTimer(DUCK_HOLD_TIMER, ts + hold_s))
        return replace(after, duck_held=True)
    return after


def duck_changes(before: DeviceState, after: DeviceState, level_db: float) -> list[Action]:
    """Duck when the user's barge-in starts (or voice over a reply may be one: the early duck), back
    to full volume when it ends (however it ends: speech ended, interrupted, asleep, no barge-in
    followed). ``level_db`` 0 = no ducking."""
    if level_db >= 0.0 or volume_ducked(before) == volume_ducked(after):
        return []
    return [DuckSpeech(level_db)] if volume_ducked(after) else [UnduckSpeech()]


# ---- the face ----------------------------------------------------------------------------------------
def display_of(state: DeviceState) -> FaceState:
    """What the face shows for this state (once the wake-up animation is over)."""
    if not state.awake:
        return FaceState.ASLEEP
    if ducked(state):
        return FaceState.LISTENING  # the user talks over the reply: the face listens to them
    if state.phase is Phase.SPEAKING:
        return FaceState.SPEAKING
    if state.faults:
        return FaceState.ERROR
    if not (state.connected and state.agent_online):
        return FaceState.OFFLINE
    return FaceState(state.phase.value)


def face_changes(state: DeviceState, ts: float, wake_s: float) -> tuple[DeviceState, list[Action]]:
    """Show a new display: waking up plays the wake-up animation whole (``wake_s``), then the latest
    state; the user starting to speak gets a notice."""
    display = display_of(state)
    if display == state.shown:
        return state, []
    previous, state = state.shown, replace(state, shown=display)
    if previous is FaceState.ASLEEP and display is not FaceState.ASLEEP:
        waking: list[Action] = [ShowFace(FaceState.WAKING), ScheduleTimer(WAKING_TIMER, ts + wake_s)]
        return replace(state, waking=True), waking
    actions: list[Action] = [Notice()] if display is FaceState.LISTENING else []
    if state.waking and display is not FaceState.ASLEEP:
        return state, actions  # the animation finishes first, then shows the latest state
    if state.waking:
        actions.append(CancelTimer(WAKING_TIMER))
        state = replace(state, waking=False)
    actions.append(ShowFace(display))
    return state, actions


def wake_animation_over(state: DeviceState) -> tuple[DeviceState, list[Action]]:
    """The wake-up animation ended: the latest state shows."""
    if not state.waking:
        return state, []
    actions: list[Action] = [ShowFace(state.shown)] if state.shown is not None else []
    return replace(state, waking=False), actions


# ---- the status ---------------------------------------------------------------------------------------
def status_fields(state: DeviceState) -> dict[str, Any]:
    """The state-dependent fields of the retained status message."""
    s = state.settings
    return {
        "state": state.phase.value,
        "sleep_allowed": s.sleep_allowed,
        "language": s.language,
        "volume": s.volume,
        "duplex": state.duplex,
        **({"duplex_reason": state.duplex_reason} if state.duplex == "half" and state.duplex_reason else {}),
    }
