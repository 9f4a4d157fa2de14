"""Is the user's turn complete? The end-of-turn model's probability, weighed with the speculative
transcript of the words so far (pure: no model, no clock).

The audio model alone misjudges about a third of the first halves of real sentences cut at a pause
("complete"), but Whisper's text of such a half often shows it: it ends on a word a sentence cannot
end on ("… out of", "… the North which") or without a full stop. ``turn_complete`` combines them as
``hearing.turn_text_check`` says (docs/hearing.md has the measurements):

- ``off``: the model alone, ``p >= threshold``;
- ``words``: a last word in ``OPEN_WORDS`` keeps the turn open whatever the model says, and so do
  words that only open a turn (``PREFACE_WORDS``: "Actually," "Well," "Um," before a pause);
- ``words+punctuation``: also, a transcript that does not end in ``.``, ``?`` or ``!`` (or ends in
  an ellipsis) needs ``p >= OPEN_THRESHOLD``;
- ``words+end`` (default): the ``words`` rule, then the decoder's own probability of a sentence
  mark right after the last word (``Transcription.end_prob``, whatever mark it then wrote) must be
  at least ``END_MIN`` beside ``p >= threshold`` (``LONG_END_MIN`` for a transcript of more than
  ``SHORT_WORDS`` words, unless the model is ``LONG_SURE`` of it and Whisper wrote the sentence
  mark). Whisper writes a full stop after many a first half ("He might even have been made
  amiable.") but gives it 0.3-0.6 there against 0.7-0.98 after a whole sentence, and that lets the
  model's threshold come down (0.3): the model alone calls many whole read sentences unfinished.
  Without an end probability it is ``words+punctuation`` with the threshold at least
  ``UNCHECKED_THRESHOLD``.

A short transcript (``short_text``: one to three words) is a finished answer to both signals whether
the user said it alone or before a comma ("No, the fitness one."): the model's ``ONE_WORD_SURE``
(one word) or ``SHORT_SURE`` ends it whatever the decoder's end probability (which Whisper often
does not write or is unsure of on a few words: "Apple River Chair", "Sure thing..."), and the
listener lets its "complete" end the turn only after ``hearing.turn_short_hold_ms``.

No transcript (the decode failed or heard nothing) leaves the model alone.

``late_complete`` is the late check (``hearing.turn_late_ms``): after a longer silence the words
alone may end a turn the model keeps calling unfinished -- a transcript that ends like a sentence
whose end the decoder was sure of (``end_prob >= hearing.turn_late_end``; two words
``SHORT_LATE_END``). The model calls some whole read sentences unfinished to the end ("He was not
an ill-disposed young man." p 0.03-0.21, end 0.85) and many short answers ("Okay, thanks."), which
then waited for the fallback silence; first halves that read as whole sentences to the decoder
have end probabilities of 0.3-0.6 mostly (docs/hearing.md has the replay).
"""

from __future__ import annotations

import re
from typing import Literal

TextHint = Literal["final", "open", "unfinished"]
"""What the words so far say: end with a sentence mark, do not, or end on a word no sentence ends on."""

OPEN_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "with",
        "into",
        "onto",
        "than",
        "and",
        "but",
        "or",
        "nor",
        "because",
        "although",
        "though",
        "unless",
        "whereas",
        "whether",
        "if",
        "which",
        "whose",
        "my",
        "your",
        "its",
        "our",
        "their",
    ]
)
"""Words a spoken sentence (almost) never ends on: articles, the prepositions that never end one,
conjunctions, relative and possessive words. Particles and prepositions that often end a sentence
("turn it off", "sit down", "what is it for", "where are you from") and pronouns ("I saw her") are
not here: a wrong "unfinished" costs the fallback's wait on a finished turn."""

