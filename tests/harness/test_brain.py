"""The stand-in companion's mode logic, without MQTT."""

from __future__ import annotations

from agent_link.harness.brain import (
    GREETING,
    UNHEARD,
    AgentAction,
    AllowSleep,
    CompanionBrain,
    Mode,
    Reply,
    Sleep,
)
from agent_link.harness.companion_settings import CompanionSettings
from tests.harness.events import EventFactory


def replies(actions: list[AgentAction]) -> list[str]:
    return [a.text for a in actions if isinstance(a, Reply)]


def sent(actions: list[AgentAction]) -> list[AgentAction]:
    return [a for a in actions if isinstance(a, Reply | Sleep | AllowSleep)]


def awake_brain(settings: CompanionSettings | None = None) -> tuple[CompanionBrain, EventFactory]:
    brain = CompanionBrain(settings=settings or CompanionSettings())
    ev = EventFactory()
    assert replies(brain.handle(ev("wake", source="sim"), 0.0)) == [GREETING]
    return brain, ev


def test_greets_on_wake_then_reacts_and_offers_once() -> None:
    brain, ev = awake_brain()
    answer = replies(brain.handle(ev.transcript("I'm doing well, thanks."), 1.0))
    assert len(answer) == 1
    assert "good to hear" in answer[0] and "memory game" in answer[0]
    later = replies(brain.handle(ev.transcript("The weather is nice today."), 2.0))
    assert "memory game" not in later[0] and "?" not in later[0]
    assert brain.mode is Mode.FREE


def test_sad_answer_gets_sympathy() -> None:
    brain, ev = awake_brain()
    assert "sorry" in replies(brain.handle(ev.transcript("Not great, I'm tired."), 1.0))[0]


def test_no_to_the_offer_goes_to_sleep_but_chat_keeps_awake() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("Fine thanks."), 1.0)
    keep = brain.handle(ev.transcript("No thanks, let's just chat."), 2.0)
    assert brain.mode is Mode.FREE and not any("[sleep]" in r for r in replies(keep))
    brain2, ev2 = awake_brain()
    brain2.handle(ev2.transcript("Fine thanks."), 1.0)
    bye = replies(brain2.handle(ev2.transcript("No."), 2.0))
    assert bye and bye[0].endswith("[sleep]") and brain2.mode is Mode.CLOSING


def test_goodbye_uses_tag_or_command() -> None:
    brain, ev = awake_brain()
    actions = sent(brain.handle(ev.transcript("Good night."), 1.0))
    assert actions == [Reply("[happy] Good night! Tap me when you want to talk again. [sleep]")]
    brain, ev = awake_brain(CompanionSettings(sleep_by_command=True))
    actions = sent(brain.handle(ev.transcript("Go to sleep."), 1.0))
    assert isinstance(actions[0], Reply) and "[sleep]" not in actions[0].text
    assert actions[1] == Sleep()


def test_activity_starts_with_sleep_forbidden_and_goodbye_inside_asks() -> None:
    brain, ev = awake_brain()
    actions = sent(brain.handle(ev.transcript("Let's do the memory game."), 1.0))
    assert actions[0] == AllowSleep(False)
    assert "apple" in replies(actions)[0]
    assert brain.mode is Mode.ACTIVITY
    ask = replies(brain.handle(ev.transcript("Good night."), 2.0))
    assert "Shall we stop the memory game?" in ask[0] and "[sleep]" not in ask[0]
    assert brain.mode is Mode.ASK_STOP
    carry = replies(brain.handle(ev.transcript("No, let's carry on."), 3.0))
    assert "apple" in carry[0] and brain.mode is Mode.ACTIVITY


def test_memory_game_runs_to_its_end_and_allows_sleep_again() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("memory game please"), 1.0)
    first = replies(brain.handle(ev.transcript("Apple, river, chair."), 2.0))
    assert "3 of 3" in first[0] and "dog" in first[0]
    end = sent(brain.handle(ev.transcript("Dog, candle."), 3.0))
    assert end[0] == AllowSleep(True)
    assert "end of the memory game" in replies(end)[0]
    assert brain.mode is Mode.FREE and brain.activity is None
    bye = replies(brain.handle(ev.transcript("No thanks."), 4.0))
    assert bye[0].endswith("[sleep]")


