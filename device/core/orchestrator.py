"""The orchestrator core: ``step(state, event) -> (state, actions)``. Pure: no I/O, no clock.

Every rule of protocol v1 that the device keeps lives here: wake only by a tap, sleep only when the
agent asks (command or ``[sleep]`` tag) and only after the speech queued before the request, the
``sleep_allowed`` veto checked when a sleep would take effect, say-while-asleep rejected, every
utterance closed exactly once, emotion marks shown at their word.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from agent_link.protocol.messages import (
    ConfigCommand,
    SayCommand,
    SleepAllowedCommand,
    SleepCommand,
    StopCommand,
)
from audio.events import (
    AudioDeviceProblem,
    PlaybackFinished,
    PlaybackStarted,
    SentencePlaying,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from device.core.actions import (
    Action,
    ApplySettings,
    CancelTimer,
    CloseMicrophone,
    HoldSpeech,
    OpenMicrophone,
    PlayVisemes,
    Publish,
    ReleaseSpeech,
    SaveSettings,
    ScheduleTimer,
    SetHalfDuplex,
    ShowExpression,
    Speak,
    StopSpeaking,
)
from device.core.inputs import (
    AgentPresence,
    CommandReceived,
    CommandRefused,
    DeviceInput,
    LinkChanged,
    Tapped,
    TimerFired,
    TypedText,
)
from device.core.state import DeviceState, PendingSleep, Phase, Reply, Settings
from face.state import FaceState
from face.tags import TagVocabulary, parse_chunk

_LOGGER = logging.getLogger(__name__)

THINKING_TIMER = "thinking"
ENDED_MEMORY = 64
"""How many ended reply ids are remembered to refuse late chunks."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Configuration of the rules (not state): timeouts and the tag vocabulary."""

    thinking_timeout_s: float = 15.0
    """How long the face shows ``thinking`` after a transcript when no reply starts, in seconds."""
    vocabulary: TagVocabulary = field(default_factory=TagVocabulary)


def initial_state(settings: Settings) -> DeviceState:
    """The state at boot: asleep, with the persisted settings."""
    return DeviceState(phase=Phase.ASLEEP, settings=settings)


def boot_actions(state: DeviceState) -> list[Action]:
    """What the shell does once at start: microphone closed, settings applied."""
    s = state.settings
    return [CloseMicrophone(), ApplySettings(s.language, s.voice, s.volume)]


def step(state: DeviceState, event: DeviceInput, rules: Rules = Rules()) -> tuple[DeviceState, list[Action]]:
    """Apply one event; return the new state and the actions to perform, in order."""
    actions: list[Action] = []
    handler = _HANDLERS.get(type(event))
    if handler is None:
        _LOGGER.debug("No rule for %r", event)
        return state, actions
    new = handler(state, event, actions, rules)
    if new.awake:
        new = replace(new, phase=_awake_phase(new))
    before, after = hold_points(state), hold_points(new)
    if StopSpeaking() in actions:
        before = frozenset()  # a stop clears the speaker's holds: those still needed are set again
    actions.extend(HoldSpeech(say) for say in sorted(after - before))
    actions.extend(ReleaseSpeech(say) for say in sorted(before - after))
    return new, actions


# ---- derived views ---------------------------------------------------------------------------------
def _awake_phase(state: DeviceState) -> Phase:
    if any(r.playing for r in state.replies):
        return Phase.SPEAKING
    if state.hearing is not None:
        return Phase.LISTENING
    if state.thinking or state.decoding:
        return Phase.THINKING
    return Phase.IDLE


def hold_points(state: DeviceState) -> frozenset[str]:
    """Replies at whose end a sleep waits: the speaker starts nothing queued after them meanwhile.

    A reply with a ``[sleep]`` tag, and for a pending ``sleep`` command the last reply queued
    before it. Derived from the state, so every way a sleep resolves (asleep, ``sleep_ignored``,
    the reply stopped) releases its hold: the device cannot be left mute.
    """
    if not state.awake:
        return frozenset()
    order = [r.say for r in state.replies]
    points = {r.say for r in state.replies if r.sleep_tag}
    for pending in state.sleeps:
        waited = [order.index(say) for say in pending.after if say in order]
        if waited:
            points.add(order[max(waited)])
    return frozenset(points)