PREFACE_WORDS: frozenset[str] = frozenset(
    ["actually", "well", "so", "um", "umm", "uh", "uhm", "er", "erm", "hmm", "hm", "mm"]
)
"""Words that open a turn and are almost never the whole of one: a transcript of nothing else
("Actually.", "Well,", "Um, so") keeps the turn open whatever the model says. Spoken before a comma
pause they read as a finished one-word turn to the model and often to the decoder: `make demo`'s
barge-in "Actually, please stop the story." said over the reply once arrived as "Actually." (ended
at the comma, 0.94) and "Please stop the story." (heard poorly over the next reply); Piper's pause
after "Actually," is 210-270 ms to the VAD, the hold 240. One-word answers ("Yes.", "No.",
"Okay.", "Wait.", "Stop.") are turns and are not here; neither are words that often end a sentence
when other words come first ("I did, actually." "I'm well."): only a transcript of these alone."""

OPEN_THRESHOLD = 0.9
"""``words+punctuation``: the probability a transcript without a sentence mark needs."""

END_MIN = 0.4
"""``words+end``: the decoder's probability of a sentence mark after the last word that, with the
model's ``threshold``, ends the turn."""

SURE = 1.01
"""``words+end``: the model's probability that ends the turn whatever the decoder's end probability
(above 1: never; the model says 0.9-0.99 to many real first halves, "She had your dark suit")."""

LONG_END_MIN = 0.6
"""``words+end``: the end probability a transcript of more than ``SHORT_WORDS`` words needs beside
``p >= threshold``, unless the model is ``LONG_SURE`` of it (``hearing.turn_long_end``'s default).
First halves that read as sentences to the decoder ("Please hold while I try to locate the
person." p 0.50-0.68, end 0.57-0.60; "Press 4 to remove the urgency." 0.72-0.92, 0.50-0.56) end the
turn at 0.4 and are kept whole at 0.6 (replayed on eight caches, docs/hearing.md "The long
sentence's end")."""

LONG_SURE = 0.9
"""``words+end``: the model's probability with which a transcript of more than ``SHORT_WORDS`` words
that ends in a sentence mark (``text_hint`` "final") ends the turn at ``END_MIN`` (not
``LONG_END_MIN``; ``hearing.turn_long_sure``'s default): the whole sentences whose end the decoder
is as unsure of ("My favourite colour is blue." misheard "My favorite colors blue." end 0.49-0.52,
"Let's do story time." 0.59, "Maybe later after my lunch." 0.55) get 0.92-0.98 from the model. At
0.97 more first halves stay whole ("Press star for help." p 0.92-0.95) and the first of those
sentences waits for the fallback silence. Without the mark the decoder has not read a sentence,
and the sure model is not enough: "She had your dark soothing" (the first half of "She had your dark
suit in greasy wash water all year", p 0.99, end 0.47) ended the turn before 2026-12-07."""

SHORT_WORDS = 3
"""A transcript of at most this many words is short (``short_text``): a finished answer ("Good
night.", "Sounds good.", "Front left", "Apple River Chair") whose end Whisper often neither writes
nor is sure of, and a first few words before a comma ("No, the fitness one.") that read as one."""

ONE_WORD_SURE = 0.8
"""``words+end``: the model's probability that ends a one-word turn whatever the decoder's end
probability ("Wait." alone: p 0.98-0.99, Whisper "Wait..." end 0.24-0.30). A short verdict ends
the turn only after ``hearing.turn_short_hold_ms`` (``short_text``)."""

SHORT_SURE = 0.9
"""``words+end``: the same for two or three words ("Sure thing..." p 0.99 end 0.34, "Good night."
p 0.98 end 0.34, "Apple River Chair" p 0.96-0.98 end 0.00, "Front Center" p 0.97 end 0.00)."""

SHORT_LATE_END = 0.7
"""The late check's end probability for a transcript of two words, at most ``hearing.turn_late_end``
("Okay, thanks." p 0.08-0.29 end 0.63-0.81, "Very good." p 0.05 end 0.72: the model calls many
short answers unfinished, and Whisper is less sure of a short sentence's end than a long one's)."""

UNCHECKED_THRESHOLD = 0.5
"""``words+end`` without an end probability (no decode in time, or an engine that gives none): the
least probability the model needs, whatever ``threshold`` says (the low threshold ``words+end``
runs with is only safe beside the decoder's end probability)."""

