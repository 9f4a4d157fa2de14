"""The core's full-duplex rules (barge-in, ducking, status duplex), by synthetic event sequences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent_link.protocol.messages import StatusMessage, StopCommand
from audio.events import (
    BargeInSuspected,
    DuplexChanged,
    EchoRemoval,
    PlaybackFinished,
    PlaybackStarted,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from device.core.actions import (
    Action,
    CancelTimer,
    DuckSpeech,
    Note,
    Notice,
    Publish,
    ScheduleTimer,
    ShowFace,
    StopSpeaking,
    UnduckSpeech,
)
from device.core.derived import DUCK_HOLD_TIMER, EARLY_DUCK_TIMER, WAKING_TIMER, duck_hold
from device.core.inputs import TimerFired
from device.core.orchestrator import Rules, display_of, status_fields
from device.core.state import Phase
from face.state import FaceState
from tests.device.test_orchestrator import Run


def ducking(acts: Sequence[Action]) -> list[Action]:
    return [a for a in acts if isinstance(a, DuckSpeech | UnduckSpeech)]


STRONG_DB = 45.0
"""What WebRTC's canceller removes in the simulated room once converged (``bench duplex``: 40-65 dB)."""


def speaking(run: Run, say: str = "r1", removed_db: float | None = STRONG_DB) -> None:
    """Awake, reply ``say`` playing; the canceller measured to remove ``removed_db`` (None: not yet)."""
    if removed_db is not None:
        run.feed(EchoRemoval(removed_db, run.t()))
    run.wake()
    run.feed(TimerFired(WAKING_TIMER, run.t()))  # the wake-up animation is over
    run.say(say, "A long activity instruction. " * 10)
    run.feed(PlaybackStarted(say, run.t()))


def test_a_barge_in_is_reported_over_playback_and_ducks_the_reply_until_the_user_stops() -> None:
    run = Run(rules=Rules(duck_db=-12.0))
    speaking(run)
    acts = run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    assert run.published(acts)[0] == ("speech_started", {"utterance": "u1", "over_playback": True})
    assert ducking(acts) == [DuckSpeech(-12.0)]
    assert any(isinstance(a, Note) and "Barge-in" in a.message for a in acts)
    assert Notice() in acts and ShowFace(FaceState.LISTENING) in acts  # the face listens
    assert display_of(run.state) is FaceState.LISTENING and run.state.phase.value == "speaking"
    assert not any(isinstance(a, StopSpeaking) for a in acts)  # the device never stops it itself
    ended = run.t()
    acts = run.feed(SpeechEnded("u1", 900, ended, end="turn_complete"))
    # Still ducked for the hold (the user may go on after a pause, the agent needs a moment).
    assert ducking(acts) == [] and ScheduleTimer(DUCK_HOLD_TIMER, ended + 1.0) in acts
    acts = run.feed(Transcribed("u1", "Actually, stop.", 0.8, "en", 900, 120, run.t()))
    assert ducking(acts) == [] and not any(isinstance(a, StopSpeaking) for a in acts)
    assert run.types(acts) == ["transcript"]
    acts = run.feed(TimerFired(DUCK_HOLD_TIMER, run.t()))
    assert ducking(acts) == [UnduckSpeech()]
    assert ShowFace(FaceState.SPEAKING) in acts  # the reply goes on, at full volume
    assert run.state.reply("r1") is not None  # still playing: stopping is the agent's decision
    acts = run.cmd(StopCommand(id="s1"))
    assert StopSpeaking() in acts


def test_the_duck_holds_over_a_sentence_cut_in_two_and_ends_with_the_reply() -> None:
    """ "Actually," -- the end-of-turn model closes the utterance at the comma -- "stop.": the
    second barge-in comes within the hold, so the reply is not lifted in between."""
    run = Run(rules=Rules(duck_db=-12.0, duck_hold_s=1.0))
    speaking(run)
    assert ducking(run.feed(SpeechStarted("u1", run.t(), over_playback=True))) == [DuckSpeech(-12.0)]
    assert ducking(run.feed(SpeechEnded("u1", 500, run.t(), end="turn_complete"))) == []
    acts = run.feed(SpeechStarted("u2", run.t(), over_playback=True))
    assert ducking(acts) == [] and CancelTimer(DUCK_HOLD_TIMER) in acts
    assert ducking(run.feed(SpeechEnded("u2", 400, run.t(), end="turn_complete"))) == []
    # The hold's timer of the first utterance fires late: the second one's hold still runs.
    assert ducking(run.feed(Transcribed("u1", "Actually.", 0.8, "en", 500, 90, run.t()))) == []
    run.cmd(StopCommand(id="s1"))
    # The reply that was talked over ends: nothing is left to duck, the hold ends with it.
    acts = run.feed(PlaybackFinished("r1", True, run.t()))
    assert ducking(acts) == [UnduckSpeech()] and CancelTimer(DUCK_HOLD_TIMER) in acts
    assert not run.state.duck_held


