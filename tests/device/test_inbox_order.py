"""Control first, outcomes of arrival order: the same inputs stepped both ways publish the same.

One run puts the inputs into the control-first inbox and steps whatever it returns, at random moments
(so control overtakes a random backlog of data); the other steps the same inputs in arrival order. The
speaker is modelled from the arrival-order run and only acts once both runs have stepped everything put
so far (a speaker reports on what it was given); a stop's interrupted finishes come right after it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_link.protocol.messages import SayCommand, SleepAllowedCommand, SleepCommand, StopCommand
from audio.events import PlaybackFinished, PlaybackStarted, SpeechEnded, SpeechStarted, Transcribed
from device.core.actions import Publish
from device.core.inputs import Booted, CommandReceived, DeviceInput, Reached, Stamped, Tapped, TypedText
from device.core.orchestrator import initial_state, step
from device.core.state import DeviceState, Phase, Settings
from device.shell.inbox import Inbox

PER_REPLY = {"playback_started", "playback_finished"}
PER_UTTERANCE = {"transcript", "speech_started", "speech_ended", "utterance_failed"}


@dataclass
class Lane:
    """One way of stepping: an inbox, the core's state, what it published."""

    inbox: Inbox
    state: DeviceState = field(default_factory=lambda: initial_state(Settings()))
    published: list[tuple[str, dict[str, object]]] = field(default_factory=list)

    def step_one(self) -> None:
        item = self.inbox.get_nowait()
        assert item is not None
        self.feed(item)

    def feed(self, item: DeviceInput | Stamped | Reached) -> None:
        self.state, actions = step(self.state, item)
        for a in actions:
            if isinstance(a, Publish):
                event = a.body.to_event(id="x", boot=1, seq=1)
                self.published.append((event.type, a.body.model_dump(exclude={"v", "type", "ts"})))

    def drain(self) -> None:
        while not self.inbox.empty():
            self.step_one()

    def outcome(self) -> dict[str, object]:
        per: dict[str, list[tuple[str, dict[str, object]]]] = {}
        device: list[tuple[str, dict[str, object]]] = []
        rejected: Counter[tuple[object, object]] = Counter()
        for kind, body in self.published:
            if kind in PER_REPLY:
                per.setdefault(f"say:{body['say']}", []).append((kind, body))
            elif kind in PER_UTTERANCE:
                per.setdefault(f"utterance:{body['utterance']}", []).append((kind, body))
            elif kind == "command_rejected":
                rejected[(body["command"], body["reason"])] += 1
            else:
                device.append((kind, body))
        return {
            "per": per,
            "device": device,
            "rejected": rejected,
            "phase": self.state.phase,
            "sleep_allowed": self.state.settings.sleep_allowed,
        }


class World:
    """The agent, the user and the speaker, feeding both lanes the same inputs."""

    def __init__(self) -> None:
        self.first = Lane(Inbox())
        self.fifo = Lane(Inbox(control_first=False))
        self.ts = 1000.0
        self.n = 0
        self.generation = [0, 0, 0]
        for lane in (self.first, self.fifo):
            lane.feed(Booted((), (), self.ts))

    def put(self, event: DeviceInput) -> None:
        for lane in (self.first, self.fifo):
            lane.inbox.put(event)

    def t(self) -> float:
        self.ts += 0.1
        return self.ts

    def command(self, command: object) -> None:
        self.n += 1
        self.put(CommandReceived(command, self.t()))  # type: ignore[arg-type]

    def catch_up(self) -> None:
        self.first.drain()
        self.fifo.drain()

    def say(self, slot: int, variant: str) -> None:
        if variant == "new":
            self.generation[slot] += 1
        text = {"sleep": "Good night [sleep]", "final": "Bye."}.get(variant, "Hi there.")
        say = f"r{slot}-{self.generation[slot]}"
        self.command(SayCommand(id=f"c{self.n}", say=say, text=text, final=variant in ("sleep", "final")))

    def speaker(self, choice: int) -> None:
        """Once everything put so far is stepped, the speaker reports one thing it was given."""
        self.catch_up()
        replies = self.fifo.state.replies
        stopped = [r.say for r in replies if r.stopped]
        live = [r for r in replies if not r.stopped]
        options: list[list[DeviceInput]] = []
        if stopped:
            options.append([PlaybackFinished(say, True, self.t()) for say in stopped])
        if live and not live[0].playing:
            options.append([PlaybackStarted(live[0].say, self.t())])
        if live and live[0].playing and live[0].final:
            options.append([PlaybackFinished(live[0].say, False, self.t())])
            options.append([PlaybackFinished(live[0].say, True, self.t())])  # a failing output
        if options:
            for event in options[choice % len(options)]:
                self.put(event)

    def speech(self, parts: int) -> None:
        """Once everything put so far is stepped, an awake device hears the user: the start of an
        utterance, then (``parts``) its end and its transcript."""
        self.catch_up()
        if not self.fifo.state.awake:
            return  # the microphone is closed
        self.n += 1
        utterance = f"u{self.n}"
        events: list[DeviceInput] = [SpeechStarted(utterance, self.t())]
        if parts >= 1:
            events.append(SpeechEnded(utterance, 800, self.t()))
        if parts >= 2:
            events.append(Transcribed(utterance, "hello there", 0.9, "en", 800, 120, self.t()))
        for event in events:
            self.put(event)

    def stop(self) -> None:
        self.command(StopCommand(id=f"x{self.n}"))
        self.catch_up()
        stopped = [r.say for r in self.fifo.state.replies if r.stopped]
        for say in stopped:  # the speaker's fade-out ends at once
            self.put(PlaybackFinished(say, True, self.t()))