def test_clear_stop_leaves_and_yes_to_question_leaves() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("story time"), 1.0)
    out = sent(brain.handle(ev.transcript("I want to stop."), 2.0))
    assert out[0] == AllowSleep(True) and brain.mode is Mode.FREE
    brain.handle(ev.transcript("stretching"), 3.0)
    brain.handle(ev.transcript("I'm tired."), 4.0)
    assert brain.mode is Mode.ASK_STOP
    out = sent(brain.handle(ev.transcript("Yes."), 5.0))
    assert out[0] == AllowSleep(True) and brain.mode is Mode.FREE


def test_poorly_heard_never_changes_mode() -> None:
    brain, ev = awake_brain()
    assert replies(brain.handle(ev.transcript("good night", confidence=0.2), 1.0)) == [UNHEARD]
    assert brain.mode is Mode.FREE
    assert replies(brain.handle(ev.transcript("memory game", confidence=0.3), 2.0)) == [UNHEARD]
    assert brain.mode is Mode.FREE and brain.activity is None
    brain.handle(ev.transcript("memory game", confidence=0.95), 3.0)
    asked = replies(brain.handle(ev.transcript("stop", confidence=0.2), 4.0))
    assert "Shall we stop" in asked[0] and brain.mode is Mode.ASK_STOP
    again = replies(brain.handle(ev.transcript("yes", confidence=0.1), 5.0))
    assert "Shall we stop" in again[0] and brain.mode is Mode.ASK_STOP
    # Confidence exactly 0 means "no signal", not doubt.
    sent_actions = sent(brain.handle(ev.transcript("yes", confidence=0.0), 6.0))
    assert sent_actions[0] == AllowSleep(True)


def test_poorly_heard_answers_that_commit_to_nothing_are_handled_as_usual() -> None:
    brain, ev = awake_brain()
    offer = replies(brain.handle(ev.transcript("what can we do?", confidence=0.2), 1.0))
    assert "memory game" in offer[0] and brain.mode is Mode.FREE
    naming = replies(brain.handle(ev.transcript("can we do the memory game?", confidence=0.2), 1.5))
    assert naming == [UNHEARD] and brain.activity is None  # a list request naming one commits
    # A poorly heard "no" to the offer would end the talk: she asks again, and the offer stands.
    assert replies(brain.handle(ev.transcript("no", confidence=0.2), 2.0)) == [UNHEARD]
    assert brain.mode is Mode.FREE
    assert replies(brain.handle(ev.transcript("no", confidence=0.9), 3.0))[0].endswith("[sleep]")
    assert brain.mode is Mode.CLOSING
    brain, ev = awake_brain()
    brain.handle(ev.transcript("memory game", confidence=0.95), 1.0)
    # An ordinary activity answer heard poorly goes on; the one that would finish it does not.
    first = replies(brain.handle(ev.transcript("apple river chair", confidence=0.3), 2.0))
    assert "Next round" in first[0] and brain.mode is Mode.ACTIVITY
    assert replies(brain.handle(ev.transcript("dog candle green", confidence=0.3), 3.0)) == [UNHEARD]
    assert brain.mode is Mode.ACTIVITY
    last = sent(brain.handle(ev.transcript("dog candle green", confidence=0.9), 4.0))
    assert AllowSleep(True) in last and brain.mode is Mode.FREE


def test_silence_sleeps_only_in_free_conversation_and_not_while_speaking() -> None:
    brain, ev = awake_brain(CompanionSettings(sleep_after_silence_s=45))
    assert brain.tick(44.0) == []
    brain.handle(ev("playback_started", say="r1"), 10.0)
    assert brain.tick(100.0) == []
    brain.handle(ev("playback_finished", say="r1", interrupted=False), 100.0)
    assert brain.tick(144.0) == []
    assert Sleep() in brain.tick(145.5)
    assert brain.mode is Mode.CLOSING
    assert brain.tick(300.0) == []
    brain.handle(ev("asleep", reason="command"), 301.0)
    assert brain.mode is Mode.ASLEEP


