"""Rules that used to live in the shell or the speaker, now tested on the pure core."""

from __future__ import annotations

import ast
from pathlib import Path

from agent_link.protocol.event_messages import PlaybackFinishedBody, UtteranceFailedBody
from agent_link.protocol.messages import ConfigCommand, SayCommand, StopCommand
from audio.events import PlaybackFinished, PlaybackStarted, SpeechEnded, SpeechStarted, Transcribed
from device.core.actions import (
    Action,
    ApplySettings,
    CancelTimer,
    Note,
    Notice,
    OpenRecord,
    Publish,
    Record,
    ScheduleTimer,
    ShowFace,
    Speak,
)
from device.core.derived import WAKING_TIMER
from device.core.inputs import (
    AgentPresence,
    Booted,
    CommandReceived,
    DeviceInput,
    LinkChanged,
    Tapped,
    TimerFired,
)
from device.core.orchestrator import Rules, initial_state, step
from device.core.state import DeviceState, Settings
from face.state import FaceState

CORE = Path(__file__).resolve().parents[2] / "device" / "core"


def _run(
    events: list[DeviceInput], rules: Rules = Rules(), state: DeviceState | None = None
) -> tuple[DeviceState, list[Action]]:
    state = state or initial_state(Settings())
    actions: list[Action] = []
    for event in events:
        state, acts = step(state, event, rules)
        actions.extend(acts)
    return state, actions


def _faces(actions: list[Action]) -> list[Action]:
    return [
        a
        for a in actions
        if isinstance(a, ShowFace | Notice)
        or (isinstance(a, ScheduleTimer | CancelTimer) and a.name == WAKING_TIMER)
    ]


def _online(ts: float) -> list[DeviceInput]:
    return [LinkChanged(True, "", ts), AgentPresence(True, ts)]


# ---- the face ----------------------------------------------------------------------------------------
def test_the_face_shows_asleep_at_boot_and_the_wake_animation_plays_whole() -> None:
    rules = Rules(wake_duration_s=1.6)
    state, acts = _run([Booted((), (), 1.0), *_online(1.0)], rules)
    assert _faces(acts) == [ShowFace(FaceState.ASLEEP)]
    state, acts = _run([Tapped("sim", 10.0)], rules, state)
    assert _faces(acts) == [ShowFace(FaceState.WAKING), ScheduleTimer(WAKING_TIMER, 11.6)]
    # What happens meanwhile waits for the animation's end (no cut-short animation)...
    state, acts = _run([LinkChanged(False, "gone", 10.5), LinkChanged(True, "", 10.6)], rules, state)
    assert _faces(acts) == []
    # ...which shows the latest state.
    state, acts = _run([TimerFired(WAKING_TIMER, 11.6)], rules, state)
    assert _faces(acts) == [ShowFace(FaceState.IDLE)]


def test_speech_during_the_wake_animation_gets_a_notice_and_the_animation_ends_first() -> None:
    state, _ = _run([Booted((), (), 1.0), *_online(1.0), Tapped("button", 2.0)])
    state, acts = _run([SpeechStarted("u1", 2.5)], state=state)
    assert _faces(acts) == [Notice()]
    state, acts = _run([TimerFired(WAKING_TIMER, 3.2)], state=state)
    assert _faces(acts) == [ShowFace(FaceState.LISTENING)]
    state, acts = _run([SpeechEnded("u1", 500, 4.0), SpeechStarted("u2", 5.0)], state=state)
    assert _faces(acts) == [ShowFace(FaceState.THINKING), Notice(), ShowFace(FaceState.LISTENING)]


def test_falling_asleep_during_the_wake_animation_ends_it() -> None:
    from agent_link.protocol.messages import SleepCommand

    state, _ = _run([Booted((), (), 1.0), *_online(1.0), Tapped("button", 2.0)])
    state, acts = _run([CommandReceived(SleepCommand(id="s"), 2.2)], state=state)
    assert _faces(acts) == [CancelTimer(WAKING_TIMER), ShowFace(FaceState.ASLEEP)]
    state, acts = _run([TimerFired(WAKING_TIMER, 3.2)], state=state)  # a timer already on its way
    assert _faces(acts) == []


