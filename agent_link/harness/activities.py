"""Short scripted activities the stand-in companion can run (pure, no I/O).

An activity is a few turns: ``opening()`` starts it, ``respond(turn, text)`` answers the user's
``turn``-th reply (0-based) and says whether the activity has reached its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters, digits and apostrophes)."""
    return re.findall(r"[a-z0-9']+", text.lower())


@dataclass(frozen=True)
class ActivityTurn:
    """What to say after a user turn, and whether the activity ended with it."""

    text: str
    done: bool


def says(text: str, *phrases: str) -> bool:
    """Whether ``text`` contains one of ``phrases`` as whole words ("history" does not say "story")."""
    said = f" {' '.join(words(text))} "
    return any(f" {' '.join(words(p))} " in said for p in phrases)


class Activity:
    """Base of a scripted activity: a title people say, aliases and a few turns."""

    title: str = ""
    aliases: tuple[str, ...] = ()

    def named_in(self, text: str) -> bool:
        """Whether the user's words contain the title or an alias."""
        return says(text, self.title, *self.aliases)

    def title_in(self, text: str) -> bool:
        """Whether the user's words contain the title itself (it starts without a question)."""
        return says(text, self.title)

    def opening(self) -> str:
        """The first thing said when the activity starts."""
        raise NotImplementedError

    def prompt(self, turn: int) -> str:
        """The question of ``turn`` again (after "let's carry on")."""
        raise NotImplementedError

    def respond(self, turn: int, text: str) -> ActivityTurn:
        """Answer the user's ``turn``-th reply."""
        raise NotImplementedError


class MemoryGame(Activity):
    """Repeat three words back, twice."""

    title = "memory game"
    aliases = ("memory",)
    ROUNDS = (("apple", "river", "chair"), ("dog", "candle", "green"))

    def _ask(self, index: int) -> str:
        return f"Remember these three words: {', '.join(self.ROUNDS[index])}. Can you say them back to me?"

    def opening(self) -> str:
        return "[excited] Let's play the memory game! " + self._ask(0)

    def prompt(self, turn: int) -> str:
        return self._ask(min(turn, len(self.ROUNDS) - 1))

    def respond(self, turn: int, text: str) -> ActivityTurn:
        said = set(words(text))
        score = sum(1 for w in self.ROUNDS[min(turn, len(self.ROUNDS) - 1)] if w in said)
        praise = "[happy] Well done!" if score >= 2 else "[thinking] Nice try."
        if turn + 1 < len(self.ROUNDS):
            return ActivityTurn(
                f"{praise} You remembered {score} of 3. Next round. {self._ask(turn + 1)}", False
            )
        return ActivityTurn(f"{praise} {score} of 3. That's the end of the memory game.", True)


class StoryTime(Activity):
    """A tiny story the user steers twice."""

    title = "story time"
    aliases = ("story",)
    PROMPTS = (
        "Once upon a time, a little robot found a shiny key in the garden. What do you think it opens?",
        "The robot tried it, and a tiny door swung open. Should the robot go through?",
    )

    def opening(self) -> str:
        return "[happy] Story time! " + self.PROMPTS[0]

    def prompt(self, turn: int) -> str:
        return self.PROMPTS[min(turn, len(self.PROMPTS) - 1)]

    def respond(self, turn: int, text: str) -> ActivityTurn:
        if turn == 0:
            return ActivityTurn(f"[surprised] What a thought! {self.PROMPTS[1]}", False)
        return ActivityTurn(
            "[happy] So the robot stepped through and found a garden full of friends. The end!", True
        )


class Stretching(Activity):
    """Two gentle stretches."""

    title = "stretching"
    aliases = ("stretch",)
    PROMPTS = (
        "Raise both arms slowly above your head, then lower them. Tell me when you're done.",
        "Now roll your shoulders back three times. Tell me when you're done.",
    )

    def opening(self) -> str:
        return "[happy] Let's stretch! " + self.PROMPTS[0]

    def prompt(self, turn: int) -> str:
        return self.PROMPTS[min(turn, len(self.PROMPTS) - 1)]

    def respond(self, turn: int, text: str) -> ActivityTurn:
        if turn == 0:
            return ActivityTurn(f"[happy] Lovely. {self.PROMPTS[1]}", False)
        return ActivityTurn("[happy] Well done, that's the end of our stretching.", True)


def default_activities() -> tuple[Activity, ...]:
    """The activities the stand-in companion offers."""
    return (MemoryGame(), StoryTime(), Stretching())
