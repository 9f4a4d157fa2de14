"""Transcript comparison for word error rates: one normal form for reference and hypothesis.

Two transcripts of the same speech differ in ways no listener would call a hearing error: "2" or
"two", "you're" or "you are", "P.M." or "PM", "mailbox" or "mail box". ``normalise_for_wer`` follows
the conventions of Whisper's English normaliser where they apply here (contractions expanded,
punctuation dropped, one spelling per word) and spells numbers out; ``word_errors`` also matches a
word against the same letters split in two on the other side ("filename" / "file name").
Homophones stay errors ("four" for "for"): which one was meant is what the transcript must get right.
"""

from __future__ import annotations

import re

from audio.hearing.confidence import normalise_text

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

_CONTRACTIONS = (
    (r"\bwon't\b", "will not"),
    (r"\bcan't\b", "can not"),
    (r"\blet's\b", "let us"),
    (r"\bain't\b", "is not"),
    (r"n't\b", " not"),
    (r"'re\b", " are"),
    (r"'s\b", " is"),
    (r"'d\b", " would"),
    (r"'ll\b", " will"),
    (r"'ve\b", " have"),
    (r"'m\b", " am"),
)
"""Contractions expanded as Whisper's English normaliser does ("'s" → "is" on both sides)."""

_SPELLINGS = {
    "im": "i am",  # contractions written without the apostrophe
    "dont": "do not",
    "lets": "let us",
    "whats": "what is",
    "goodnight": "good night",
    "good bye": "goodbye",
    "favourite": "favorite",
    "colour": "color",
    "okay": "ok",
    "cannot": "can not",
}

_ORDINAL_ENDINGS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def _number_words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = "" if n % 100 == 0 else " " + _number_words(n % 100)
        return _ONES[n // 100] + " hundred" + rest
    return str(n)


def _ordinal_words(n: int) -> str:
    """21 → "twenty first", 60 → "sixtieth"."""
    words = _number_words(n).split()
    last = words[-1]
    if last in _ORDINAL_ENDINGS:
        words[-1] = _ORDINAL_ENDINGS[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def _spell_number(word: str) -> str:
    """ "2" → "two", "60th" → "sixtieth", "3d" → "three d"; other words unchanged."""
    m = re.fullmatch(r"(\d{1,3})(st|nd|rd|th)?([a-z]*)", word)
    if m is None:
        return word
    digits, ordinal, rest = m.groups()
    spoken = _ordinal_words(int(digits)) if ordinal else _number_words(int(digits))
    return f"{spoken} {rest}" if rest else spoken


def _expand(text: str) -> str:
    """Lower-case; contractions expanded; dotted initialisms joined ("P.M." → "pm")."""
    text = text.lower().replace("\u2019", "'")
    for pattern, spoken in _CONTRACTIONS:
        text = re.sub(pattern, spoken, text)
    return re.sub(r"\b(?:[a-z]\.){2,}", lambda m: m.group(0).replace(".", ""), text)


def normalise_for_wer(text: str) -> str:
    """``normalise_text`` after contractions are expanded, numbers spelled out ("2" → "two",
    "7th" → "seventh") and a few spellings unified."""
    word = text.strip()
    if word.isascii() and word.isalpha():  # one plain word (most tokens): the same, faster
        return _SPELLINGS.get(word.lower(), word.lower()).replace("good bye", "goodbye")
    words = []
    for w in normalise_text(_expand(text).replace(",", "")).split():
        for part in _spell_number(w).split():
            words.extend(_SPELLINGS.get(part, part).split())
    return " ".join(words).replace("good bye", "goodbye")


def word_edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance between two word lists (substitutions, insertions, deletions)."""
    prev = list(range(len(hyp) + 1))
    for i, rw in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, hw in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (rw != hw))
        prev = cur
    return prev[-1]


_MAX_JOINED = 4
"""Most words joined into one: a spelled-out initialism ("m g c p" = "mgcp")."""


def join_compounds(words: list[str], other: list[str]) -> list[str]:
    """``words`` with runs of 2–4 adjacent words joined where the joined word is one of
    ``other``'s words and not already one of ``words`` ("file name" → "filename", "m g c p" →
    "mgcp" when the other side says so); the longest run first."""
    theirs, mine = set(other), set(words)
    out: list[str] = []
    i = 0
    while i < len(words):
        for k in range(min(_MAX_JOINED, len(words) - i), 1, -1):
            joined = "".join(words[i : i + k])
            if joined in theirs and joined not in mine:
                out.append(joined)
                i += k
                break
        else:
            out.append(words[i])
            i += 1
    return out


def word_errors(ref: str, hyp: str) -> int:
    """Word-level Levenshtein distance between normalised ``ref`` and ``hyp``, compounds matched."""
    r, h = normalise_for_wer(ref).split(), normalise_for_wer(hyp).split()
    r, h = join_compounds(r, h), join_compounds(h, r)
    return word_edit_distance(r, h)


def reference_words(ref: str) -> int:
    """Number of words in the normalised reference (the WER denominator)."""
    return len(normalise_for_wer(ref).split())