def display_of(state: DeviceState) -> FaceState:
    """What the face shows for this state."""
    if not state.awake:
        return FaceState.ASLEEP
    if state.phase is Phase.SPEAKING:
        return FaceState.SPEAKING
    if state.faults:
        return FaceState.ERROR
    if not (state.connected and state.agent_online):
        return FaceState.OFFLINE
    return FaceState(state.phase.value)


def status_fields(state: DeviceState) -> dict[str, Any]:
    """The state-dependent fields of the retained status message."""
    s = state.settings
    return {
        "state": state.phase.value,
        "sleep_allowed": s.sleep_allowed,
        "language": s.language,
        "volume": s.volume,
    }


# ---- taps and typed text ---------------------------------------------------------------------------
def _on_tap(state: DeviceState, ev: Tapped, out: list[Action], rules: Rules) -> DeviceState:
    if state.awake:
        out.append(Publish("tap", {"source": ev.source}, ev.ts))
        return state
    out.append(OpenMicrophone())
    out.append(Publish("wake", {"source": ev.source}, ev.ts))
    return replace(state, phase=Phase.IDLE, thinking=False)


def _on_typed(state: DeviceState, ev: TypedText, out: list[Action], rules: Rules) -> DeviceState:
    if not state.awake:
        _LOGGER.info("Typed text ignored while asleep (a tap wakes the device)")
        return state
    fields = {
        "utterance": ev.utterance,
        "text": ev.text,
        "confidence": 1.0,
        "language": state.settings.language,
        "source": "typed",
        "audio_ms": 0,
        "decode_ms": 0,
    }
    out.append(Publish("transcript", fields, ev.ts))
    return _start_thinking(state, ev.ts, out, rules)


def _start_thinking(state: DeviceState, ts: float, out: list[Action], rules: Rules) -> DeviceState:
    if any(r.playing for r in state.replies):
        return state
    out.append(ScheduleTimer(THINKING_TIMER, ts + rules.thinking_timeout_s))
    return replace(state, thinking=True)


# ---- hearing -----------------------------------------------------------------------------------------
def _on_speech_started(state: DeviceState, ev: SpeechStarted, out: list[Action], rules: Rules) -> DeviceState:
    if not state.awake:
        _LOGGER.warning("Speech start %s while asleep ignored (microphone should be closed)", ev.utterance)
        return state
    if state.hearing is not None:
        out.append(_failed(state.hearing, "interrupted", "a new utterance started first", ev.ts))
    out.append(Publish("speech_started", {"utterance": ev.utterance}, ev.ts))
    return replace(state, hearing=ev.utterance)


def _on_speech_ended(state: DeviceState, ev: SpeechEnded, out: list[Action], rules: Rules) -> DeviceState:
    if ev.utterance != state.hearing:
        _LOGGER.debug("Speech end of closed utterance %s ignored", ev.utterance)
        return state
    ended: dict[str, object] = {"utterance": ev.utterance, "audio_ms": ev.audio_ms}
    if ev.end is not None:
        ended["end"] = ev.end
    out.append(Publish("speech_ended", ended, ev.ts))
    return replace(state, hearing=None, decoding=state.decoding | {ev.utterance})


def _close_utterance(state: DeviceState, utterance: str) -> DeviceState | None:
    if utterance == state.hearing:
        return replace(state, hearing=None)
    if utterance in state.decoding:
        return replace(state, decoding=state.decoding - {utterance})
    return None


def _on_transcribed(state: DeviceState, ev: Transcribed, out: list[Action], rules: Rules) -> DeviceState:
    closed = _close_utterance(state, ev.utterance)
    if closed is None:
        _LOGGER.info("Transcript of closed utterance %s dropped (device fell asleep first)", ev.utterance)
        return state
    fields = {
        "utterance": ev.utterance,
        "text": ev.text,
        "confidence": ev.confidence,
        "language": ev.language,
        "source": "voice",
        "audio_ms": ev.audio_ms,
        "decode_ms": ev.decode_ms,
    }
    out.append(Publish("transcript", fields, ev.ts))
    return _start_thinking(closed, ev.ts, out, rules)


