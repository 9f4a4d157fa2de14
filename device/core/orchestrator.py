"""The orchestrator core: ``step(state, event) -> (state, actions)``. Pure: no I/O, no clock, no log.

Every rule of protocol v1 that the device keeps lives in ``device.core``: ``step`` hands each event to
its rule (the dispatch below), then derives from the new state the phase, the speaker's holds and duck,
the face's wake-up animation and notice (``device.core.derived``). What the shell should log about a
decision comes back as a ``Note`` action. Control that the shell's inbox stepped ahead of data
(``Stamped``, ``Reached``) leaves the outcomes of arrival order: data is judged by what was in force
when it arrived (``device.core.early``).

The rules live in ``device.core.rules``, a module each for hearing, speaking, sleep and wake, the
agent's commands and the status (its docstring has the map).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from audio.events import (
    AudioDeviceProblem,
    BargeInSuspected,
    DuplexChanged,
    EchoRemoval,
    PlaybackFinished,
    PlaybackStarted,
    SentencePlaying,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from device.core.actions import Action, CloseMicrophone, Note
from device.core.derived import (
    display_of,
    duck_changes,
    duck_hold,
    early_duck_end,
    face_changes,
    hold_changes,
    hold_points,
    status_fields,
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
from device.core.rules import ENDED_MEMORY, THINKING_TIMER, Rules
from device.core.rules.commands import apply_settings, on_command, on_refused, voice_for
from device.core.rules.hearing import (
    on_barge_in_suspected,
    on_booted,
    on_speech_ended,
    on_speech_started,
    on_transcribed,
    on_typed,
    on_utterance_failed,
)
from device.core.rules.sleep_wake import on_reached, on_tap
from device.core.rules.speaking import on_playback_finished, on_playback_started, on_sentence
from device.core.rules.status import (
    on_agent,
    on_audio_problem,
    on_duplex,
    on_echo_removal,
    on_link,
    on_storage,
    on_timer,
)
from device.core.state import DeviceState, Phase, Settings

__all__ = [
    "ENDED_MEMORY",
    "THINKING_TIMER",
    "Rules",
    "boot_actions",
    "display_of",
    "hold_points",
    "initial_state",
    "status_fields",
    "step",
    "voice_for",
]


def initial_state(settings: Settings) -> DeviceState:
    """The state at boot: asleep, with the persisted settings."""
    return DeviceState(phase=Phase.ASLEEP, settings=settings)


def boot_actions(state: DeviceState, rules: Rules = Rules()) -> list[Action]:
    """What the shell does once its parts are up: microphone closed, settings applied."""
    return [CloseMicrophone(), *apply_settings(state.settings, rules)]


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
    new = early_duck_end(new, actions)
    new = duck_hold(state, new, event.ts, rules.duck_hold_s, actions)
    actions.extend(duck_changes(state, new, rules.duck_depth(new.echo_removed_db)))
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
_HANDLERS.add(Booted, on_booted)
_HANDLERS.add(Tapped, on_tap)
_HANDLERS.add(TypedText, on_typed)
_HANDLERS.add(SpeechStarted, on_speech_started)
_HANDLERS.add(BargeInSuspected, on_barge_in_suspected)
_HANDLERS.add(SpeechEnded, on_speech_ended)
_HANDLERS.add(Transcribed, on_transcribed)
_HANDLERS.add(UtteranceFailed, on_utterance_failed)
_HANDLERS.add(PlaybackStarted, on_playback_started)
_HANDLERS.add(SentencePlaying, on_sentence)
_HANDLERS.add(PlaybackFinished, on_playback_finished)
_HANDLERS.add(CommandReceived, on_command)
_HANDLERS.add(CommandRefused, on_refused)
_HANDLERS.add(LinkChanged, on_link)
_HANDLERS.add(AgentPresence, on_agent)
_HANDLERS.add(AudioDeviceProblem, on_audio_problem)
_HANDLERS.add(DuplexChanged, on_duplex)
_HANDLERS.add(EchoRemoval, on_echo_removal)
_HANDLERS.add(StorageProblem, on_storage)
_HANDLERS.add(TimerFired, on_timer)
_HANDLERS.add(Reached, on_reached)


def _handle(state: DeviceState, event: DeviceInput, out: list[Action], rules: Rules) -> DeviceState:
    handler = _HANDLERS.get(type(event))
    if handler is None:
        out.append(Note("debug", f"No rule for {event!r}"))
        return state
    return handler(state, event, out, rules)
