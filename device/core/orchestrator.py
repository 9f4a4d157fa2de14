"""The orchestrator core: ``step(state, event) -> (state, actions)``. Pure: no I/O, no clock, no log.

Every rule of protocol v1 that the device keeps lives here: wake only by a tap, sleep only when the
agent asks (command or ``[sleep]`` tag) and only after the speech queued before the request, the
``sleep_allowed`` veto checked when a sleep would take effect, say-while-asleep rejected, chunks of an
ended or stopped reply refused, every utterance closed exactly once (also across a restart), emotion
marks shown at their word, the voice following the language, the face's wake-up animation and notice.
What the shell should log about a decision comes back as a ``Note`` action. Control that the shell's
inbox stepped ahead of data (``Stamped``, ``Reached``) leaves the outcomes of arrival order: data is
judged by what was in force when it arrived (``device.core.early``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from agent_link.protocol.event_messages import (
    AsleepBody,
    CommandRejectedBody,
    PlaybackFinishedBody,
    PlaybackStartedBody,
    SleepIgnoredBody,
    SpeechEndedBody,
    SpeechStartedBody,
    TapBody,
    TranscriptBody,
    UtteranceFailedBody,
    WakeBody,
)
from agent_link.protocol.message_base import FailureReason, RejectReason, SpeechEnd, TapSource
from agent_link.protocol.messages import (
    ConfigCommand,
    SayCommand,
    SleepAllowedCommand,
    SleepCommand,
    StopCommand,
)
from audio.events import (
    AudioDeviceProblem,
    DuplexChanged,
    EndReason,
    HearingFailure,
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
    Note,
    OpenMicrophone,
    OpenRecord,
    PlayVisemes,
    Publish,
    Record,
    SaveSettings,
    ScheduleTimer,
    SetHalfDuplex,
    ShowExpression,
    Speak,
    StopSpeaking,
)
from device.core.derived import (
    DUCK_HOLD_TIMER,
    WAKING_TIMER,
    display_of,
    duck_changes,
    duck_hold,
    face_changes,
    hold_changes,
    hold_points,
    status_fields,
    wake_animation_over,
)
from device.core.early import (
    arrived_before,
    blocked,
    ended_by,
    ending_stop,
    judged_awake,
    remember,
    sleep_allowed_then,
    sleep_may_come,
    stopped_after,
    stopped_here,
    take,
    tap_waits,
    update,
)
from device.core.inputs import (
    AgentPresence,
    Booted,
    CommandReceived,
    CommandRefused,
    DeviceInput,
    LinkChanged,
    Reached,
    Stamped,
    StorageProblem,
    Tapped,
    TimerFired,
    TypedText,
)
from device.core.state import DeviceState, EarlyControl, PendingSleep, Phase, Reply, Settings
from face.tags import TagVocabulary, parse_chunk

__all__ = ["Rules", "boot_actions", "display_of", "hold_points", "initial_state", "status_fields", "step"]

THINKING_TIMER = "thinking"
ENDED_MEMORY = 64
"""How many ended reply ids are remembered to refuse late chunks."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Configuration of the rules (not state): timeouts, the tag vocabulary, the voices."""

    thinking_timeout_s: float = 15.0
    """How long the face shows ``thinking`` after a transcript when no reply starts, in seconds."""
    wake_duration_s: float = 1.2
    """How long the wake-up animation plays before the awake state shows (``face.wake_duration_s``)."""
    vocabulary: TagVocabulary = field(default_factory=TagVocabulary)
    voices: Mapping[str, str] = field(default_factory=dict)
    """Voice per language (``speaking.voices``); a language not listed is spoken by ``default_voice``."""
    default_voice: str = ""
    """``speaking.voice``: "" = the packaged voice."""
    duck_db: float = -12.0
    """Level of the replies while the user speaks over them, in dB (``hearing.duck_db``; 0 = none)."""
    duck_hold_s: float = 1.0
    """How long the replies stay ducked after the barge-in utterance ends, in seconds
    (``hearing.duck_hold_ms``; 0 = none)."""


def initial_state(settings: Settings) -> DeviceState:
    """The state at boot: asleep, with the persisted settings."""
    return DeviceState(phase=Phase.ASLEEP, settings=settings)


def boot_actions(state: DeviceState, rules: Rules = Rules()) -> list[Action]:
    """What the shell does once its parts are up: microphone closed, settings applied."""
    return [CloseMicrophone(), *_apply(state.settings, rules)]


