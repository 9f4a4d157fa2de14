"""SentenceSplitter: pieces from streamed text (pure, no model)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from audio.speaking.sentences import SentenceSplitter, TextPiece

TEXT = "Well, hello there. How are you today? I am fine! Dr. Smith says hi.\nBye now"


def _texts(pieces: list[TextPiece]) -> list[str]:
    return [p.text for p in pieces]


def test_first_clause_is_split_at_comma_then_sentences() -> None:
    s = SentenceSplitter()
    pieces = s.feed(TEXT, final=True)
    assert _texts(pieces) == [
        "Well,",
        "hello there.",
        "How are you today?",
        "I am fine!",
        "Dr. Smith says hi.",
        "Bye now",
    ]


def test_unfinished_sentence_waits_for_more_text() -> None:
    s = SentenceSplitter(first_clause_min_words=0)
    assert s.feed("Hello there") == []
    assert _texts(s.feed(" friend.")) == ["Hello there friend."]  # first piece: a letter, then '.'
    assert s.feed(" It costs 3.") == []  # later pieces wait for what follows ("3.5")
    assert s.feed("5 euros, fine") == []
    assert _texts(s.feed(" thanks. How")) == ["It costs 3.5 euros, fine thanks."]
    assert _texts(s.feed(" are you", final=True)) == ["How are you"]


def test_first_piece_does_not_wait_for_the_next_chunk() -> None:
    assert _texts(SentenceSplitter().feed("Sure,")) == ["Sure,"]
    assert SentenceSplitter().feed("It is 1,") == []  # may become "1,000"
    assert SentenceSplitter().feed("Ask Mr.") == []
    assert SentenceSplitter(first_clause_min_words=2).feed("Sure,") == []
    assert _texts(SentenceSplitter(first_clause_min_words=0).feed("Hi!")) == ["Hi!"]


def test_first_clause_needs_min_words() -> None:
    s = SentenceSplitter(first_clause_min_words=3)
    assert _texts(s.feed("Yes, of course, I can do that. ", final=False)) == [
        "Yes, of course,",
        "I can do that.",
    ]


def test_only_first_piece_is_split_at_clauses() -> None:
    s = SentenceSplitter()
    pieces = s.feed("Hi, you. Then, we go, now. ", final=True)
    assert _texts(pieces) == ["Hi,", "you.", "Then, we go, now."]


def test_long_sentence_is_split() -> None:
    s = SentenceSplitter(first_clause_min_words=0, max_piece_chars=40)
    text = "This is a rather long sentence, which keeps going and going without any end in sight "
    pieces = s.feed(text)
    assert pieces and all(len(p.text) <= 40 for p in pieces)
    assert pieces[0].text == "This is a rather long sentence,"


def test_unspeakable_text_gives_no_piece() -> None:
    s = SentenceSplitter()
    assert s.feed("  ... ", final=True) == []
    assert s.feed("", final=True) == []


def test_numbers_and_abbreviations_do_not_split() -> None:
    s = SentenceSplitter(first_clause_min_words=0)
    assert _texts(s.feed("It costs 3.50 dollars, e.g. at Mr. Brown's shop. ")) == [
        "It costs 3.50 dollars, e.g. at Mr. Brown's shop."
    ]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(TEXT)), max_size=12))
def test_any_chunking_gives_the_same_contiguous_pieces(cuts: list[int]) -> None:
    bounds = sorted({0, len(TEXT), *cuts})
    chunks = [TEXT[a:b] for a, b in itertools.pairwise(bounds)]
    s = SentenceSplitter()
    pieces: list[TextPiece] = []
    for i, chunk in enumerate(chunks):
        pieces += s.feed(chunk, final=i == len(chunks) - 1)
    assert pieces == SentenceSplitter().feed(TEXT, final=True)
    assert pieces[0].start == 0 and pieces[-1].end == len(TEXT)
    for a, b in itertools.pairwise(pieces):
        assert a.end == b.start
    for p in pieces:
        assert TEXT[p.start : p.end].strip() == p.text