def test_no_silence_sleep_inside_activity_or_when_off() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("stretching"), 1.0)
    assert brain.tick(1000.0) == []
    off, _ = awake_brain(CompanionSettings(sleep_after_silence_s=0))
    assert off.tick(1e6) == []


def test_sleep_ignored_while_closing_returns_to_free() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("bye"), 1.0)
    assert brain.mode is Mode.CLOSING
    brain.handle(ev("sleep_ignored", via="tag", say="r1"), 2.0)
    assert brain.mode is Mode.FREE


def test_wake_after_restart_mid_activity_resumes_it() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("memory game"), 1.0)
    brain.handle(ev("asleep", reason="command"), 2.0)
    back = replies(brain.handle(ev("wake", source="sim"), 3.0))
    assert "carry on with the memory game" in back[0] and brain.mode is Mode.ACTIVITY


def test_list_request_offers_and_yes_asks_which() -> None:
    brain, ev = awake_brain()
    offer = replies(brain.handle(ev.transcript("What can we do together?"), 1.0))
    assert "memory game" in offer[0] and "story time" in offer[0] and "stretching" in offer[0]
    which = replies(brain.handle(ev.transcript("Yes please."), 2.0))
    assert "Which" in which[0] and brain.mode is Mode.FREE


def test_a_shorter_name_asks_do_you_mean_and_a_yes_starts_it() -> None:
    brain, ev = awake_brain()
    asked = replies(brain.handle(ev.transcript("Can we do some memory stuff?"), 1.0))
    assert asked == ["[thinking] Do you mean the memory game?"]
    assert brain.mode is Mode.ASK_START and brain.activity is None
    started = sent(brain.handle(ev.transcript("Yes please."), 2.0))
    assert started[0] == AllowSleep(False) and brain.mode is Mode.ACTIVITY
    assert brain.activity is not None and brain.activity.title == "memory game"
    # the title itself starts at once; a word that only contains a name does not count
    brain, ev = awake_brain()
    assert AllowSleep(False) in sent(brain.handle(ev.transcript("Let's do story time."), 1.0))
    brain, ev = awake_brain()
    brain.handle(ev.transcript("Fine, thanks."), 1.0)
    chat = replies(brain.handle(ev.transcript("I read about history today."), 2.0))
    assert brain.mode is Mode.FREE and "Do you mean" not in chat[0]


def test_anything_but_a_yes_closes_the_do_you_mean_question() -> None:
    brain, ev = awake_brain()
    brain.handle(ev.transcript("a bit of stretch maybe"), 1.0)
    assert brain.mode is Mode.ASK_START
    # heard poorly, a yes would start it: she asks again and the question stands
    assert replies(brain.handle(ev.transcript("yes", confidence=0.2), 2.0)) == [UNHEARD]
    assert brain.mode is Mode.ASK_START
    declined = replies(brain.handle(ev.transcript("No."), 3.0))
    assert "won't start" in declined[0] and brain.mode is Mode.FREE and brain.activity is None
    # another activity named is a fresh choice: its title starts it, a shorter name asks about it
    brain.handle(ev.transcript("stretch"), 4.0)
    fresh = replies(brain.handle(ev.transcript("No, the story."), 5.0))
    assert fresh == ["[thinking] Do you mean the story time?"] and brain.mode is Mode.ASK_START
    assert AllowSleep(False) in sent(brain.handle(ev.transcript("No, the memory game."), 6.0))
    assert brain.activity is not None and brain.activity.title == "memory game"
    # something else is free conversation again
    brain, ev = awake_brain()
    brain.handle(ev.transcript("Fine, thanks."), 0.5)
    brain.handle(ev.transcript("memory"), 1.0)
    chat = replies(brain.handle(ev.transcript("The weather is lovely."), 2.0))
    assert brain.mode is Mode.FREE and brain.activity is None and "weather" in chat[0]
    # a goodbye (even after a no) is a goodbye
    brain.handle(ev.transcript("stretch"), 3.0)
    bye = replies(brain.handle(ev.transcript("No, good night."), 4.0))
    assert bye[0].endswith("[sleep]") and brain.mode is Mode.CLOSING
