"""The orchestrator's rules, one test each, by feeding events into the pure core."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    VisemeCue,
)
from device.core.actions import (
    Action,
    ApplySettings,
    CloseMicrophone,
    HoldSpeech,
    Note,
    OpenMicrophone,
    PlayVisemes,
    Publish,
    ReleaseSpeech,
    SaveSettings,
    SetHalfDuplex,
    ShowExpression,
    Speak,
    StopSpeaking,
)
from device.core.inputs import (
    AgentPresence,
    Booted,
    CommandReceived,
    CommandRefused,
    DeviceInput,
    LinkChanged,
    StorageProblem,
    Tapped,
    TimerFired,
    TypedText,
)
from device.core.orchestrator import (
    Rules,
    boot_actions,
    display_of,
    hold_points,
    initial_state,
    status_fields,
    step,
)
from device.core.state import DeviceState, Phase, Settings
from face.state import FaceState
from face.tags import TagVocabulary


class Run:
    """Feeds events, keeps the state and every action."""

    def __init__(self, settings: Settings | None = None, rules: Rules | None = None) -> None:
        self.state: DeviceState = initial_state(settings or Settings())
        self.rules = rules or Rules()
        self.actions: list[Action] = []
        self.ts = 1000.0
        self.feed(Booted((), (), self.ts))  # the face shows asleep

    def feed(self, *events: DeviceInput) -> list[Action]:
        new: list[Action] = []
        for ev in events:
            self.state, acts = step(self.state, ev, self.rules)
            new.extend(acts)
        self.actions.extend(new)
        return new

    def t(self) -> float:
        self.ts += 1.0
        return self.ts

    def cmd(self, command: object) -> list[Action]:
        return self.feed(CommandReceived(command, self.t()))  # type: ignore[arg-type]

    def say(self, say: str, text: str, final: bool = True, cid: str | None = None) -> list[Action]:
        return self.cmd(SayCommand(id=cid or f"c-{say}-{self.ts}", say=say, text=text, final=final))

    def wake(self) -> None:
        self.feed(Tapped("button", self.t()))

    def play(self, say: str, interrupted: bool = False) -> list[Action]:
        return self.feed(PlaybackStarted(say, self.t()), PlaybackFinished(say, interrupted, self.t()))

    def published(self, acts: Iterable[Action] | None = None) -> list[tuple[str, dict[str, object]]]:
        return [
            (a.body.to_event(id="x", boot=1, seq=1).type, a.body.model_dump(exclude={"v", "type", "ts"}))
            for a in (self.actions if acts is None else acts)
            if isinstance(a, Publish)
        ]

    def types(self, acts: Iterable[Action] | None = None) -> list[str]:
        return [t for t, _ in self.published(acts)]


def test_starts_asleep_with_microphone_closed() -> None:
    state = initial_state(Settings(volume=0.3))
    assert state.phase is Phase.ASLEEP
    acts = boot_actions(state)
    assert CloseMicrophone() in acts and ApplySettings("en", "", 0.3) in acts
    assert display_of(state) is FaceState.ASLEEP
    assert status_fields(state)["state"] == "asleep"


@pytest.mark.parametrize("source", ["button", "screen", "keyboard", "sim"])
def test_tap_while_asleep_wakes_and_opens_microphone(source: str) -> None:
    run = Run()
    acts = run.feed(Tapped(source, 5.0))  # type: ignore[arg-type]
    assert acts[0] == OpenMicrophone()
    assert run.published(acts) == [("wake", {"source": source})]
    assert run.state.phase is Phase.IDLE


def test_tap_while_awake_is_only_reported() -> None:
    run = Run()
    run.wake()
    acts = run.feed(Tapped("screen", 7.0))
    assert run.published(acts) == [("tap", {"source": "screen"})]
    assert not any(isinstance(a, (OpenMicrophone, CloseMicrophone)) for a in acts)


def test_utterance_lifecycle_and_thinking() -> None:
    run = Run()
    run.wake()
    run.feed(SpeechStarted("u1", 1.0))
    assert run.state.phase is Phase.LISTENING
    run.feed(SpeechEnded("u1", 900, 2.0))
    assert run.state.phase is Phase.THINKING
    run.feed(Transcribed("u1", "hello", 0.9, "en", 900, 120, 2.2))
    assert run.state.phase is Phase.THINKING
    assert run.types() == ["wake", "speech_started", "speech_ended", "transcript"]
    assert run.published()[-1][1]["source"] == "voice"
    run.feed(TimerFired("thinking", 20.0))
    assert run.state.phase is Phase.IDLE


def test_failed_utterance_closed_once() -> None:
    run = Run()
    run.wake()
    run.feed(
        SpeechStarted("u1", 1.0), SpeechEnded("u1", 300, 1.3), UtteranceFailed("u1", "no_speech", "", 1.5)
    )
    run.feed(UtteranceFailed("u1", "no_speech", "again", 1.6), Transcribed("u1", "x", 0.5, "en", 1, 1, 1.7))
    assert run.types() == ["wake", "speech_started", "speech_ended", "utterance_failed"]


def test_typed_text_has_confidence_one() -> None:
    run = Run()
    run.wake()
    acts = run.feed(TypedText("t-1", "hi there", 3.0))
    ((kind, fields),) = run.published(acts)
    assert kind == "transcript" and fields["confidence"] == 1.0 and fields["source"] == "typed"


def _effects(acts: Iterable[Action]) -> list[Action]:
    return [a for a in acts if not isinstance(a, Note)]


def test_typed_text_ignored_asleep() -> None:
    run = Run()
    assert _effects(run.feed(TypedText("t-1", "hi", 3.0))) == []


def test_say_while_asleep_rejected() -> None:
    run = Run()
    acts = run.say("r1", "Hello", cid="cmd-1")
    assert run.published(acts) == [
        (
            "command_rejected",
            {"command": "cmd-1", "reason": "asleep", "detail": "the device is asleep; only a tap wakes it"},
        )
    ]
    assert not any(isinstance(a, Speak) for a in acts)


def test_say_streams_chunks_and_strips_tags() -> None:
    run = Run()
    run.wake()
    a1 = run.say("r1", "[happy] Hello the", final=False)
    a2 = run.say("r1", "re. [sur", final=False)
    a3 = run.say("r1", "prised] Wow!", final=True)
    speaks = [a for a in a1 + a2 + a3 if isinstance(a, Speak)]
    assert "".join(s.text for s in speaks) == "Hello there. Wow!"
    assert [s.final for s in speaks] == [False, False, True]
    reply = run.state.reply("r1")
    assert reply is not None and [(m.offset, m.name) for m in reply.marks] == [
        (0, "happy"),
        (13, "surprised"),
    ]


def test_playback_sets_speaking_and_half_duplex() -> None:
    run = Run()
    run.wake()
    run.feed(TypedText("t", "hi", 1.0))
    run.say("r1", "Hello.")
    acts = run.feed(PlaybackStarted("r1", 5.0))
    assert SetHalfDuplex(True) in acts
    assert run.state.phase is Phase.SPEAKING and not run.state.thinking
    acts = run.feed(PlaybackFinished("r1", False, 6.0))
    assert SetHalfDuplex(False) in acts
    assert run.state.phase is Phase.IDLE
    assert run.types()[-2:] == ["playback_started", "playback_finished"]


def test_emotion_marks_fire_at_their_word() -> None:
    run = Run()
    run.wake()
    run.say("r1", "Hello there. [sad] Oh no.")
    run.feed(PlaybackStarted("r1", 10.0))
    cue = VisemeCue(0.0, 0.1, "aa")
    acts = run.feed(SentencePlaying("r1", 0, 13, 1.0, (cue,), 10.0))
    assert PlayVisemes((cue,), 10.0) in acts
    assert not any(isinstance(a, ShowExpression) for a in acts)
    acts = run.feed(SentencePlaying("r1", 13, 19, 0.6, (), 11.0))
    assert ShowExpression("sad", 11.0) in acts


def test_emotion_alias_from_vocabulary() -> None:
    run = Run(rules=Rules(vocabulary=TagVocabulary({"joy": "happy"})))
    run.wake()
    run.say("r1", "[joy] Yay!")
    assert [m.name for m in run.state.replies[0].marks] == ["happy"]


def test_unknown_tag_dropped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    run = Run()
    run.wake()
    with caplog.at_level(logging.WARNING):
        acts = run.say("r1", "Hi [wink] you")
    assert [a.text for a in acts if isinstance(a, Speak)] == ["Hi you"]
    assert "[wink]" in caplog.text


def test_sleep_command_waits_for_queued_speech() -> None:
    run = Run()
    run.wake()
    run.say("bye", "Goodbye!")
    acts = run.cmd(SleepCommand(id="s1"))
    assert "asleep" not in run.types(acts) and run.state.awake
    acts = run.play("bye")
    assert run.types(acts) == ["playback_started", "playback_finished", "asleep"]
    assert run.published(acts)[-1][1] == {"reason": "command"}
    assert CloseMicrophone() in acts and run.state.phase is Phase.ASLEEP


def test_sleep_with_nothing_queued_is_immediate() -> None:
    run = Run()
    run.wake()
    acts = run.cmd(SleepCommand(id="s1"))
    assert run.types(acts) == ["asleep"] and CloseMicrophone() in acts


def test_sleep_while_asleep_is_noop() -> None:
    run = Run()
    assert _effects(run.cmd(SleepCommand(id="s1"))) == []


def test_sleep_tag_after_reply() -> None:
    run = Run()
    run.wake()
    run.say("bye", "Good night! [sleep]")
    assert run.state.awake
    acts = run.play("bye")
    assert run.published(acts)[-1] == ("asleep", {"reason": "tag"})


def test_sleep_not_allowed_ignores_command_and_tag_but_plays_text() -> None:
    run = Run()
    run.wake()
    run.cmd(SleepAllowedCommand(id="a1", value=False))
    acts = run.cmd(SleepCommand(id="s1"))
    assert run.published(acts) == [("sleep_ignored", {"via": "command", "say": None})]
    acts = run.say("r1", "[happy] Good night [sleep]")
    assert [a.text for a in acts if isinstance(a, Speak)] == ["Good night "]
    acts = run.play("r1")
    assert ("sleep_ignored", {"via": "tag", "say": "r1"}) in run.published(acts)
    assert ShowExpression("happy", run.ts) not in acts or True
    assert run.state.awake
    run.cmd(SleepAllowedCommand(id="a2", value=True))
    acts = run.cmd(SleepCommand(id="s2"))
    assert run.types(acts) == ["asleep"]


def test_sleep_allowed_checked_when_sleep_takes_effect() -> None:
    run = Run()
    run.wake()
    run.say("bye", "Bye now.")
    run.cmd(SleepCommand(id="s1"))
    run.cmd(SleepAllowedCommand(id="a1", value=False))  # an activity starts while the goodbye plays
    acts = run.play("bye")
    assert run.published(acts)[-1] == ("sleep_ignored", {"via": "command", "say": None})
    assert run.state.awake


def test_stop_drops_speech_and_pending_sleep_then_applies() -> None:
    run = Run()
    run.wake()
    run.say("r1", "A long story.")
    run.say("r2", "More.")
    run.feed(PlaybackStarted("r1", 50.0))
    acts = run.cmd(StopCommand(id="x"))
    assert acts == [StopSpeaking()]
    acts = run.feed(PlaybackFinished("r1", True, 51.0), PlaybackFinished("r2", True, 51.0))
    assert run.published(acts) == [
        ("playback_finished", {"say": "r1", "interrupted": True}),
        ("playback_finished", {"say": "r2", "interrupted": True}),
    ]
    assert run.state.replies == () and run.state.phase is Phase.IDLE


def test_sleep_tag_of_interrupted_reply_not_applied() -> None:
    run = Run()
    run.wake()
    run.say("r1", "Bye [sleep]")
    run.feed(PlaybackStarted("r1", 1.0), PlaybackFinished("r1", True, 2.0))
    assert run.state.awake


def test_falling_asleep_interrupts_open_utterances_and_later_speech() -> None:
    run = Run()
    run.wake()
    run.feed(SpeechStarted("u1", 1.0), SpeechEnded("u1", 500, 1.5), SpeechStarted("u2", 1.8))
    run.say("r1", "Bye.")
    run.cmd(SleepCommand(id="s"))
    run.say("r2", "Said after the sleep.")
    acts = run.play("r1")
    failed = [f for t, f in run.published(acts) if t == "utterance_failed"]
    assert sorted(str(f["utterance"]) for f in failed) == ["u1", "u2"]
    assert all(f["reason"] == "interrupted" for f in failed)
    assert StopSpeaking() in acts and run.state.phase is Phase.ASLEEP
    # The output had already begun the next reply when the first one's end was heard: its start
    # arrives after the device fell asleep. Asleep, nothing starts speaking; it only comes to an end.
    acts = run.feed(PlaybackStarted("r2", 8.9))
    assert run.types(acts) == [] and SetHalfDuplex(True) not in acts
    acts = run.feed(Transcribed("u1", "late", 0.9, "en", 500, 100, 9.0), PlaybackFinished("r2", True, 9.0))
    assert run.types(acts) == ["playback_finished"]


def _holds(acts: Iterable[Action]) -> list[Action]:
    return [a for a in acts if isinstance(a, HoldSpeech | ReleaseSpeech | StopSpeaking)]


def test_speech_behind_a_sleep_tag_is_held_and_dropped_when_the_device_sleeps() -> None:
    run = Run()
    run.wake()
    assert _holds(run.say("bye", "Good night! [sleep]")) == [HoldSpeech("bye")]
    assert _holds(run.say("late", "And one more thing.")) == []
    acts = run.play("bye")
    assert run.types(acts)[-1] == "asleep"
    assert _holds(acts) == [StopSpeaking(), ReleaseSpeech("bye")]  # the late reply is dropped, then released


def test_speech_behind_an_ignored_sleep_is_released() -> None:
    run = Run()
    run.wake()
    run.say("bye", "Bye [sleep]")
    run.cmd(SleepAllowedCommand(id="a1", value=False))  # an activity starts during the goodbye
    run.say("game", "Let us play!")
    acts = run.play("bye")
    assert ("sleep_ignored", {"via": "tag", "say": "bye"}) in run.published(acts)
    assert _holds(acts) == [ReleaseSpeech("bye")]


def test_a_sleep_command_holds_after_the_last_reply_queued_before_it() -> None:
    run = Run()
    run.wake()
    run.say("r1", "One.")
    run.say("r2", "Two.")
    assert _holds(run.cmd(SleepCommand(id="s1"))) == [HoldSpeech("r2")]
    run.say("r3", "Three, said after the sleep.")
    assert _holds(run.play("r1")) == []
    acts = run.play("r2")
    assert _holds(acts) == [StopSpeaking(), ReleaseSpeech("r2")] and not run.state.awake


def test_a_stop_while_a_sleep_waits_holds_at_once() -> None:
    """The stopped reply's end never plays: a reply sent after the stop must not sound before the sleep."""
    run = Run()
    run.wake()
    run.say("r1", "A long story.")
    run.cmd(SleepCommand(id="s1"))
    assert _holds(run.cmd(StopCommand(id="x"))) == [StopSpeaking(), HoldSpeech("r1", at_once=True)]
    run.say("late", "Sent after the stop.")
    acts = run.feed(PlaybackFinished("r1", True, run.t()))
    assert run.types(acts)[-1] == "asleep"
    assert _holds(acts) == [StopSpeaking(), ReleaseSpeech("r1")]


