"""Speaking: a reply's ``say`` chunks, and its playback as the speaker reports it.

The chunks: say-while-asleep rejected, chunks of an ended or stopped reply refused (also of a reply
that a stop stepped early ended unseen); the tags parsed out, the emotion marks kept for their word and
a ``[sleep]`` tag for the reply's end.

The playback: a reply started, each sentence as it plays, a reply finished. Emotion marks are shown at
their word; while a reply plays the listener knows the device speaks (half duplex); a reply that
finished normally lets its ``[sleep]`` tag and the sleeps that waited for it take effect
(``device.core.rules.sleep_wake``).
"""

from __future__ import annotations

from dataclasses import replace

from agent_link.protocol.event_messages import PlaybackFinishedBody, PlaybackStartedBody
from agent_link.protocol.messages import SayCommand
from audio.events import PlaybackFinished, PlaybackStarted, SentencePlaying
from device.core.actions import (
    Action,
    CancelTimer,
    Note,
    OpenRecord,
    PlayVisemes,
    Publish,
    Record,
    SetHalfDuplex,
    ShowExpression,
    Speak,
)
from device.core.early import (
    arrived_before,
    blocked,
    ended_by,
    ending_stop,
    judged_awake,
    stopped_after,
    update,
)
from device.core.rules import ENDED_MEMORY, THINKING_TIMER, Rules, reject
from device.core.rules.sleep_wake import sleep_if_awake
from device.core.state import DeviceState, EarlyControl, PendingSleep, Reply
from face.tags import parse_chunk


def on_say(state: DeviceState, cmd: SayCommand, ts: float, out: list[Action], rules: Rules) -> DeviceState:
    if not judged_awake(state):
        out.append(reject(cmd.id, "asleep", "the device is asleep; only a tap wakes it", ts))
        return state
    stop = ended_by(state, cmd.say)
    if stop is not None:
        return _chunk_of_unseen(state, stop, cmd, ts, out)
    reply = state.reply(cmd.say)
    if (reply is not None and reply.final) or (reply is None and cmd.say in state.ended):
        out.append(reject(cmd.id, "invalid", f"reply {cmd.say!r} already ended (finished or stopped)", ts))
        return state
    stop = ending_stop(state) if reply is None else None
    if stop is not None:
        return _chunk_of_unseen(state, stop, cmd, ts, out)
    if reply is not None and reply.stopped:
        # Stopped, its interrupted finish on the way: what the agent sent meanwhile is not spoken.
        out.append(Note("debug", f"chunk {cmd.id} of stopped reply {cmd.say} not spoken"))
        if cmd.final and stopped_after(state, cmd.say):
            return _put_reply(state, replace(reply, final=True))  # its last chunk, sent before the stop
        return state
    new_reply = reply is None
    reply = reply or Reply(say=cmd.say)
    parsed = parse_chunk(
        cmd.text, pending=reply.pending_tag, offset=reply.offset, final=cmd.final, vocabulary=rules.vocabulary
    )
    emotions = tuple(m for m in parsed.marks if m.kind == "emotion")
    reply = replace(
        reply,
        pending_tag=parsed.pending,
        offset=parsed.offset,
        marks=reply.marks + emotions,
        sleep_tag=reply.sleep_tag or any(m.kind == "sleep" for m in parsed.marks),
        final=cmd.final,
    )
    if parsed.text or cmd.final or new_reply:
        # A new reply always reaches the speaker (even a tag-only first chunk), so a stop finishes it.
        if new_reply:
            # Recorded before it can sound: a kill mid-reply leaves it for the next boot to close.
            out.append(OpenRecord("replies", cmd.say))
        out.append(Speak(cmd.say, parsed.text, cmd.final))
    if new_reply:
        return _queued_before_sleeps(replace(state, replies=(*state.replies, reply)), cmd.say)
    return _put_reply(state, reply)


def _queued_before_sleeps(state: DeviceState, say: str) -> DeviceState:
    """A new reply sent before a sleep command stepped early: the sleep waits for it too."""
    return replace(
        state,
        sleeps=tuple(
            replace(p, after=p.after | {say}) if arrived_before(state, p.arrival) else p for p in state.sleeps
        ),
    )


