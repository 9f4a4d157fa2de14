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