def step(
    state: DeviceState, event: DeviceInput | Stamped, rules: Rules = Rules()
) -> tuple[DeviceState, list[Action]]:
    """Apply one event; return the new state and the actions to perform, in order.

    A ``Stamped`` event is judged by what was in force when it arrived (``device.core.early``)."""
    arrival, event = (event.arrival, event.input) if isinstance(event, Stamped) else (0, event)
    actions: list[Action] = []
    new = replace(_handle(replace(state, arrival=arrival), event, actions, rules), arrival=0)
    if new.awake:
        new = replace(new, phase=_awake_phase(new))
    actions.extend(hold_changes(state, new))
    new = duck_hold(state, new, event.ts, rules.duck_hold_s, actions)
    actions.extend(duck_changes(state, new, rules.duck_db))
    new, face = face_changes(new, event.ts, rules.wake_duration_s)
    actions.extend(face)
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


# ---- restart -----------------------------------------------------------------------------------------
def _on_booted(state: DeviceState, ev: Booted, out: list[Action], rules: Rules) -> DeviceState:
    """What the previous boot left open (killed mid-utterance or mid-reply) ends as interrupted."""
    for utterance in ev.open_utterances:
        out.append(Note("warning", f"Utterance {utterance} was open when the device stopped: closing it"))
        out.append(_failed(utterance, "interrupted", "the device restarted", ev.ts))
    for say in ev.open_replies:
        out.append(Note("warning", f"Reply {say} was not finished when the device stopped: closing it"))
        body = PlaybackFinishedBody(say=say, interrupted=True, ts=ev.ts)
        out.append(Publish(body, closes=Record("replies", say)))
    return state


# ---- taps and typed text ---------------------------------------------------------------------------
def _on_tap(state: DeviceState, ev: Tapped, out: list[Action], rules: Rules) -> DeviceState:
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


def _on_typed(state: DeviceState, ev: TypedText, out: list[Action], rules: Rules) -> DeviceState:
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


# ---- hearing -----------------------------------------------------------------------------------------
def _on_speech_started(state: DeviceState, ev: SpeechStarted, out: list[Action], rules: Rules) -> DeviceState:
    if not judged_awake(state):
        out.append(
            Note("warning", f"Speech start {ev.utterance} while asleep ignored (microphone should be closed)")
        )
        return state
    if state.hearing is not None:
        out.append(_failed(state.hearing, "interrupted", "a new utterance started first", ev.ts))
    # Recorded before the event is stored: a kill in between leaves nothing open forever.
    out.append(OpenRecord("utterances", ev.utterance))
    over = ev.over_playback
    out.append(Publish(SpeechStartedBody(utterance=ev.utterance, ts=ev.ts, over_playback=over)))
    if over:  # the face listens (``display_of``) while the reply goes on, ducked
        playing = ", ".join(r.say for r in state.replies if r.playing) or "none playing"
        out.append(Note("info", f"Barge-in: {ev.utterance} started over the reply ({playing})"))
    return replace(state, hearing=ev.utterance, barge_in=ev.utterance if over else None)


def _on_speech_ended(state: DeviceState, ev: SpeechEnded, out: list[Action], rules: Rules) -> DeviceState:
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


def _on_transcribed(state: DeviceState, ev: Transcribed, out: list[Action], rules: Rules) -> DeviceState:
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


def _failed(utterance: str, reason: FailureReason, detail: str, ts: float) -> Publish:
    body = UtteranceFailedBody(utterance=utterance, reason=reason, detail=detail, ts=ts)
    return Publish(body, closes=Record("utterances", utterance))


def _on_utterance_failed(
    state: DeviceState, ev: UtteranceFailed, out: list[Action], rules: Rules
) -> DeviceState:
    closed = _close_utterance(state, ev.utterance)
    if closed is None:
        return state
    out.append(_failed(ev.utterance, _FAILURE_REASONS[ev.reason], ev.detail, ev.ts))
    return closed


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


