"""Control stepped ahead of a backlog of data: each rule of ``device.core.early`` on the pure core.

Each test puts a backlog into the control-first inbox and steps what it returns; the control item is
stepped first, and the outcome is the one of arrival order.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_link.protocol.messages import SayCommand, SleepAllowedCommand, SleepCommand, StopCommand
from audio.events import PlaybackFinished, PlaybackStarted
from device.core.actions import (
    Action,
    HoldSpeech,
    OpenMicrophone,
    OpenRecord,
    Publish,
    ReleaseSpeech,
    Speak,
    StopSpeaking,
)
from device.core.inputs import CommandReceived, DeviceInput, Stamped, Tapped, TypedText
from device.core.orchestrator import initial_state, step
from device.core.state import DeviceState, Phase, Settings
from device.shell.inbox import Inbox


class Device:
    """A core fed through the inbox."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.state: DeviceState = initial_state(settings or Settings())
        self.ts = 100.0
        self.order: list[DeviceInput] = []
        """The inputs of the last backlog in the order they were stepped."""

    def t(self) -> float:
        self.ts += 1.0
        return self.ts

    def backlog(self, *events: DeviceInput) -> list[Action]:
        """Put every event, then step until the inbox is empty."""
        inbox = Inbox()
        self.order = []
        for event in events:
            inbox.put(event)
        actions: list[Action] = []
        while not inbox.empty():
            item = inbox.get_nowait()
            assert item is not None
            if isinstance(item, Stamped):
                self.order.append(item.input)
            self.state, acts = step(self.state, item)
            actions.extend(acts)
        assert self.state.early == ()  # every record dropped at its marker
        return actions

    def say(self, say: str, text: str, final: bool = True) -> CommandReceived:
        return CommandReceived(SayCommand(id=f"c-{say}-{self.ts}", say=say, text=text, final=final), self.t())

    def cmd(self, command: StopCommand | SleepCommand | SleepAllowedCommand) -> CommandReceived:
        return CommandReceived(command, self.t())

    def awake(self) -> None:
        self.backlog(Tapped("button", self.t()))


def _published(actions: Iterable[Action]) -> list[tuple[str, dict[str, object]]]:
    return [
        (a.body.to_event(id="x", boot=1, seq=1).type, a.body.model_dump(exclude={"v", "type", "ts"}))
        for a in actions
        if isinstance(a, Publish)
    ]


def _types(actions: Iterable[Action]) -> list[str]:
    return [t for t, _ in _published(actions)]


# ---- stop ----------------------------------------------------------------------------------------------
def test_a_reply_sent_before_a_stop_is_ended_unspoken_with_its_interrupted_finish() -> None:
    device = Device()
    device.awake()
    stop = device.cmd(StopCommand(id="x"))
    acts = device.backlog(device.say("r1", "Once upon", final=False), device.say("r1", "a time."), stop)
    assert device.order[0] == stop  # the stop went ahead of the chunks
    assert not any(isinstance(a, Speak | OpenRecord) for a in acts)  # never reached the speaker
    assert _published(acts) == [("playback_finished", {"say": "r1", "interrupted": True})]
    assert device.state.replies == () and "r1" in device.state.ended
    # The agent goes on with it after the stop: refused, as once a reply's end was reported.
    assert _types(device.backlog(device.say("r1", "The end."))) == ["command_rejected"]


def test_a_chunk_after_the_final_one_of_a_reply_a_stop_ended_is_refused_as_in_arrival_order() -> None:
    device = Device()
    device.awake()
    acts = device.backlog(
        device.say("r1", "Done."), device.say("r1", "More?"), device.cmd(StopCommand(id="x"))
    )
    assert _published(acts)[0] == ("playback_finished", {"say": "r1", "interrupted": True})
    assert _published(acts)[1][0] == "command_rejected" and _published(acts)[1][1]["reason"] == "invalid"


def test_chunks_of_a_reply_seen_before_the_stop_are_not_spoken() -> None:
    device = Device()
    device.awake()
    device.backlog(device.say("r0", "A long story", final=False), PlaybackStarted("r0", device.t()))
    acts = device.backlog(device.say("r0", "goes on."), device.cmd(StopCommand(id="x")))
    assert acts[0] == StopSpeaking() and not any(isinstance(a, Speak) for a in acts)
    acts = device.backlog(PlaybackFinished("r0", True, device.t()))
    assert _published(acts) == [("playback_finished", {"say": "r0", "interrupted": True})]