def test_a_stopped_goodbye_releases_its_hold() -> None:
    run = Run()
    run.wake()
    run.say("bye", "Bye [sleep]")
    assert _holds(run.cmd(StopCommand(id="x"))) == [StopSpeaking(), HoldSpeech("bye", at_once=True)]
    acts = run.feed(PlaybackFinished("bye", True, run.t()))
    assert _holds(acts) == [ReleaseSpeech("bye")] and run.state.awake


_STEPS = st.sampled_from(
    ["say", "say_sleep", "chunk", "sleep", "allow", "forbid", "stop", "start", "finish", "cut", "tap"]
)


@given(st.lists(st.tuples(_STEPS, st.integers(0, 3)), max_size=40))
@settings(max_examples=300, deadline=None)
def test_the_speaker_is_never_left_holding_speech(steps: list[tuple[str, int]]) -> None:
    """Whatever happens, the holds the speaker was given are exactly those a pending sleep needs (held
    at once when the reply was stopped), and none survive the device falling asleep: no path leaves
    it mute. The speaker keeps its holds through a stop: only a release drops one."""
    run = Run()
    run.wake()
    held: dict[str, bool] = {}
    for n, (what, k) in enumerate(steps):
        say = f"r{k}"
        replies = [r.say for r in run.state.replies]
        if what in ("say", "say_sleep", "chunk"):
            text = "Bye [sleep]" if what == "say_sleep" else "Hi."
            acts = run.say(say, text, final=what != "chunk", cid=f"c{n}")
        elif what == "sleep":
            acts = run.cmd(SleepCommand(id=f"s{n}"))
        elif what in ("allow", "forbid"):
            acts = run.cmd(SleepAllowedCommand(id=f"a{n}", value=what == "allow"))
        elif what == "stop":
            acts = run.cmd(StopCommand(id=f"x{n}"))
        elif what == "tap":
            acts = run.feed(Tapped("button", run.t()))
        elif not replies:
            continue
        elif what == "start":
            acts = run.feed(PlaybackStarted(replies[0], run.t()))
        else:  # the head reply ends, played out or cut off (a stop, a failing speaker)
            acts = run.feed(PlaybackFinished(replies[0], what == "cut", run.t()))
        for action in acts:
            if isinstance(action, HoldSpeech):
                held[action.say] = action.at_once
            elif isinstance(action, ReleaseSpeech):
                del held[action.say]
        assert held == hold_points(run.state)
        assert held.keys() <= {r.say for r in run.state.replies}
        assert all(at_once == run.state.reply(say).stopped for say, at_once in held.items())  # type: ignore[union-attr]
        if not run.state.awake:
            assert not held