def _failed(utterance: str, reason: str, detail: str, ts: float) -> Publish:
    return Publish("utterance_failed", {"utterance": utterance, "reason": reason, "detail": detail}, ts)


def _on_utterance_failed(
    state: DeviceState, ev: UtteranceFailed, out: list[Action], rules: Rules
) -> DeviceState:
    closed = _close_utterance(state, ev.utterance)
    if closed is None:
        return state
    out.append(_failed(ev.utterance, ev.reason, ev.detail, ev.ts))
    return closed


# ---- speaking --------------------------------------------------------------------------------------
def _on_playback_started(
    state: DeviceState, ev: PlaybackStarted, out: list[Action], rules: Rules
) -> DeviceState:
    reply = state.reply(ev.say)
    if reply is None:
        return state
    if not state.awake:
        # The output had begun this reply (queued behind the one whose end put the device to sleep)
        # before the stop reached it: it is being faded out and gets its interrupted finish.
        _LOGGER.info("reply %s started after the device fell asleep: not reported", ev.say)
        return state
    if not any(r.playing for r in state.replies):
        out.append(SetHalfDuplex(True))
    if state.thinking:
        out.append(CancelTimer(THINKING_TIMER))
    out.append(Publish("playback_started", {"say": ev.say}, ev.ts))
    return _put_reply(replace(state, thinking=False), replace(reply, playing=True))


def _on_sentence(state: DeviceState, ev: SentencePlaying, out: list[Action], rules: Rules) -> DeviceState:
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


def _on_playback_finished(
    state: DeviceState, ev: PlaybackFinished, out: list[Action], rules: Rules
) -> DeviceState:
    reply = state.reply(ev.say)
    if reply is None:
        return state
    if not ev.interrupted:
        out.extend(ShowExpression(m.name, ev.ts) for m in reply.marks)
    out.append(Publish("playback_finished", {"say": ev.say, "interrupted": ev.interrupted}, ev.ts))
    rest = tuple(r for r in state.replies if r.say != ev.say)
    if reply.playing and not any(r.playing for r in rest):
        out.append(SetHalfDuplex(False))
    state = replace(state, replies=rest, ended=(*state.ended, ev.say)[-ENDED_MEMORY:])
    due: list[PendingSleep] = []
    waiting: list[PendingSleep] = []
    for pending in state.sleeps:
        left = pending.after - {ev.say}
        (waiting if left else due).append(replace(pending, after=left))
    if reply.sleep_tag and not ev.interrupted:
        due.append(PendingSleep("tag", frozenset(), ev.say))
    state = replace(state, sleeps=tuple(waiting))
    for pending in due:
        if state.awake:
            state = _sleep_now(state, pending, ev.ts, out)
    return state


def _put_reply(state: DeviceState, reply: Reply) -> DeviceState:
    return replace(state, replies=tuple(reply if r.say == reply.say else r for r in state.replies))


# ---- sleep -------------------------------------------------------------------------------------------
def _sleep_now(state: DeviceState, pending: PendingSleep, ts: float, out: list[Action]) -> DeviceState:
    """A sleep request takes effect now, unless ``sleep_allowed`` is false at this moment."""
    if not state.settings.sleep_allowed:
        fields: dict[str, Any] = {"via": pending.via}
        if pending.via == "tag":
            fields["say"] = pending.say
        out.append(Publish("sleep_ignored", fields, ts))
        return state
    out.append(CloseMicrophone())
    for utterance in ([state.hearing] if state.hearing else []) + sorted(state.decoding):
        out.append(_failed(utterance, "interrupted", "the device fell asleep", ts))
    if state.replies:
        out.append(StopSpeaking())
    if state.thinking:
        out.append(CancelTimer(THINKING_TIMER))
    out.append(Publish("asleep", {"reason": pending.via}, ts))
    return replace(state, phase=Phase.ASLEEP, hearing=None, decoding=frozenset(), thinking=False, sleeps=())


# ---- commands ----------------------------------------------------------------------------------------
def _reject(command_id: str | None, reason: str, detail: str, ts: float) -> Publish:
    return Publish("command_rejected", {"command": command_id, "reason": reason, "detail": detail}, ts)