_OPS = st.one_of(
    st.tuples(st.just("say"), st.integers(0, 2), st.sampled_from(["mid", "mid", "final", "sleep", "new"])),
    st.tuples(st.sampled_from(["tap", "stop", "sleep", "typed"]), st.just(0), st.just("")),
    st.tuples(st.just("allow"), st.just(0), st.sampled_from(["true", "false"])),
    st.tuples(st.sampled_from(["step", "speaker", "speech"]), st.integers(0, 5), st.just("")),
)


def _play(ops: list[tuple[str, int, str]]) -> World:
    world = World()
    for what, k, variant in ops:
        if what == "say":
            world.say(k, variant)
        elif what == "tap":
            world.put(Tapped("button", world.t()))
        elif what == "typed":
            world.n += 1
            world.put(TypedText(f"u{world.n}", "hello", world.t()))
        elif what == "stop":
            world.stop()
        elif what == "sleep":
            world.command(SleepCommand(id=f"s{world.n}"))
        elif what == "allow":
            world.command(SleepAllowedCommand(id=f"a{world.n}", value=variant == "true"))
        elif what == "speech":
            world.speech(k)
        elif what == "step":
            for _ in range(k):
                if not world.first.inbox.empty():
                    world.first.step_one()
        else:
            world.speaker(k)
    world.catch_up()
    return world


_FOUND: list[list[tuple[str, int, str]]] = [  # interleavings that once told the two apart (shrunk)
    [
        ("tap", 0, ""),
        ("sleep", 0, ""),
    ],
    [
        ("tap", 0, ""),
        ("stop", 0, ""),
        ("sleep", 0, ""),
        ("allow", 0, "false"),
        ("step", 2, ""),
        ("tap", 0, ""),
        ("step", 2, ""),
        ("tap", 0, ""),
    ],
    [
        ("tap", 0, ""),
        ("sleep", 0, ""),
        ("tap", 0, ""),
        ("say", 2, "sleep"),
        ("sleep", 0, ""),
        ("tap", 0, ""),
        ("stop", 0, ""),
    ],
    [
        ("tap", 0, ""),
        ("say", 1, "new"),
        ("speaker", 0, ""),
        ("say", 1, "final"),
        ("say", 1, "final"),
        ("stop", 0, ""),
    ],
    [
        ("tap", 0, ""),
        ("say", 2, "sleep"),
        ("sleep", 0, ""),
        ("speaker", 0, ""),
        ("say", 1, "new"),
        ("speaker", 1, ""),
        ("tap", 0, ""),
        ("say", 1, "final"),
        ("say", 1, "final"),
        ("stop", 0, ""),
    ],
]


@given(st.lists(_OPS, max_size=45))
@settings(max_examples=600, deadline=None)
@example(_FOUND[0])
@example(_FOUND[1])
@example(_FOUND[2])
@example(_FOUND[3])
@example(_FOUND[4])
def test_control_first_publishes_what_arrival_order_publishes(ops: list[tuple[str, int, str]]) -> None:
    world = _play(ops)
    assert world.first.outcome() == world.fifo.outcome()
    assert world.first.state.early == () and world.first.state.arrival == 0


def test_the_interleavings_do_reorder_control_ahead_of_data() -> None:
    """The property above is not vacuous: a backlog ahead of a stop is overtaken."""
    world = _play([("tap", 0, ""), ("step", 2, ""), ("say", 0, "mid"), ("say", 1, "final"), ("stop", 0, "")])
    assert world.first.outcome() == world.fifo.outcome()
    finished = [b for t, b in world.first.published if t == "playback_finished"]
    assert finished == [{"say": "r0-0", "interrupted": True}, {"say": "r1-0", "interrupted": True}]
    assert world.first.state.phase is Phase.IDLE