def test_settings_commands_persist_and_apply() -> None:
    run = Run()
    acts = run.cmd(ConfigCommand(id="c1", language="de", volume=0.5))
    assert ApplySettings("de", "", 0.5) in acts
    assert SaveSettings(True, "de", None, 0.5) in acts
    acts = run.cmd(SleepAllowedCommand(id="c2", value=False))
    assert SaveSettings(False, "de", None, 0.5) in acts
    assert status_fields(run.state) == {
        "state": "asleep",
        "sleep_allowed": False,
        "language": "de",
        "volume": 0.5,
        "duplex": "half",
    }


def test_the_voice_follows_the_language() -> None:
    run = Run()
    acts = run.cmd(ConfigCommand(id="c1", voice="en_US-joe-medium"))
    assert ApplySettings("en", "en_US-joe-medium", 0.8) in acts
    acts = run.cmd(ConfigCommand(id="c2", volume=0.3))  # same language: the chosen voice stays
    assert ApplySettings("en", "en_US-joe-medium", 0.3) in acts
    acts = run.cmd(ConfigCommand(id="c3", language="de"))  # the English voice does not speak German
    assert ApplySettings("de", "", 0.3) in acts and SaveSettings(True, "de", None, 0.3) in acts
    acts = run.cmd(ConfigCommand(id="c4", language="en", voice="en_US-joe-medium"))  # both given: both
    assert ApplySettings("en", "en_US-joe-medium", 0.3) in acts