# ---- sleep ---------------------------------------------------------------------------------------------
def test_speech_sent_before_a_sleep_is_waited_for_and_the_hold_moves_to_it() -> None:
    device = Device()
    device.awake()
    device.backlog(device.say("r0", "One."), PlaybackStarted("r0", device.t()))
    acts = device.backlog(
        device.say("r1", "Two."), device.cmd(SleepCommand(id="s")), device.say("r2", "Three.")
    )
    holds = [a for a in acts if isinstance(a, HoldSpeech | ReleaseSpeech)]
    assert holds == [HoldSpeech("r0"), HoldSpeech("r1"), ReleaseSpeech("r0")]  # r2 waits behind r1
    assert device.state.awake and device.state.sleeps[0].after == {"r0", "r1"}
    device.backlog(PlaybackFinished("r0", False, device.t()), PlaybackStarted("r1", device.t()))
    assert device.state.awake
    acts = device.backlog(PlaybackFinished("r1", False, device.t()))
    assert _types(acts)[-1] == "asleep" and StopSpeaking() in acts  # r2, sent after the sleep, is dropped


def test_a_sleep_with_nothing_queued_waits_for_the_data_that_arrived_before_it() -> None:
    device = Device()
    device.awake()
    acts = device.backlog(TypedText("u1", "one more thing", device.t()), device.cmd(SleepCommand(id="s")))
    assert _types(acts) == ["transcript", "asleep"]
    assert device.state.phase is Phase.ASLEEP


def test_a_sleep_with_nothing_queued_waits_for_a_reply_sent_before_it() -> None:
    device = Device()
    device.awake()
    acts = device.backlog(device.say("bye", "Good night."), device.cmd(SleepCommand(id="s")))
    assert Speak("bye", "Good night.", True) in acts and device.state.awake
    acts = device.backlog(PlaybackStarted("bye", device.t()), PlaybackFinished("bye", False, device.t()))
    assert _types(acts) == ["playback_started", "playback_finished", "asleep"]


# ---- tap ------------------------------------------------------------------------------------------------
def test_data_sent_before_a_waking_tap_is_judged_asleep() -> None:
    device = Device()
    acts = device.backlog(
        device.say("r1", "Hello?"), TypedText("u1", "hi", device.t()), Tapped("button", device.t())
    )
    assert acts[0] == OpenMicrophone()  # the tap went first
    assert _published(acts)[0] == ("wake", {"source": "button"})
    assert _published(acts)[1][0] == "command_rejected" and _published(acts)[1][1]["reason"] == "asleep"
    assert len(_published(acts)) == 2  # the typed text was not transcribed
    assert device.state.awake and device.state.replies == ()
    assert _types(device.backlog(device.say("r2", "Hi!"))) == []  # now awake: accepted


def test_a_tap_while_a_goodbye_ends_in_the_backlog_wakes_the_device_again() -> None:
    device = Device()
    device.awake()
    device.backlog(device.say("bye", "Bye [sleep]"), PlaybackStarted("bye", device.t()))
    acts = device.backlog(PlaybackFinished("bye", False, device.t()), Tapped("screen", device.t()))
    assert _types(acts) == ["playback_finished", "asleep", "wake"]
    assert device.state.awake


def test_a_tap_on_an_awake_device_with_no_sleep_coming_is_reported_at_once() -> None:
    device = Device()
    device.awake()
    acts = device.backlog(TypedText("u1", "hi", device.t()), Tapped("screen", device.t()))
    assert _types(acts) == ["tap", "transcript"]


# ---- sleep_allowed --------------------------------------------------------------------------------------
def test_a_sleep_taking_effect_on_data_sent_before_sleep_allowed_uses_the_value_before_it() -> None:
    device = Device()
    device.awake()
    device.backlog(device.say("bye", "Bye [sleep]"), PlaybackStarted("bye", device.t()))
    forbid = device.cmd(SleepAllowedCommand(id="a", value=False))
    acts = device.backlog(PlaybackFinished("bye", False, device.t()), forbid)
    assert device.order[0] == forbid
    assert _types(acts) == ["playback_finished", "asleep"]  # the goodbye ended while sleep was allowed
    assert device.state.settings.sleep_allowed is False


def test_a_sleep_vetoed_before_sleep_allowed_true_stays_ignored() -> None:
    device = Device(Settings(sleep_allowed=False))
    device.awake()
    device.backlog(device.say("bye", "Bye [sleep]"), PlaybackStarted("bye", device.t()))
    acts = device.backlog(
        PlaybackFinished("bye", False, device.t()), device.cmd(SleepAllowedCommand(id="a", value=True))
    )
    assert _published(acts)[-1] == ("sleep_ignored", {"via": "tag", "say": "bye"})
    assert device.state.awake and device.state.settings.sleep_allowed is True