def _chunk_of_unseen(
    state: DeviceState, stop: EarlyControl, cmd: SayCommand, ts: float, out: list[Action]
) -> DeviceState:
    """A chunk of a reply first seen after a stop stepped early, sent before it: the stop ended that
    reply. Not spoken; its first chunk gets the interrupted finish, a chunk after its final one is
    refused — as in arrival order, where the speaker got it and the stop dropped it."""
    if cmd.say in stop.ended_final:
        out.append(reject(cmd.id, "invalid", f"reply {cmd.say!r} already ended (finished or stopped)", ts))
        return state
    finals = stop.ended_final | ({cmd.say} if cmd.final else set())
    state = update(state, replace(stop, ended=stop.ended | {cmd.say}, ended_final=finals))
    if cmd.say in stop.ended:
        out.append(Note("debug", f"chunk {cmd.id} of stopped reply {cmd.say} not spoken"))
        return state
    out.append(Note("debug", f"reply {cmd.say} was sent before a stop: ended unspoken"))
    out.append(Publish(PlaybackFinishedBody(say=cmd.say, interrupted=True, ts=stop.ts)))
    # A sleep sent after it (and stepped early) would have waited for its end: that end is the stop's.
    sleeps = tuple(
        replace(p, not_before=max(p.not_before, stop.arrival)) if arrived_before(state, p.arrival) else p
        for p in state.sleeps
    )
    return replace(state, sleeps=sleeps, ended=(*state.ended, cmd.say)[-ENDED_MEMORY:])


def on_playback_started(
    state: DeviceState, ev: PlaybackStarted, out: list[Action], rules: Rules
) -> DeviceState:
    reply = state.reply(ev.say)
    if reply is None:
        return state
    if not judged_awake(state):
        # The output had begun this reply (queued behind the one whose end put the device to sleep)
        # before the stop reached it: it is being faded out and gets its interrupted finish.
        out.append(Note("info", f"reply {ev.say} started after the device fell asleep: not reported"))
        return state
    if not any(r.playing for r in state.replies):
        out.append(SetHalfDuplex(True))
    if state.thinking:
        out.append(CancelTimer(THINKING_TIMER))
    out.append(Publish(PlaybackStartedBody(say=ev.say, ts=ev.ts)))
    return _put_reply(replace(state, thinking=False), replace(reply, playing=True))


def on_sentence(state: DeviceState, ev: SentencePlaying, out: list[Action], rules: Rules) -> DeviceState:
    reply = state.reply(ev.say)
    if reply is None:
        return state
    if ev.visemes:
        out.append(PlayVisemes(ev.visemes, ev.ts))
    span = max(ev.end - ev.start, 1)
    keep = []
    for mark in reply.marks:
        if mark.offset < ev.end:
            share = min(max((mark.offset - ev.start) / span, 0.0), 1.0)
            out.append(ShowExpression(mark.name, ev.ts + share * ev.duration))
        else:
            keep.append(mark)
    return _put_reply(state, replace(reply, marks=tuple(keep)))


def on_playback_finished(
    state: DeviceState, ev: PlaybackFinished, out: list[Action], rules: Rules
) -> DeviceState:
    reply = state.reply(ev.say)
    if reply is None:
        return state
    if not ev.interrupted:
        out.extend(ShowExpression(m.name, ev.ts) for m in reply.marks)
    body = PlaybackFinishedBody(say=ev.say, interrupted=ev.interrupted, ts=ev.ts)
    out.append(Publish(body, closes=Record("replies", ev.say)))
    rest = tuple(r for r in state.replies if r.say != ev.say)
    if reply.playing and not any(r.playing for r in rest):
        out.append(SetHalfDuplex(False))
    state = replace(state, replies=rest, ended=(*state.ended, ev.say)[-ENDED_MEMORY:])
    due: list[PendingSleep] = []
    waiting: list[PendingSleep] = []
    for pending in state.sleeps:
        left = replace(pending, after=pending.after - {ev.say})
        (waiting if left.after or blocked(state, left) else due).append(left)
    if reply.sleep_tag and not ev.interrupted:
        due.append(PendingSleep("tag", frozenset(), ev.say))
    state = replace(state, sleeps=tuple(waiting))
    return sleep_if_awake(state, due, ev.ts, out)


def _put_reply(state: DeviceState, reply: Reply) -> DeviceState:
    return replace(state, replies=tuple(reply if r.say == reply.say else r for r in state.replies))