def _on_refused(state: DeviceState, ev: CommandRefused, out: list[Action], rules: Rules) -> DeviceState:
    out.append(_reject(ev.command_id, ev.reason, ev.detail, ev.ts))
    return state


def _on_command(state: DeviceState, ev: CommandReceived, out: list[Action], rules: Rules) -> DeviceState:
    cmd = ev.command
    if isinstance(cmd, SayCommand):
        return _on_say(state, cmd, ev.ts, out, rules)
    if isinstance(cmd, StopCommand):
        if state.replies:
            out.append(StopSpeaking())
        return state
    if isinstance(cmd, SleepCommand):
        if not state.awake:
            _LOGGER.info("sleep %s while asleep: nothing to do", cmd.id)
            return state
        after = frozenset(r.say for r in state.replies)
        pending = PendingSleep("command", after)
        if after:
            return replace(state, sleeps=(*state.sleeps, pending))
        return _sleep_now(state, pending, ev.ts, out)
    if isinstance(cmd, SleepAllowedCommand):
        return _with_settings(state, replace(state.settings, sleep_allowed=cmd.value), out, apply=False)
    if isinstance(cmd, ConfigCommand):
        s = state.settings
        language = cmd.language if cmd.language is not None else s.language
        # The TTS voice follows the language: a new language without a voice drops the voice chosen
        # for the old one (the language's configured voice speaks instead).
        voice = cmd.voice if cmd.voice is not None else (s.voice if language == s.language else None)
        new = Settings(
            sleep_allowed=s.sleep_allowed,
            language=language,
            voice=voice,
            volume=cmd.volume if cmd.volume is not None else s.volume,
        )
        return _with_settings(state, new, out, apply=True)
    _LOGGER.warning("Command type %s has no rule", type(cmd).__name__)
    return state


def _with_settings(state: DeviceState, settings: Settings, out: list[Action], *, apply: bool) -> DeviceState:
    if apply:
        out.append(ApplySettings(settings.language, settings.voice, settings.volume))
    out.append(SaveSettings(settings.sleep_allowed, settings.language, settings.voice, settings.volume))
    return replace(state, settings=settings)


def _on_say(state: DeviceState, cmd: SayCommand, ts: float, out: list[Action], rules: Rules) -> DeviceState:
    if not state.awake:
        out.append(_reject(cmd.id, "asleep", "the device is asleep; only a tap wakes it", ts))
        return state
    reply = state.reply(cmd.say)
    if (reply is not None and reply.final) or (reply is None and cmd.say in state.ended):
        out.append(_reject(cmd.id, "invalid", f"reply {cmd.say!r} already ended (finished or stopped)", ts))
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
        out.append(Speak(cmd.say, parsed.text, cmd.final))
    if new_reply:
        return replace(state, replies=(*state.replies, reply))
    return _put_reply(state, reply)


# ---- link, health, timers ------------------------------------------------------------------------------
def _on_link(state: DeviceState, ev: LinkChanged, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, connected=ev.connected)


def _on_agent(state: DeviceState, ev: AgentPresence, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, agent_online=ev.online)


def _on_audio_problem(
    state: DeviceState, ev: AudioDeviceProblem, out: list[Action], rules: Rules
) -> DeviceState:
    faults = state.faults - {ev.direction} if ev.ok else state.faults | {ev.direction}
    return replace(state, faults=faults)


def _on_timer(state: DeviceState, ev: TimerFired, out: list[Action], rules: Rules) -> DeviceState:
    if ev.name == THINKING_TIMER:
        return replace(state, thinking=False)
    return state


_HANDLERS: dict[type, Any] = {
    Tapped: _on_tap,
    TypedText: _on_typed,
    SpeechStarted: _on_speech_started,
    SpeechEnded: _on_speech_ended,
    Transcribed: _on_transcribed,
    UtteranceFailed: _on_utterance_failed,
    PlaybackStarted: _on_playback_started,
    SentencePlaying: _on_sentence,
    PlaybackFinished: _on_playback_finished,
    CommandReceived: _on_command,
    CommandRefused: _on_refused,
    LinkChanged: _on_link,
    AgentPresence: _on_agent,
    AudioDeviceProblem: _on_audio_problem,
    TimerFired: _on_timer,
}