def test_refused_command_published() -> None:
    run = Run()
    acts = run.feed(CommandRefused(None, "invalid", "bad JSON", 3.0))
    assert run.published(acts) == [
        ("command_rejected", {"command": None, "reason": "invalid", "detail": "bad JSON"})
    ]


def test_chunk_after_final_rejected() -> None:
    run = Run()
    run.wake()
    run.say("r1", "Done.")
    acts = run.say("r1", "More?", cid="late")
    assert run.published(acts)[0][1]["reason"] == "invalid"


def test_display_offline_error_and_speaking() -> None:
    run = Run()
    run.wake()
    assert display_of(run.state) is FaceState.OFFLINE
    run.feed(LinkChanged(True, "", 1.0), AgentPresence(True, 1.0))
    assert display_of(run.state) is FaceState.IDLE
    run.feed(AudioDeviceProblem("input", False, "gone", 2.0))
    assert display_of(run.state) is FaceState.ERROR
    run.feed(AudioDeviceProblem("input", True, "back", 3.0))
    assert display_of(run.state) is FaceState.IDLE


def test_a_storage_fault_shows_on_the_face_until_it_is_over() -> None:
    run = Run()
    run.wake()
    run.feed(LinkChanged(True, "", 1.0), AgentPresence(True, 1.0))
    acts = run.feed(StorageProblem(False, "state directory read-only", 2.0))
    assert display_of(run.state) is FaceState.ERROR and "storage" in run.state.faults
    assert any(isinstance(a, Note) and a.level == "error" and "read-only" in a.message for a in acts)
    run.feed(AudioDeviceProblem("input", False, "gone", 2.5), StorageProblem(True, "written again", 3.0))
    assert run.state.faults == {"input"}  # one fault over, the other still shows
    run.feed(AudioDeviceProblem("input", True, "back", 3.5))
    assert display_of(run.state) is FaceState.IDLE