_WORD = re.compile(r"[A-Za-z']+")
_TOKEN = re.compile(r"[A-Za-z0-9']+")
_LAST_WORD = re.compile(r"([A-Za-z']+)[^A-Za-z']*$")


def text_hint(text: str) -> TextHint | None:
    """What ``text`` (Whisper's transcript of the words so far) says about the turn; None if empty."""
    stripped = text.strip()
    if not stripped:
        return None
    match = _LAST_WORD.search(stripped)
    if match is not None and match.group(1).lower().strip("'") in OPEN_WORDS:
        return "unfinished"
    words = [w.lower().strip("'") for w in _WORD.findall(stripped)]
    if words and all(w in PREFACE_WORDS for w in words):
        return "unfinished"
    if stripped.endswith(("...", "…")) or not stripped.endswith((".", "?", "!")):
        return "open"
    return "final"


def word_count(text: str | None) -> int:
    """The words (and numbers) of ``text``: "Press 6." is two, "x-ray" two, None none."""
    return len(_TOKEN.findall(text)) if text is not None else 0


def short_text(text: str | None) -> bool:
    """Whether ``text`` holds one to ``SHORT_WORDS`` words: a "complete" verdict on it ends the turn
    only after ``hearing.turn_short_hold_ms``, the pause after a first word or two before a comma."""
    return 1 <= word_count(text) <= SHORT_WORDS


def short_sure(text: str | None) -> float:
    """The model's probability that ends a turn on ``text`` whatever the decoder's end probability:
    ``ONE_WORD_SURE``, ``SHORT_SURE`` for a short text, otherwise ``SURE`` (never)."""
    count = word_count(text)
    return ONE_WORD_SURE if count == 1 else SHORT_SURE if 1 < count <= SHORT_WORDS else SURE


def turn_complete(
    probability: float,
    text: str | None,
    threshold: float,
    check: str,
    *,
    end_prob: float | None = None,
    end_min: float = END_MIN,
    sure: float = SURE,
    long_end_min: float = LONG_END_MIN,
    long_sure: float = LONG_SURE,
) -> bool:
    """Whether the turn is complete: the model's ``probability`` and the speculative ``text``
    (None: no transcript) combined as ``check`` (``hearing.turn_text_check``) says; ``words+end``
    also weighs ``end_prob`` (the decoder's probability of a sentence mark after the last word):
    at least ``end_min``, or ``long_end_min`` for more than ``SHORT_WORDS`` words unless the model
    says at least ``long_sure`` of words that end in a sentence mark."""
    hint = text_hint(text) if text is not None and check != "off" else None
    if hint == "unfinished":
        return False
    if check == "words+end":
        if hint is not None and end_prob is not None:
            sure = min(sure, short_sure(text))
            if not short_text(text) and (hint != "final" or probability < max(threshold, long_sure)):
                end_min = max(end_min, long_end_min)
            return (probability >= threshold and end_prob >= end_min) or probability >= max(threshold, sure)
        threshold = max(threshold, UNCHECKED_THRESHOLD)  # no decode in time, or an engine without it
    if hint == "open" and check in ("words+punctuation", "words+end"):
        return probability >= max(threshold, OPEN_THRESHOLD)
    return probability >= threshold


LATE_MIN_WORDS = 2
"""The late check's least words: a one-word fragment ("Up.", Whisper's reading of a garbled
"Actually" said over the reply) gets a confident full stop too, and the words after it would be cut
off (one word alone ends on the model's ``ONE_WORD_SURE``)."""


def late_complete(text: str | None, end_prob: float | None, late_end: float) -> bool:
    """The late check: ``text`` holds at least ``LATE_MIN_WORDS`` words, ends like a sentence
    (``text_hint`` "final"), and the decoder's probability of that sentence mark is at least
    ``late_end`` (two words: at least ``SHORT_LATE_END``, if that is lower)."""
    count = word_count(text)
    if text is None or end_prob is None or count < LATE_MIN_WORDS:
        return False
    least = min(late_end, SHORT_LATE_END) if count == LATE_MIN_WORDS else late_end
    return end_prob >= least and text_hint(text) == "final"
