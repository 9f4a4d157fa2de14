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
  at least ``END_MIN`` beside ``p >= threshold``. Whisper writes a full stop after many a first
  half ("He might even have been made amiable.") but gives it 0.3-0.6 there against 0.7-0.98 after
  a whole sentence, and that lets the model's threshold come down (0.3): the model alone calls many
  whole read sentences unfinished. Without an end probability it is ``words+punctuation`` with the
  threshold at least ``UNCHECKED_THRESHOLD``.

A transcript of one word (``single_word``) is a finished answer to both signals whether the user
said it alone or before a comma ("No, the fitness one."): the model's ``ONE_WORD_SURE`` ends it
whatever the decoder's end probability, and the listener lets its "complete" end the turn only
after ``hearing.turn_word_hold_ms``.

No transcript (the decode failed or heard nothing) leaves the model alone.

``late_complete`` is the late check (``hearing.turn_late_ms``): after a longer silence the words
alone may end a turn the model keeps calling unfinished -- a transcript that ends like a sentence
whose end the decoder was sure of (``end_prob >= hearing.turn_late_end``). The model calls some
whole read sentences unfinished to the end ("He was not an ill-disposed young man." p 0.03-0.21,
end 0.85), which then waited for the fallback silence; first halves that read as whole sentences
to the decoder have end probabilities of 0.3-0.6 mostly (docs/hearing.md has the replay).
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

ONE_WORD_SURE = 0.8
"""``words+end``: the model's probability that ends a one-word turn whatever the decoder's end
probability ("Wait." alone: p 0.98-0.99, Whisper "Wait..." end 0.24-0.30). A one-word verdict ends
the turn only after ``hearing.turn_word_hold_ms`` (``single_word``)."""

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


def single_word(text: str | None) -> bool:
    """Whether ``text`` is one word ("No.", "Wait...", "Okay,"; "Press 6." is two): a "complete"
    verdict on it ends the turn only after ``hearing.turn_word_hold_ms``, the pause a first word
    before a comma lasts."""
    return text is not None and len(_TOKEN.findall(text)) == 1


def turn_complete(
    probability: float,
    text: str | None,
    threshold: float,
    check: str,
    *,
    end_prob: float | None = None,
    end_min: float = END_MIN,
    sure: float = SURE,
) -> bool:
    """Whether the turn is complete: the model's ``probability`` and the speculative ``text``
    (None: no transcript) combined as ``check`` (``hearing.turn_text_check``) says; ``words+end``
    also weighs ``end_prob`` (the decoder's probability of a sentence mark after the last word)."""
    hint = text_hint(text) if text is not None and check != "off" else None
    if hint == "unfinished":
        return False
    if check == "words+end":
        if hint is not None and end_prob is not None:
            sure = min(sure, ONE_WORD_SURE) if single_word(text) else sure
            return (probability >= threshold and end_prob >= end_min) or probability >= max(threshold, sure)
        threshold = max(threshold, UNCHECKED_THRESHOLD)  # no decode in time, or an engine without it
    if hint == "open" and check in ("words+punctuation", "words+end"):
        return probability >= max(threshold, OPEN_THRESHOLD)
    return probability >= threshold


LATE_MIN_WORDS = 3
"""The late check's least words: a fragment ("Up.", Whisper's reading of a garbled "Actually"
said over the reply) gets a confident full stop too, and the words after it would be cut off;
the sentences the model misjudges to the end are longer."""


def late_complete(text: str | None, end_prob: float | None, late_end: float) -> bool:
    """The late check: ``text`` holds at least ``LATE_MIN_WORDS`` words, ends like a sentence
    (``text_hint`` "final"), and the decoder's probability of that sentence mark is at least
    ``late_end``."""
    if text is None or end_prob is None or end_prob < late_end:
        return False
    return len(_WORD.findall(text)) >= LATE_MIN_WORDS and text_hint(text) == "final"
