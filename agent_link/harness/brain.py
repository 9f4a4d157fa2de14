"""``CompanionBrain``: the stand-in companion's mode logic, pure (no I/O, no clock).

Feed it device events with ``handle(event, now)`` and the passing time with ``tick(now)``; it
returns agent actions (``Reply``, ``Sleep``, ``AllowSleep``, ``Note``) for a runner to send.
Modes are code: free conversation, an activity, or the "shall we stop?" question. A transcript
heard poorly (confidence below ``min_confidence``) never changes the mode, as the companion's
product note has it: a stop request or a yes to "shall we stop?" makes her ask (again) whether to
stop; a choice of activity, a goodbye (or a no that would end the talk) makes her say she did not
catch that and ask to repeat. What commits to nothing is handled as usual: "what can we do?" (or a
yes to an offer) and an ordinary activity answer, except one that would finish the activity. Free
chat heard poorly is asked again too (replying to a mumble heard as "You" helps nobody).

Starting an activity is never a guess: it starts at once only when the user's words contain its
title; a shorter name ("the memory one", "stretch") gets "Do you mean the memory game?", and a yes
starts it. Anything else closes that question: another activity named is a fresh choice, a plain
no starts nothing, the rest is free conversation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from agent_link.harness.activities import Activity, default_activities, says, words
from agent_link.harness.companion_settings import CompanionSettings

GREETING = "[happy] Hi! How are you doing today?"
UNHEARD = "[confused] Sorry, I didn't catch that. Could you say it again?"
GOODBYE = "[happy] Good night! Tap me when you want to talk again."
DISMISSED = "[happy] That's fine, I'm here when you want me. Tap me when you want to talk again."


@dataclass(frozen=True)
class Reply:
    """Say ``text`` (may contain tags) as one reply."""

    text: str


@dataclass(frozen=True)
class Sleep:
    """Send the ``sleep`` command."""


@dataclass(frozen=True)
class AllowSleep:
    """Send ``sleep_allowed`` with ``value``."""

    value: bool


@dataclass(frozen=True)
class Note:
    """A decision worth logging (``started memory game``); nothing is sent."""

    text: str


AgentAction = Reply | Sleep | AllowSleep | Note


class Mode(Enum):
    """Where the conversation is."""

    ASLEEP = "asleep"
    FREE = "free conversation"
    ACTIVITY = "activity"
    ASK_STOP = "asked to stop"
    ASK_START = "asked do you mean"
    CLOSING = "saying goodbye"


class FreeTalk(Protocol):
    """Writes a free-conversation reply (a sentence or two, no follow-up question)."""

    def reply(self, text: str, history: Sequence[tuple[str, str]]) -> str:
        """Reply to ``text``; ``history`` is (speaker, text) pairs, oldest first."""
        ...


_FREE_RULES: tuple[tuple[str, str], ...] = (
    (r"\bhow are you\b", "[happy] I'm doing well, thank you for asking."),
    (r"\b(weather|sun|sunny|rain|raining|cold|warm)\b", "[happy] The weather makes such a difference."),
    (r"\b(family|daughter|son|grandchild\w*|grandson|granddaughter)\b", "[happy] How lovely, family."),
    (r"\b(lunch|dinner|breakfast|eat|ate|food|cake|tea|coffee)\b", "[happy] That sounds tasty."),
    (r"\b(thank|thanks)\b", "[happy] You're very welcome."),
    (r"\b(who are you|your name)\b", "[happy] I'm your robot companion."),
    (r"\b(sad|lonely|tired|sick|unwell|worried)\b", "[sad] I'm sorry. I'm here with you."),
)


class RuleFreeTalk:
    """A small rule set for free conversation (used without a language model)."""

    def reply(self, text: str, history: Sequence[tuple[str, str]]) -> str:
        """A sentence about what they said, without a question."""
        lowered = text.lower()
        for pattern, answer in _FREE_RULES:
            if re.search(pattern, lowered):
                return answer
        return "[neutral] I see. Thank you for telling me."


def is_goodbye(text: str) -> bool:
    """Good night, go to sleep, bye..."""
    return says(text, "good night", "goodnight", "go to sleep", "bye", "goodbye", "see you", "sleep now")


def is_clear_stop(text: str) -> bool:
    """An unmistakable request to leave the activity."""
    if says(text, "don't stop", "do not stop", "not stop"):
        return False
    return says(text, "stop", "i want to stop", "quit", "end the game", "no more", "that's enough")


def is_want_out(text: str) -> bool:
    """Sounds like they may want out, without saying so (ask, don't leave)."""
    return is_goodbye(text) or says(text, "tired", "enough", "bored", "something else", "later")


def is_yes(text: str) -> bool:
    """A yes."""
    first = words(text)[:2]
    return bool(first) and (
        first[0] in {"yes", "yeah", "yep", "sure", "ok", "okay", "alright", "please", "definitely"}
        or " ".join(first) in {"let's stop", "all right"}
    )


def is_no(text: str) -> bool:
    """A no (a "no thanks, let's just chat" is not a no to talking)."""
    if says(text, "chat", "talk"):
        return False
    first = words(text)[:2]
    return bool(first) and (
        first[0] in {"no", "nope", "nah", "nothing"} or " ".join(first) in {"not really", "no thanks"}
    )


def is_carry_on(text: str) -> bool:
    """Keep going with the activity."""
    return is_no(text) or says(text, "carry on", "continue", "keep going", "don't stop", "go on")


def is_list_request(text: str) -> bool:
    """What can we do together?"""
    return says(text, "what can we do", "what can we play", "activities", "what else", "options")


def is_sad(text: str) -> bool:
    """A low mood in an answer to "how are you"."""
    return says(text, "sad", "tired", "bad", "not good", "not great", "not well", "lonely", "sick", "awful")


@dataclass
class CompanionBrain:
    """The companion's modes and transitions, at most one per turn."""

    settings: CompanionSettings = field(default_factory=CompanionSettings)
    free_talk: FreeTalk = field(default_factory=RuleFreeTalk)
    activities: tuple[Activity, ...] = field(default_factory=default_activities)
    mode: Mode = Mode.ASLEEP
    activity: Activity | None = None
    pending: Activity | None = None
    """The activity of an open "do you mean X?" question."""
    turn: int = 0
    questions: int = 0
    asked_how: bool = False
    offered: bool = False
    just_offered: bool = False
    speaking: bool = False
    last_activity: float = 0.0
    history: list[tuple[str, str]] = field(default_factory=list)

    # ---- inputs ------------------------------------------------------------------------------------
    def handle(self, event: Any, now: float) -> list[AgentAction]:
        """React to one device event (a ``messages.Event``); returns the actions to send."""
        self.last_activity = now
        kind = event.type
        if kind == "wake":
            return self._on_wake()
        if kind == "asleep":
            self.mode = Mode.ASLEEP
            self._reset_routine()
            return []
        if kind == "sleep_ignored" and self.mode is Mode.CLOSING:
            self.mode = Mode.FREE
            return [Note("the device ignored the sleep; staying in free conversation")]
        if kind == "playback_started":
            self.speaking = True
        elif kind == "playback_finished":
            self.speaking = False
        elif kind == "transcript":
            return self._on_transcript(event.text, float(event.confidence))
        return []

    def tick(self, now: float) -> list[AgentAction]:
        """Time passed: after ``sleep_after_silence_s`` of quiet in free conversation, sleep."""
        limit = self.settings.sleep_after_silence_s
        if self.mode is not Mode.FREE or self.speaking or limit <= 0:
            return []
        if now - self.last_activity < limit:
            return []
        self.mode = Mode.CLOSING
        return [Note(f"{limit:.0f} s of silence: sleeping without a word"), Sleep()]

    def note_sent(self, now: float) -> None:
        """The runner sent a reply at ``now`` (restarts the silence clock)."""
        self.last_activity = now

    # ---- transitions -------------------------------------------------------------------------------
    def _reset_routine(self) -> None:
        self.asked_how = False
        self.offered = False
        self.just_offered = False
        self.speaking = False
        self.pending = None
        self.history.clear()

    def _say(self, text: str) -> Reply:
        self.history.append(("agent", text))
        del self.history[:-12]
        return Reply(text)

    def _on_wake(self) -> list[AgentAction]:
        if self.activity is not None:
            self.mode = Mode.ACTIVITY
            title = self.activity.title
            return [
                self._say(
                    f"[happy] Welcome back! Let's carry on with the {title}. "
                    f"{self.activity.prompt(self.turn)}"
                )
            ]
        self.mode = Mode.FREE
        self._reset_routine()
        self.asked_how = True
        return [Note("woken: greeting"), self._say(GREETING)]

    def _poor(self, confidence: float) -> bool:
        floor = self.settings.min_confidence
        return floor > 0 and 0 < confidence < floor

    def _on_transcript(self, text: str, confidence: float) -> list[AgentAction]:
        self.history.append(("user", text))
        if self.mode in (Mode.ASLEEP, Mode.CLOSING):
            return []
        if self.mode is Mode.ACTIVITY:
            return self._in_activity(text, confidence)
        if self.mode is Mode.ASK_STOP:
            return self._asked_to_stop(text, confidence)
        if self.mode is Mode.ASK_START:
            return self._asked_to_start(text, confidence)
        return self._free(text, confidence)

    def _goodbye(self, text: str) -> list[AgentAction]:
        self.mode = Mode.CLOSING
        if self.settings.sleep_by_command:
            return [Note("going to sleep"), self._say(text), Sleep()]
        return [Note("going to sleep"), self._say(f"{text} [sleep]")]

    def _offer_text(self) -> str:
        names = [a.title for a in self.activities]
        listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
        return f"We could do the {listed}."

    def _choose(self, activity: Activity, text: str) -> list[AgentAction]:
        """Start ``activity`` if its title was said, else ask whether it is the one meant."""
        if activity.title_in(text):
            return self._start(activity)
        self.mode = Mode.ASK_START
        self.pending = activity
        return [
            Note(f"asked whether they mean {activity.title}"),
            self._say(f"[thinking] Do you mean the {activity.title}?"),
        ]

    def _asked_to_start(self, text: str, confidence: float) -> list[AgentAction]:
        """The answer to "do you mean X?": a yes starts X; anything else closes the question."""
        assert self.pending is not None
        pending = self.pending
        other = next((a for a in self.activities if a is not pending and a.named_in(text)), None)
        starts_pending = is_yes(text) or (pending.named_in(text) and not is_no(text))
        if self._poor(confidence) and (other is not None or starts_pending):
            return self._unheard(confidence)  # the question stands
        self.mode = Mode.FREE
        self.pending = None
        if other is not None:
            return self._choose(other, text)
        if starts_pending:
            return self._start(pending)
        if is_no(text) and not is_goodbye(text):
            return [Note(f"not starting {pending.title}"), self._say("[neutral] Okay, we won't start it.")]
        return self._free(text, confidence)  # a goodbye, "what can we do?", chat

    def _start(self, activity: Activity) -> list[AgentAction]:
        self.mode = Mode.ACTIVITY
        self.activity = activity
        self.turn = 0
        self.questions = 0
        return [Note(f"started {activity.title}"), AllowSleep(False), self._say(activity.opening())]

    def _leave(self, finished_text: str | None = None) -> list[AgentAction]:
        title = self.activity.title if self.activity else "activity"
        self.mode = Mode.FREE
        self.activity = None
        self.offered = self.just_offered = True
        if finished_text is not None:
            text = f"{finished_text} Thank you! Would you like to do one of the other activities?"
            note = f"finished {title}"
        else:
            text = f"[neutral] Okay, we've stopped the {title}. Would you like to do something else?"
            note = f"left {title}"
        return [Note(note), AllowSleep(True), self._say(text)]

    def _unheard(self, confidence: float) -> list[AgentAction]:
        return [Note(f"heard poorly ({confidence:.2f}): no change"), self._say(UNHEARD)]

    def _free(self, text: str, confidence: float) -> list[AgentAction]:
        was_offered, self.just_offered = self.just_offered, False
        asks_for_list = is_list_request(text) or (was_offered and is_yes(text))
        chosen = next((a for a in self.activities if a.named_in(text)), None)
        commits = chosen is not None or is_goodbye(text)
        if self._poor(confidence) and (commits or not asks_for_list):
            self.just_offered = was_offered  # the offer still stands for the repeated answer
            return self._unheard(confidence)
        if is_goodbye(text):
            self.asked_how = False
            return self._goodbye(GOODBYE)
        if chosen is not None and not is_no(text):
            return self._choose(chosen, text)
        if asks_for_list:
            self.offered = self.just_offered = True
            self.asked_how = False
            return [
                Note("offered activities"),
                self._say(f"[excited] {self._offer_text()} Which would you like?"),
            ]
        if was_offered and is_no(text):
            return self._goodbye(DISMISSED)
        if self.asked_how:
            self.asked_how = False
            if self.offered:
                return [self._say(self.free_talk.reply(text, self.history))]
            self.offered = self.just_offered = True
            mood = "[sad] Oh, I'm sorry to hear that." if is_sad(text) else "[happy] That's good to hear!"
            return [Note("offered activities"), self._say(f"{mood} {self._offer_text()} Just say which.")]
        return [self._say(self.free_talk.reply(text, self.history))]

    def _ask_stop(self, prefix: str) -> list[AgentAction]:
        self.mode = Mode.ASK_STOP
        self.questions += 1
        title = self.activity.title if self.activity else "activity"
        return [Note("asked whether to stop"), self._say(f"{prefix} Shall we stop the {title}?")]

    def _in_activity(self, text: str, confidence: float) -> list[AgentAction]:
        assert self.activity is not None
        self.questions = 0
        if is_clear_stop(text):
            if self._poor(confidence):
                return self._ask_stop("[confused] Sorry, I didn't catch that.")
            return self._leave()
        if is_want_out(text):
            return self._ask_stop("[thinking]")
        result = self.activity.respond(self.turn, text)
        if result.done and self._poor(confidence):
            return self._unheard(confidence)  # finishing would leave the activity
        if result.done:
            return self._leave(result.text)
        self.turn += 1
        return [self._say(result.text)]

    def _asked_to_stop(self, text: str, confidence: float) -> list[AgentAction]:
        assert self.activity is not None
        if self._poor(confidence):
            return self._ask_stop("[confused] Sorry, I didn't catch that.")
        if is_yes(text) or is_clear_stop(text):
            return self._leave()
        if is_carry_on(text) or self.questions >= self.settings.max_questions:
            self.mode = Mode.ACTIVITY
            self.questions = 0
            return [
                Note("carrying on"),
                self._say(f"[happy] Let's carry on. {self.activity.prompt(self.turn)}"),
            ]
        return self._ask_stop("[thinking] Sorry, I'm not sure.")
