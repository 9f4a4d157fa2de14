"""Split streamed reply text into speakable pieces: sentences, and a short first clause.

Pure and clock-free: ``SentenceSplitter.feed(chunk, final)`` returns the pieces that became complete.
Offsets are character offsets into the concatenation of every chunk fed so far; consecutive pieces are
contiguous (``piece[i].end == piece[i + 1].start``), so together they cover the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n+")
_CLAUSE_END = re.compile(r"[,;:]+[\"'”’)\]]*(?=\s)|\s[—–-]+(?=\s)|[—–](?=\S)")
_EDGE_END = re.compile(r"(?<=[^\W\d_])[.!?…,;:]+[\"'”’)\]]*$")
_SPACE = re.compile(r"\s+")
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "jr", "sr", "e.g", "i.e", "etc", "approx", "no", "fig"}
)
_WORD = re.compile(r"\w", re.UNICODE)


@dataclass(frozen=True, slots=True)
class TextPiece:
    """A piece of reply text to synthesise: ``text`` is the stripped ``full[start:end]``."""

    text: str
    start: int
    end: int


def is_speakable(text: str) -> bool:
    """True when ``text`` contains at least one letter or digit."""
    return _WORD.search(text) is not None


class SentenceSplitter:
    """Incremental sentence (and first-clause) splitter for one reply."""

    def __init__(self, first_clause_min_words: int = 1, max_piece_chars: int = 160) -> None:
        self._first_clause_min_words = first_clause_min_words
        self._max_piece_chars = max(20, max_piece_chars)
        self._text = ""
        self._pos = 0
        self._count = 0

    def feed(self, chunk: str, final: bool = False) -> list[TextPiece]:
        """Add ``chunk``; return the pieces now complete (all the rest too when ``final``)."""
        self._text += chunk
        pieces: list[TextPiece] = []
        while True:
            cut = self._next_cut()
            if cut is None:
                break
            piece = self._take(cut)
            if piece is not None:
                pieces.append(piece)
        if final and self._pos < len(self._text):
            piece = self._take(len(self._text))
            if piece is not None:
                pieces.append(piece)
            self._pos = len(self._text)
        return pieces

    def _take(self, cut: int) -> TextPiece | None:
        start = self._pos
        text = self._text[start:cut].strip()
        if not is_speakable(text):
            return None
        self._pos = cut
        self._count += 1
        return TextPiece(text=text, start=start, end=cut)

    def _next_cut(self) -> int | None:
        """End offset of the next complete piece after ``self._pos``, or None."""
        rest = self._text[self._pos :]
        base = self._pos
        for match in _SENTENCE_END.finditer(rest):
            end = match.end()
            sentence_end = match.group().startswith("\n") or not self._is_abbreviation(rest, match.start())
            if sentence_end and is_speakable(rest[:end]):
                return self._limit(rest[:end], base) or base + end
        return self._limit(rest, base) or self._first_at_edge(rest, base)

    def _first_at_edge(self, rest: str, base: int) -> int | None:
        """First piece only: punctuation right after a letter at the end of the text so far ends it
        without waiting for the next chunk ("Sure," / "Hi!"; not "1," which may become "1,000")."""
        if self._count != 0:
            return None
        match = _EDGE_END.search(rest)
        if match is None or not is_speakable(rest[: match.start()]):
            return None
        mark = match.group()[0]
        if mark == "." and self._is_abbreviation(rest, match.start()):
            return None
        if mark in ",;:":
            words = len(_SPACE.split(rest[: match.start()].strip()))
            if self._first_clause_min_words <= 0 or words < self._first_clause_min_words:
                return None
        return base + len(rest)

    def _limit(self, candidate: str, base: int) -> int | None:
        """A clause cut inside ``candidate`` for the first piece or an over-long sentence."""
        first = self._count == 0 and self._first_clause_min_words > 0
        too_long = len(candidate) > self._max_piece_chars
        if not (first or too_long):
            return None
        best: int | None = None
        for match in _CLAUSE_END.finditer(candidate):
            head = candidate[: match.end()]
            words = len(_SPACE.split(head.strip()))
            if first and words >= self._first_clause_min_words and is_speakable(head):
                return base + match.end()
            if too_long and match.end() <= self._max_piece_chars and is_speakable(head):
                best = base + match.end()
        if too_long and best is None:
            limit = candidate[: self._max_piece_chars]
            space = limit.rfind(" ")
            if space > 0 and is_speakable(limit[:space]):
                best = base + space
        return best

    @staticmethod
    def _is_abbreviation(text: str, dot: int) -> bool:
        """True when the '.' at ``dot`` ends an abbreviation or an initial, not a sentence."""
        if text[dot] != ".":
            return False
        head = text[:dot]
        word = head.split()[-1] if head.split() else ""
        word = word.lstrip("\"'(“‘[")
        if len(word) == 1 and word.isalpha() and word.isupper():
            return True
        return word.lower() in _ABBREVIATIONS