def test_the_agents_next_reply_plays_at_full_volume_and_asleep_nothing_is_held() -> None:
    run = Run()
    speaking(run)
    run.say("r2", "Okay, I will stop.")
    run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    run.feed(SpeechEnded("u1", 500, run.t()))
    assert run.state.duck_held and display_of(run.state) is FaceState.LISTENING
    # r1 ends (the agent stopped it): the hold ends with it; r2, the agent's answer, is not ducked.
    assert ducking(run.feed(PlaybackFinished("r1", True, run.t()))) == [UnduckSpeech()]
    assert ducking(run.feed(PlaybackStarted("r2", run.t()))) == [] and not run.state.duck_held
    held = replace(run.state, duck_held=True)
    out: list[Action] = []
    asleep = duck_hold(held, replace(held, phase=Phase.ASLEEP), run.t(), 1.0, out)
    assert not asleep.duck_held and out == [CancelTimer(DUCK_HOLD_TIMER)]


def test_ducking_ends_however_the_barge_in_ends() -> None:
    run = Run(rules=Rules(duck_hold_s=0.0))
    speaking(run)
    run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    assert ducking(run.feed(UtteranceFailed("u1", "interrupted", "microphone lost", run.t()))) == [
        UnduckSpeech()
    ]
    run.feed(SpeechStarted("u2", run.t(), over_playback=True))
    # A new utterance that does not start over the reply ends the barge-in's ducking.
    assert ducking(run.feed(SpeechStarted("u3", run.t()))) == [UnduckSpeech()]
    run.feed(SpeechStarted("u4", run.t(), over_playback=True))
    # The reply ending while the user still speaks keeps the ducking (the next reply too).
    assert ducking(run.feed(PlaybackFinished("r1", False, run.t()))) == []
    assert ducking(run.feed(SpeechEnded("u4", 500, run.t()))) == [UnduckSpeech()]


def test_voice_over_a_reply_ducks_it_at_once_and_a_confirmed_barge_in_keeps_the_duck() -> None:
    """The early duck: the first voiced frames over a reply duck it before the barge-in is
    confirmed; nothing is published and the face does not change until ``speech_started``, whose
    duck takes over without a step back to full volume."""
    run = Run(rules=Rules(duck_db=-18.0, early_duck_release_s=0.3))
    speaking(run)
    heard = run.t()
    acts = run.feed(BargeInSuspected(heard))
    assert ducking(acts) == [DuckSpeech(-18.0)]
    assert ScheduleTimer(EARLY_DUCK_TIMER, heard + 0.3) in acts
    assert run.published(acts) == [] and not any(isinstance(a, ShowFace | Notice) for a in acts)
    assert display_of(run.state) is FaceState.SPEAKING and run.state.early_duck
    acts = run.feed(BargeInSuspected(run.t()))  # more voice before the start: the timer moves on
    assert ducking(acts) == [] and [a for a in acts if isinstance(a, ScheduleTimer)]
    acts = run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    assert ducking(acts) == [] and CancelTimer(EARLY_DUCK_TIMER) in acts
    assert Notice() in acts and ShowFace(FaceState.LISTENING) in acts
    assert not run.state.early_duck
    # The early duck's timer, had it fired late, lets go of nothing: the barge-in's duck holds.
    assert ducking(run.feed(TimerFired(EARLY_DUCK_TIMER, run.t()))) == []
    assert ducking(run.feed(SpeechEnded("u1", 700, run.t()))) == []  # the hold
    assert ducking(run.feed(TimerFired(DUCK_HOLD_TIMER, run.t()))) == [UnduckSpeech()]


def test_an_early_duck_no_barge_in_follows_is_let_go() -> None:
    """The device's own voice passed the shorter start: the reply comes back to full volume when
    the early duck's timer fires; the dip is logged at debug only."""
    run = Run()
    speaking(run)
    assert ducking(run.feed(BargeInSuspected(run.t()))) == [DuckSpeech(-18.0)]
    acts = run.feed(TimerFired(EARLY_DUCK_TIMER, run.t()))
    assert ducking(acts) == [UnduckSpeech()] and run.published(acts) == []
    assert any(isinstance(a, Note) and a.level == "debug" and "released" in a.message for a in acts)
    assert not run.state.early_duck and display_of(run.state) is FaceState.SPEAKING
    # A reply that ends meanwhile ends the early duck with it (its timer cancelled).
    run.feed(BargeInSuspected(run.t()))
    acts = run.feed(PlaybackFinished("r1", False, run.t()))
    assert ducking(acts) == [UnduckSpeech()] and CancelTimer(EARLY_DUCK_TIMER) in acts


def test_voice_with_no_reply_playing_asleep_or_during_an_utterance_ducks_nothing() -> None:
    run = Run()
    assert run.feed(BargeInSuspected(run.t())) == []  # asleep
    run.wake()
    assert ducking(run.feed(BargeInSuspected(run.t()))) == [] and not run.state.early_duck  # no reply
    speaking(run, say="r2")
    run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    run.feed(SpeechEnded("u1", 500, run.t()))
    run.feed(TimerFired(DUCK_HOLD_TIMER, run.t()))
    run.feed(SpeechStarted("u2", run.t()))  # an utterance in progress (not over the reply)
    assert ducking(run.feed(BargeInSuspected(run.t()))) == [] and not run.state.early_duck
    zero = Run(rules=Rules(duck_db=0.0))
    speaking(zero)
    assert ducking(zero.feed(BargeInSuspected(zero.t()))) == []  # 0 dB: never ducks


