"""Hearing: speech started, ended, transcribed or failed, typed text (a transcript of its own), and
what the previous boot left open; voice over a reply that may be a barge-in (the early duck).

Speech or typed text while asleep is ignored (only a tap wakes the device). Every utterance is closed
exactly once: by its transcript or its ``utterance_failed`` (``failed``, which falling asleep sends too),
also across a restart: what the previous boot left open ends as interrupted, so every utterance and
every reply is closed exactly once. A transcript starts ``thinking`` until a reply starts or the
timeout passes.
"""

from __future__ import annotations

from dataclasses import replace

from agent_link.protocol.event_messages import (
    PlaybackFinishedBody,
    SpeechEndedBody,
    SpeechStartedBody,
    TranscriptBody,
    UtteranceFailedBody,
)
from agent_link.protocol.message_base import FailureReason, SpeechEnd
from audio.events import (
    BargeInSuspected,
    EndReason,
    HearingFailure,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from device.core.actions import Action, Note, OpenRecord, Publish, Record, ScheduleTimer
from device.core.derived import EARLY_DUCK_TIMER
from device.core.early import judged_awake
from device.core.inputs import Booted, TypedText
from device.core.rules import THINKING_TIMER, Rules
from device.core.state import DeviceState


def on_typed(state: DeviceState, ev: TypedText, out: list[Action], rules: Rules) -> DeviceState:
    if not judged_awake(state):
        out.append(Note("info", "Typed text ignored while asleep (a tap wakes the device)"))
        return state
    body = TranscriptBody(
        utterance=ev.utterance,
        text=ev.text,
        confidence=1.0,
        language=state.settings.language,
        source="typed",
        audio_ms=0,
        decode_ms=0,
        ts=ev.ts,
    )
    out.append(Publish(body))
    return _start_thinking(state, ev.ts, out, rules)


def _start_thinking(state: DeviceState, ts: float, out: list[Action], rules: Rules) -> DeviceState:
    if any(r.playing for r in state.replies):
        return state
    out.append(ScheduleTimer(THINKING_TIMER, ts + rules.thinking_timeout_s))
    return replace(state, thinking=True)


def on_speech_started(state: DeviceState, ev: SpeechStarted, out: list[Action], rules: Rules) -> DeviceState:
    if not judged_awake(state):
        out.append(
            Note("warning", f"Speech start {ev.utterance} while asleep ignored (microphone should be closed)")
        )
        return state
    if state.hearing is not None:
        out.append(failed(state.hearing, "interrupted", "a new utterance started first", ev.ts))
    # Recorded before the event is stored: a kill in between leaves nothing open forever.
    out.append(OpenRecord("utterances", ev.utterance))
    over = ev.over_playback
    out.append(Publish(SpeechStartedBody(utterance=ev.utterance, ts=ev.ts, over_playback=over)))
    if over:  # the face listens (``display_of``) while the reply goes on, ducked
        playing = ", ".join(r.say for r in state.replies if r.playing) or "none playing"
        depth = rules.duck_depth(state.echo_removed_db)
        ducks = f"ducked by {depth:g} dB" if depth < 0.0 else "not ducked (hearing.duck_db = 0)"
        out.append(Note("info", f"Barge-in: {ev.utterance} started over the reply ({playing}), {ducks}"))
    return replace(state, hearing=ev.utterance, barge_in=ev.utterance if over else None)


def on_barge_in_suspected(
    state: DeviceState, ev: BargeInSuspected, out: list[Action], rules: Rules
) -> DeviceState:
    """Voice over a reply that may be a barge-in: the replies duck at once (``derived.volume_ducked``)
    until the barge-in starts or ``rules.early_duck_release_s`` after the first voiced frame. Nothing
    is published and the face does not change: a barge-in is only ``speech_started``."""
    playing = [r.say for r in state.replies if r.playing]
    if not judged_awake(state) or state.hearing is not None or not playing:
        return state
    if not state.early_duck:
        depth = rules.duck_depth(state.echo_removed_db)
        out.append(Note("debug", f"Early duck: voice over the reply ({', '.join(playing)}), {depth:g} dB"))
    out.append(ScheduleTimer(EARLY_DUCK_TIMER, ev.ts + rules.early_duck_release_s))
    return replace(state, early_duck=True)


def on_speech_ended(state: DeviceState, ev: SpeechEnded, out: list[Action], rules: Rules) -> DeviceState:
    if ev.utterance != state.hearing:
        out.append(Note("debug", f"Speech end of closed utterance {ev.utterance} ignored"))
        return state
    out.append(
        Publish(
            SpeechEndedBody(
                utterance=ev.utterance, audio_ms=ev.audio_ms, end=_END_REASONS.get(ev.end), ts=ev.ts
            )
        )
    )
    return replace(state, hearing=None, decoding=state.decoding | {ev.utterance})


def _close_utterance(state: DeviceState, utterance: str) -> DeviceState | None:
    if utterance == state.hearing:
        return replace(state, hearing=None)
    if utterance in state.decoding:
        return replace(state, decoding=state.decoding - {utterance})
    return None


def on_transcribed(state: DeviceState, ev: Transcribed, out: list[Action], rules: Rules) -> DeviceState:
    closed = _close_utterance(state, ev.utterance)
    if closed is None:
        out.append(
            Note("info", f"Transcript of closed utterance {ev.utterance} dropped (device fell asleep first)")
        )
        return state
    body = TranscriptBody(
        utterance=ev.utterance,
        text=ev.text,
        confidence=ev.confidence,
        language=ev.language,
        source="voice",
        audio_ms=ev.audio_ms,
        decode_ms=ev.decode_ms,
        ts=ev.ts,
    )
    out.append(Publish(body, closes=Record("utterances", ev.utterance)))
    return _start_thinking(closed, ev.ts, out, rules)


def failed(utterance: str, reason: FailureReason, detail: str, ts: float) -> Publish:
    body = UtteranceFailedBody(utterance=utterance, reason=reason, detail=detail, ts=ts)
    return Publish(body, closes=Record("utterances", utterance))


def on_utterance_failed(
    state: DeviceState, ev: UtteranceFailed, out: list[Action], rules: Rules
) -> DeviceState:
    closed = _close_utterance(state, ev.utterance)
    if closed is None:
        return state
    out.append(failed(ev.utterance, _FAILURE_REASONS[ev.reason], ev.detail, ev.ts))
    return closed


def on_booted(state: DeviceState, ev: Booted, out: list[Action], rules: Rules) -> DeviceState:
    """What the previous boot left open (killed mid-utterance or mid-reply) ends as interrupted."""
    for utterance in ev.open_utterances:
        out.append(Note("warning", f"Utterance {utterance} was open when the device stopped: closing it"))
        out.append(failed(utterance, "interrupted", "the device restarted", ev.ts))
    for say in ev.open_replies:
        out.append(Note("warning", f"Reply {say} was not finished when the device stopped: closing it"))
        body = PlaybackFinishedBody(say=say, interrupted=True, ts=ev.ts)
        out.append(Publish(body, closes=Record("replies", say)))
    return state


_FAILURE_REASONS: dict[HearingFailure, FailureReason] = {
    "no_speech": "no_speech",
    "too_short": "too_short",
    "too_long": "too_long",
    "stt_error": "stt_error",
    "interrupted": "interrupted",
}
"""The listener's reasons → the contract's ``utterance_failed.reason`` (one name each, so far)."""

_END_REASONS: dict[EndReason | None, SpeechEnd] = {
    "turn_complete": "turn_complete",
    "silence": "silence",
    "max_length": "max_length",
}
"""The endpointer's reasons → the contract's ``speech_ended.end`` (absent when the listener gave none)."""
