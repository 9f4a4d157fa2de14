"""Reply-text tags: ``[name]`` markers that are never spoken.

``[sleep]`` asks the device to fall asleep after the reply; emotion tags (``[happy]``...) change the
face's expression from that point of the spoken text on. Parsing is a pure function over streamed
chunks, so a tag split across two ``say`` chunks (``"[hap"`` + ``"py] Hi"``) is still one tag.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from face.state import EMOTIONS

_LOGGER = logging.getLogger(__name__)


_NAME = r"[^\W\d]"
"""A tag name's characters: letters of any script and ``_`` (protocol v1: "letters and ``_``")."""
_TAG = re.compile(rf"\[({_NAME}+)\]")
_END_TAG = re.compile(rf"\[{_NAME}*\]?$")


@dataclass(frozen=True, slots=True)
class Mark:
    """A tag's effect at ``offset`` characters into the reply's clean (speakable) text."""

    offset: int
    kind: Literal["emotion", "sleep"]
    name: str


@dataclass(frozen=True, slots=True)
class TagVocabulary:
    """Which tag names mean what: canonical emotions plus configured aliases (alias -> emotion)."""

    aliases: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, name: str) -> Mark | None:
        """Map a tag name to a mark kind/name at offset 0, or None when unknown."""
        key = name.lower()
        if key == "sleep":
            return Mark(0, "sleep", "sleep")
        key = next((v for k, v in self.aliases.items() if k.lower() == key), key).lower()
        if key in EMOTIONS:
            return Mark(0, "emotion", key)
        return None


@dataclass(frozen=True, slots=True)
class ParsedChunk:
    """The speakable text of one chunk, its marks, and what is held back for the next chunk."""

    text: str
    marks: tuple[Mark, ...]
    pending: str
    offset: int
    """Clean characters of the reply so far, including ``text``."""


def _hold_back(source: str) -> tuple[str, str]:
    """``source`` split into what can be parsed now and what waits for the next chunk (a final tag)."""
    # Hold back a tag (open or complete) at the end and the whitespace around it: whether that
    # whitespace is spoken depends on what the next chunk starts with.
    cut = len(source.rstrip())
    # A ``[`` then only name characters can still become a tag, however long: it is one word
    # at most, and the final chunk speaks whatever is still held.
    tail = _END_TAG.search(source, 0, cut)
    if tail:
        cut = tail.start()
    cut = len(source[:cut].rstrip())
    return source[:cut], source[cut:]


def _remove_tags(source: str, offset: int, vocab: TagVocabulary) -> tuple[str, list[Mark], int]:
    """``source`` without its tags, the marks they make, and the clean characters produced by then."""
    out: list[str] = []
    marks: list[Mark] = []
    produced = offset
    last_char_space = offset == 0
    pos = 0
    after_tag = False

    def emit(text: str) -> None:
        nonlocal produced, last_char_space, after_tag
        if after_tag and last_char_space:
            text = text.lstrip(" ")
        if text:
            after_tag = False
            out.append(text)
            produced += len(text)
            last_char_space = text[-1].isspace()

    for match in _TAG.finditer(source):
        emit(source[pos : match.start()])
        mark = vocab.resolve(match.group(1))
        if mark is None:
            _LOGGER.warning("Unknown reply tag %r dropped (not spoken)", match.group(0))
        else:
            marks.append(Mark(produced, mark.kind, mark.name))
        after_tag = True
        pos = match.end()
    emit(source[pos:])
    return "".join(out), marks, produced


def parse_chunk(
    chunk: str,
    *,
    pending: str = "",
    offset: int = 0,
    final: bool = True,
    vocabulary: TagVocabulary | None = None,
) -> ParsedChunk:
    """Parse one streamed chunk of reply text.

    ``pending`` is what the previous call held back (an unfinished ``[tag``); ``offset`` is the
    number of clean characters already produced for this reply. Whitespace left doubled by a removed
    tag is collapsed, so ``"Hi [happy] there"`` speaks as ``"Hi there"``.
    """
    vocab = vocabulary or TagVocabulary()
    source = pending + chunk
    held = ""
    if not final:
        source, held = _hold_back(source)
    text, marks, produced = _remove_tags(source, offset, vocab)
    return ParsedChunk(text=text, marks=tuple(marks), pending=held, offset=produced)


def strip_tags(text: str, vocabulary: TagVocabulary | None = None) -> str:
    """The speakable text of a whole reply (every tag removed)."""
    return parse_chunk(text, vocabulary=vocabulary).text