def test_a_duck_level_of_zero_never_ducks() -> None:
    run = Run(rules=Rules(duck_db=0.0))
    speaking(run)
    acts = run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    assert run.published(acts)[0][1]["over_playback"] is True
    assert ducking(acts + run.feed(SpeechEnded("u1", 500, run.t()))) == []


def test_a_barge_in_over_a_weak_or_unmeasured_canceller_ducks_deeper() -> None:
    """The depth is chosen when the duck starts, from the canceller's last measured removal: under
    ``weak_canceller_db`` (or not measured yet) the deeper ``duck_weak_db``; the change between weak
    and strong is logged once, a move within either is not."""
    rules = Rules(duck_db=-18.0, duck_weak_db=-30.0, weak_canceller_db=20.0, duck_hold_s=0.0)
    run = Run(rules=rules)
    speaking(run, removed_db=None)
    acts = run.feed(SpeechStarted("u1", run.t(), over_playback=True))
    assert ducking(acts) == [DuckSpeech(-30.0)]
    assert any(isinstance(a, Note) and "Barge-in" in a.message and "-30 dB" in a.message for a in acts)
    assert ducking(run.feed(SpeechEnded("u1", 500, run.t()))) == [UnduckSpeech()]
    acts = run.feed(EchoRemoval(45.0, run.t()))
    notes = [a for a in acts if isinstance(a, Note)]
    assert (
        [n.level for n in notes] == ["info"] and "45 dB" in notes[0].message and "-18 dB" in notes[0].message
    )
    assert ducking(acts) == []  # nothing ducked now: nothing changes
    assert ducking(run.feed(SpeechStarted("u2", run.t(), over_playback=True))) == [DuckSpeech(-18.0)]
    acts = run.feed(EchoRemoval(6.0, run.t()))  # the canceller weakens mid barge-in: the duck stays
    notes = [a for a in acts if isinstance(a, Note)]
    assert [n.level for n in notes] == ["warning"] and "-30 dB" in notes[0].message
    assert ducking(acts) == []
    assert ducking(run.feed(SpeechEnded("u2", 500, run.t()))) == [UnduckSpeech()]
    assert not [a for a in run.feed(EchoRemoval(9.0, run.t())) if isinstance(a, Note)]  # still weak
    assert ducking(run.feed(SpeechStarted("u3", run.t(), over_playback=True))) == [DuckSpeech(-30.0)]
    assert run.state.echo_removed_db == 9.0


def test_the_weak_depth_is_the_deeper_of_the_two_and_zero_still_never_ducks() -> None:
    assert Rules(duck_db=-40.0, duck_weak_db=-30.0).duck_depth(6.0) == -40.0
    assert Rules(duck_db=-18.0, duck_weak_db=-30.0).duck_depth(6.0) == -30.0
    assert Rules(duck_db=-18.0, duck_weak_db=-30.0).duck_depth(30.0) == -18.0  # at the threshold: strong
    assert Rules(duck_db=0.0, duck_weak_db=-30.0).duck_depth(None) == 0.0
    assert Rules(weak_canceller_db=0.0).weak_canceller(0.0) is False  # 0 = never weak once measured
    run = Run(rules=Rules(duck_db=0.0))
    speaking(run, removed_db=6.0)
    assert ducking(run.feed(SpeechStarted("u1", run.t(), over_playback=True))) == []


def test_the_status_says_the_duplex_mode_and_why_it_is_half() -> None:
    run = Run()
    assert status_fields(run.state)["duplex"] == "half"
    assert "duplex_reason" not in status_fields(run.state)  # echo cancellation off: nothing said
    run.feed(DuplexChanged("half", "the echo canceller is converging", run.t()))
    assert status_fields(run.state)["duplex_reason"] == "the echo canceller is converging"
    acts = run.feed(DuplexChanged("full", "", run.t()))
    fields = status_fields(run.state)
    assert fields["duplex"] == "full" and "duplex_reason" not in fields
    assert any(isinstance(a, Note) and a.level == "info" for a in acts)
    acts = run.feed(DuplexChanged("half", "the speaker's reference stopped", run.t()))
    assert status_fields(run.state)["duplex"] == "half"
    # A fall back from full is a warning in the log, with its reason; no event to the agent.
    notes = [a for a in acts if isinstance(a, Note)]
    assert notes and notes[0].level == "warning" and "reference stopped" in notes[0].message
    assert not any(isinstance(a, Publish) for a in acts)
    status = StatusMessage(online=True, boot=1, **status_fields(run.state))
    assert status.to_json()["duplex_reason"] == "the speaker's reference stopped"