# ---- restart clean-up ---------------------------------------------------------------------------------
def test_what_a_kill_left_open_is_closed_at_boot_and_forgotten_once_stored() -> None:
    _, acts = _run([Booted(("u-3-1",), ("r-9",), 50.0)])
    publishes = [a for a in acts if isinstance(a, Publish)]
    assert publishes == [
        Publish(
            UtteranceFailedBody(
                utterance="u-3-1", reason="interrupted", detail="the device restarted", ts=50.0
            ),
            closes=Record("utterances", "u-3-1"),
        ),
        Publish(PlaybackFinishedBody(say="r-9", interrupted=True, ts=50.0), closes=Record("replies", "r-9")),
    ]
    assert sum(isinstance(a, Note) and a.level == "warning" for a in acts) == 2


def test_an_utterance_and_a_reply_are_recorded_open_before_they_can_be_heard_of() -> None:
    state, _ = _run([Booted((), (), 1.0), Tapped("sim", 2.0)])
    state, acts = _run([SpeechStarted("u1", 3.0)], state=state)
    assert [type(a) for a in acts if isinstance(a, OpenRecord | Publish)] == [OpenRecord, Publish]
    assert acts[acts.index(OpenRecord("utterances", "u1")) + 1].body.type == "speech_started"  # type: ignore[union-attr]
    state, acts = _run(
        [SpeechEnded("u1", 400, 3.5), Transcribed("u1", "hi", 0.9, "en", 400, 50, 4.0)], state=state
    )
    assert [a.closes for a in acts if isinstance(a, Publish)] == [None, Record("utterances", "u1")]
    state, acts = _run([CommandReceived(SayCommand(id="c1", say="r1", text="Hi."), 5.0)], state=state)
    assert [a for a in acts if isinstance(a, OpenRecord | Speak)] == [
        OpenRecord("replies", "r1"),
        Speak("r1", "Hi.", True),
    ]


# ---- refusing chunks ---------------------------------------------------------------------------------
def test_chunks_of_a_stopped_reply_are_not_spoken_while_its_finish_is_on_the_way() -> None:
    state, _ = _run([Booted((), (), 1.0), Tapped("sim", 2.0)])
    say = CommandReceived(SayCommand(id="c1", say="r1", text="Once upon", final=False), 3.0)
    state, _ = _run([say, PlaybackStarted("r1", 3.1), CommandReceived(StopCommand(id="x"), 3.5)], state=state)
    more = CommandReceived(SayCommand(id="c2", say="r1", text=" a time.", final=True), 3.6)
    state, acts = _run([more], state=state)
    assert not any(isinstance(a, Speak | Publish) for a in acts)
    state, acts = _run([PlaybackFinished("r1", True, 3.7), PlaybackFinished("r1", True, 3.8)], state=state)
    assert len([a for a in acts if isinstance(a, Publish)]) == 1  # one finish per reply, whatever comes


# ---- the voice follows the language ------------------------------------------------------------------
def test_the_voice_is_the_configured_one_for_the_language_unless_the_agent_chose_one() -> None:
    rules = Rules(voices={"de": "/v/de.onnx"}, default_voice="/v/en.onnx")
    _, acts = _run([CommandReceived(ConfigCommand(id="c1", language="de"), 1.0)], rules)
    assert ApplySettings("de", "/v/de.onnx", 0.8) in acts and not any(isinstance(a, Note) for a in acts)
    _, acts = _run([CommandReceived(ConfigCommand(id="c2", language="fr"), 1.0)], rules)
    assert ApplySettings("fr", "/v/en.onnx", 0.8) in acts
    assert any(isinstance(a, Note) and "No voice configured for language 'fr'" in a.message for a in acts)
    _, acts = _run([CommandReceived(ConfigCommand(id="c3", language="de", voice="de_DE-x"), 1.0)], rules)
    assert ApplySettings("de", "de_DE-x", 0.8) in acts


# ---- shape -----------------------------------------------------------------------------------------------
def test_the_core_logs_nothing_and_reads_no_clock() -> None:
    for path in CORE.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"logging", "time", "asyncio", "datetime"}, path.name