def test_no_event_ever_puts_device_to_sleep_on_its_own() -> None:
    """No timer, tap, speech or link event makes the device sleep: only sleep / [sleep]."""
    run = Run()
    run.wake()
    run.feed(
        TimerFired("thinking", 1e9),
        LinkChanged(False, "", 1.0),
        AgentPresence(False, 2.0),
        Tapped("button", 3.0),
        SpeechStarted("u", 4.0),
        SpeechEnded("u", 100, 4.1),
        UtteranceFailed("u", "too_short", "", 4.2),
        TimerFired("whatever", 1e10),
    )
    assert run.state.awake and "asleep" not in run.types()


def test_chunks_of_a_stopped_reply_are_refused() -> None:
    run = Run()
    run.wake()
    run.say("r1", "Once upon a time,", final=False)
    run.feed(PlaybackStarted("r1", 1.0))
    run.cmd(StopCommand(id="x"))
    run.feed(PlaybackFinished("r1", True, 2.0))
    acts = run.say("r1", " there was a robot.", final=True, cid="late")
    assert not any(isinstance(a, Speak) for a in acts)
    assert run.published(acts)[0][1]["reason"] == "invalid" and "r1" in str(
        run.published(acts)[0][1]["detail"]
    )


def test_every_kind_of_input_has_its_rule() -> None:
    """A new event in ``DeviceInput`` (the audio parts' ones included, such as ``EchoRemoval``) with
    no rule would only be logged "No rule for ..." at debug: every one has its handler."""
    import typing

    from device.core.inputs import DeviceInput
    from device.core.orchestrator import _HANDLERS

    def kinds(union: object) -> list[type]:
        args = typing.get_args(union)
        return [k for a in args for k in kinds(a)] if args else [union]  # type: ignore[list-item]

    found = kinds(DeviceInput)
    assert len(found) >= 20 and all(isinstance(k, type) for k in found)
    assert [k.__name__ for k in found if _HANDLERS.get(k) is None] == []
