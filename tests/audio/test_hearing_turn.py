"""The turn verdict: the model's probability weighed with the speculative transcript's last words."""

from __future__ import annotations

import pytest

from audio.hearing.turn import OPEN_THRESHOLD, text_hint, turn_complete


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("Turn on the lights.", "final"),
        ("What time is it?", "final"),
        ("Stop!", "final"),
        ("Can we do the", "unfinished"),
        ("I walked out of.", "unfinished"),  # Whisper's full stop does not make "of" an ending
        ("the wind from the North which", "unfinished"),
        ("and so my fellow Americans,", "open"),
        ("I was thinking...", "open"),
        ("Turn it off", "open"),
        ("  ", None),
    ],
)
def test_text_hint(text: str, hint: str | None) -> None:
    assert text_hint(text) == hint


def test_model_alone_uses_the_threshold() -> None:
    assert turn_complete(0.5, "Can we do the", 0.5, "off")
    assert not turn_complete(0.49, "Turn on the lights.", 0.5, "off")


def test_a_word_no_sentence_ends_on_keeps_the_turn_open() -> None:
    for check in ("words", "words+punctuation"):
        assert not turn_complete(0.99, "Can we do the", 0.5, check)
        assert turn_complete(0.6, "Turn on the lights.", 0.5, check)


def test_without_a_sentence_mark_the_model_must_be_surer() -> None:
    assert turn_complete(0.6, "and so my fellow Americans,", 0.5, "words")
    assert not turn_complete(0.6, "and so my fellow Americans,", 0.5, "words+punctuation")
    assert turn_complete(OPEN_THRESHOLD, "and so my fellow Americans,", 0.5, "words+punctuation")


def test_no_transcript_leaves_the_model_alone() -> None:
    assert turn_complete(0.7, None, 0.5, "words+punctuation")
    assert not turn_complete(0.3, "", 0.5, "words+punctuation")


def test_words_end_needs_the_decoder_to_expect_a_sentence_mark() -> None:
    # A first half the model calls complete, whose text the decoder would not end there: wait.
    assert not turn_complete(0.7, "Had he married a more amiable woman", 0.5, "words+end", end_prob=0.05)
    # The same probability on a sentence the decoder would end: complete at once.
    assert turn_complete(0.7, "Turn on the lights.", 0.5, "words+end", end_prob=0.8)
    # A text without a mark the decoder still expects to end (a Whisper that dropped the full stop).
    assert turn_complete(0.7, "Turn on the lights", 0.5, "words+end", end_prob=0.6, end_min=0.3)


def test_words_end_lets_a_sure_model_end_any_text_but_an_unfinished_one() -> None:
    assert turn_complete(
        0.95, "He might even have been made amiable", 0.5, "words+end", end_prob=0.01, sure=0.9
    )
    assert not turn_complete(
        0.89, "He might even have been made amiable", 0.5, "words+end", end_prob=0.01, sure=0.9
    )
    assert not turn_complete(0.99, "Can we do the", 0.5, "words+end", end_prob=0.99)


def test_words_end_below_the_threshold_waits_whatever_the_decoder_says() -> None:
    assert not turn_complete(0.3, "Turn on the lights.", 0.5, "words+end", end_prob=0.99)


def test_words_end_without_an_end_probability_is_words_punctuation() -> None:
    for p, text in [(0.6, "Turn on the lights."), (0.6, "and so my fellow"), (0.95, "and so my fellow")]:
        assert turn_complete(p, text, 0.5, "words+end") == turn_complete(p, text, 0.5, "words+punctuation")