# ---- speaking --------------------------------------------------------------------------------------
def _on_playback_started(
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
    return _sleep_if_awake(state, due, ev.ts, out)


def _sleep_if_awake(state: DeviceState, due: list[PendingSleep], ts: float, out: list[Action]) -> DeviceState:
    for pending in due:
        if judged_awake(state):
            state = _sleep_now(state, pending, ts, out)
    return state


def _put_reply(state: DeviceState, reply: Reply) -> DeviceState:
    return replace(state, replies=tuple(reply if r.say == reply.say else r for r in state.replies))


def _stop_speaking(state: DeviceState, out: list[Action]) -> DeviceState:
    """Silence the output and drop every reply: each gets its interrupted finish from the speaker."""
    out.append(StopSpeaking())
    return replace(state, replies=tuple(replace(r, stopped=True) for r in state.replies))


# ---- sleep -------------------------------------------------------------------------------------------
def _sleep_now(state: DeviceState, pending: PendingSleep, ts: float, out: list[Action]) -> DeviceState:
    """A sleep request takes effect now, unless ``sleep_allowed`` is false at this moment."""
    if not sleep_allowed_then(state):
        say = pending.say if pending.via == "tag" else None
        out.append(Publish(SleepIgnoredBody(via=pending.via, say=say, ts=ts)))
        return state
    out.append(CloseMicrophone())
    for utterance in ([state.hearing] if state.hearing else []) + sorted(state.decoding):
        out.append(_failed(utterance, "interrupted", "the device fell asleep", ts))
    if state.replies:
        state = _stop_speaking(stopped_here(state), out)
    if state.thinking:
        out.append(CancelTimer(THINKING_TIMER))
    out.append(Publish(AsleepBody(reason=pending.via, ts=ts)))
    return replace(state, phase=Phase.ASLEEP, hearing=None, decoding=frozenset(), thinking=False, sleeps=())


# ---- commands ----------------------------------------------------------------------------------------
def _reject(command_id: str | None, reason: RejectReason, detail: str, ts: float) -> Publish:
    return Publish(CommandRejectedBody(command=command_id, reason=reason, detail=detail, ts=ts))


def _on_refused(state: DeviceState, ev: CommandRefused, out: list[Action], rules: Rules) -> DeviceState:
    out.append(Note("warning", f"Command {ev.command_id} rejected ({ev.reason}): {ev.detail}"))
    out.append(_reject(ev.command_id, ev.reason, ev.detail, ev.ts))
    return state


def _on_command(state: DeviceState, ev: CommandReceived, out: list[Action], rules: Rules) -> DeviceState:
    cmd = ev.command
    if isinstance(cmd, SayCommand):
        return _on_say(state, cmd, ev.ts, out, rules)
    if isinstance(cmd, StopCommand):
        live = frozenset(r.say for r in state.replies if not r.stopped)
        state = remember(state, EarlyControl("stop", state.arrival, ev.ts, stopped=live))
        return _stop_speaking(state, out) if state.replies else state
    if isinstance(cmd, SleepCommand):
        state = remember(state, EarlyControl("sleep", state.arrival, ev.ts))
        if not state.awake:
            out.append(Note("info", f"sleep {cmd.id} while asleep: nothing to do"))
            return state
        return _sleep_command(state, ev.ts, out, state.arrival)
    if isinstance(cmd, SleepAllowedCommand):
        before = EarlyControl(
            "sleep_allowed", state.arrival, ev.ts, sleep_allowed=state.settings.sleep_allowed
        )
        state = remember(state, before)
        return _with_settings(
            state, replace(state.settings, sleep_allowed=cmd.value), out, rules, apply=False
        )
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
        return _with_settings(state, new, out, rules, apply=True)
    out.append(Note("warning", f"Command type {type(cmd).__name__} has no rule"))
    return state


def _sleep_command(state: DeviceState, ts: float, out: list[Action], arrival: int) -> DeviceState:
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


def _on_reached(state: DeviceState, ev: Reached, out: list[Action], rules: Rules) -> DeviceState:
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
        return _sleep_command(state, control.ts, out, 0) if judged_awake(state) else state
    due: list[PendingSleep] = []
    waiting: list[PendingSleep] = []
    for pending in state.sleeps:
        if pending.not_before == control.arrival:
            pending = replace(pending, not_before=0)
        (waiting if pending.after or blocked(state, pending) else due).append(pending)
    return _sleep_if_awake(replace(state, sleeps=tuple(waiting)), due, control.ts, out)


def voice_for(settings: Settings, rules: Rules) -> str:
    """The voice that speaks: the one the agent chose, else the one configured for the language."""
    if settings.voice:
        return settings.voice
    return rules.voices.get(settings.language) or rules.default_voice


def _apply(settings: Settings, rules: Rules) -> list[Action]:
    actions: list[Action] = []
    if (
        not settings.voice
        and settings.language not in rules.voices
        and not settings.language.lower().startswith("en")
    ):
        actions.append(
            Note(
                "warning",
                f"No voice configured for language {settings.language!r} (speaking.voices): "
                "the default voice speaks it",
            )
        )
    actions.append(ApplySettings(settings.language, voice_for(settings, rules), settings.volume))
    return actions


def _with_settings(
    state: DeviceState, settings: Settings, out: list[Action], rules: Rules, *, apply: bool
) -> DeviceState:
    if apply:
        out.extend(_apply(settings, rules))
    out.append(SaveSettings(settings.sleep_allowed, settings.language, settings.voice, settings.volume))
    return replace(state, settings=settings)


def _on_say(state: DeviceState, cmd: SayCommand, ts: float, out: list[Action], rules: Rules) -> DeviceState:
    if not judged_awake(state):
        out.append(_reject(cmd.id, "asleep", "the device is asleep; only a tap wakes it", ts))
        return state
    stop = ended_by(state, cmd.say)
    if stop is not None:
        return _chunk_of_unseen(state, stop, cmd, ts, out)
    reply = state.reply(cmd.say)
    if (reply is not None and reply.final) or (reply is None and cmd.say in state.ended):
        out.append(_reject(cmd.id, "invalid", f"reply {cmd.say!r} already ended (finished or stopped)", ts))
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
        out.append(_reject(cmd.id, "invalid", f"reply {cmd.say!r} already ended (finished or stopped)", ts))
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


# ---- link, health, timers ------------------------------------------------------------------------------
def _on_link(state: DeviceState, ev: LinkChanged, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, connected=ev.connected)


def _on_agent(state: DeviceState, ev: AgentPresence, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, agent_online=ev.online)


def _on_audio_problem(
    state: DeviceState, ev: AudioDeviceProblem, out: list[Action], rules: Rules
) -> DeviceState:
    out.append(
        Note(
            "info" if ev.ok else "error",
            f"Audio {ev.direction} device {'back' if ev.ok else 'problem'}: {ev.detail}",
        )
    )
    faults = state.faults - {ev.direction} if ev.ok else state.faults | {ev.direction}
    return replace(state, faults=faults)


def _on_duplex(state: DeviceState, ev: DuplexChanged, out: list[Action], rules: Rules) -> DeviceState:
    """The listener's duplex mode (``status.duplex``); a fall back to half is logged with its reason."""
    if ev.mode == "full":
        out.append(Note("info", "Full duplex: the device hears the user over its own voice"))
    else:
        out.append(Note("warning" if state.duplex == "full" else "info", f"Half duplex: {ev.reason}"))
    return replace(state, duplex=ev.mode, duplex_reason=ev.reason if ev.mode == "half" else "")


def _on_storage(state: DeviceState, ev: StorageProblem, out: list[Action], rules: Rules) -> DeviceState:
    out.append(Note("warning" if ev.ok else "error", f"Storage {'back' if ev.ok else 'fault'}: {ev.detail}"))
    faults = state.faults - {"storage"} if ev.ok else state.faults | {"storage"}
    return replace(state, faults=faults)


def _on_timer(state: DeviceState, ev: TimerFired, out: list[Action], rules: Rules) -> DeviceState:
    if ev.name == THINKING_TIMER:
        return replace(state, thinking=False)
    if ev.name == DUCK_HOLD_TIMER:
        return replace(state, duck_held=False)
    if ev.name == WAKING_TIMER:
        state, shown = wake_animation_over(state)
        out.extend(shown)
    return state


# ---- dispatch -----------------------------------------------------------------------------------------
E = TypeVar("E")
Handler = Callable[[DeviceState, E, list[Action], Rules], DeviceState]


class _Handlers:
    """Event type → its rule, each typed for its own event."""

    def __init__(self) -> None:
        self._table: dict[type[Any], Handler[Any]] = {}

    def add(self, kind: type[E], handler: Handler[E]) -> None:
        self._table[kind] = handler

    def get(self, kind: type[Any]) -> Handler[Any] | None:
        return self._table.get(kind)


_HANDLERS = _Handlers()
_HANDLERS.add(Booted, _on_booted)
_HANDLERS.add(Tapped, _on_tap)
_HANDLERS.add(TypedText, _on_typed)
_HANDLERS.add(SpeechStarted, _on_speech_started)
_HANDLERS.add(SpeechEnded, _on_speech_ended)
_HANDLERS.add(Transcribed, _on_transcribed)
_HANDLERS.add(UtteranceFailed, _on_utterance_failed)
_HANDLERS.add(PlaybackStarted, _on_playback_started)
_HANDLERS.add(SentencePlaying, _on_sentence)
_HANDLERS.add(PlaybackFinished, _on_playback_finished)
_HANDLERS.add(CommandReceived, _on_command)
_HANDLERS.add(CommandRefused, _on_refused)
_HANDLERS.add(LinkChanged, _on_link)
_HANDLERS.add(AgentPresence, _on_agent)
_HANDLERS.add(AudioDeviceProblem, _on_audio_problem)
_HANDLERS.add(DuplexChanged, _on_duplex)
_HANDLERS.add(StorageProblem, _on_storage)
_HANDLERS.add(TimerFired, _on_timer)
_HANDLERS.add(Reached, _on_reached)


def _handle(state: DeviceState, event: DeviceInput, out: list[Action], rules: Rules) -> DeviceState:
    handler = _HANDLERS.get(type(event))
    if handler is None:
        out.append(Note("debug", f"No rule for {event!r}"))
        return state
    return handler(state, event, out, rules)
