"""Reply-tag parsing: tags never spoken, marks at their position, tags split across chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from face.tags import Mark, TagVocabulary, parse_chunk, strip_tags


def test_tags_removed_marks_at_position_case_insensitive() -> None:
    parsed = parse_chunk("[HAPPY] Hi there. [Sad] Oh. [sleep]")
    assert parsed.text == "Hi there. Oh. "
    assert parsed.marks == (
        Mark(0, "emotion", "happy"),
        Mark(10, "emotion", "sad"),
        Mark(14, "sleep", "sleep"),
    )


def test_aliases_and_unknown_tags() -> None:
    vocab = TagVocabulary({"joy": "happy"})
    parsed = parse_chunk("A [joy] b [wink] c", vocabulary=vocab)
    assert parsed.text == "A b c"
    assert parsed.marks == (Mark(2, "emotion", "happy"),)


def test_tags_and_configured_aliases_match_in_any_case() -> None:
    vocab = TagVocabulary({"Joy": "Happy"})
    parsed = parse_chunk("A [JOY] b [Sad] c", vocabulary=vocab)
    assert parsed.text == "A b c"
    assert parsed.marks == (Mark(2, "emotion", "happy"), Mark(4, "emotion", "sad"))


def test_unclosed_bracket_is_text_at_the_end() -> None:
    assert strip_tags("Price [approx 5") == "Price [approx 5"
    assert strip_tags("a [b c] d") == "a [b c] d"


def test_tag_names_in_any_script_are_tags_never_spoken() -> None:
    vocab = TagVocabulary({"fröhlich": "happy"})
    parsed = parse_chunk("Hallo [FRÖHLICH] du [überrascht] da [喜] ja", vocabulary=vocab)
    assert parsed.text == "Hallo du da ja"
    assert parsed.marks == (Mark(6, "emotion", "happy"),)
    assert strip_tags("Seite [12] und [a1]") == "Seite [12] und [a1]"  # digits: not a tag name


def test_a_long_tag_split_across_chunks_is_still_a_tag() -> None:
    name = "a_very_long_tag_name_that_some_language_model_made_up_on_the_spot"
    first = parse_chunk("Okay [" + name[:50], final=False)
    second = parse_chunk(name[50:] + "] then [hap", pending=first.pending, offset=first.offset, final=False)
    third = parse_chunk("py] bye", pending=second.pending, offset=second.offset)
    assert first.text + second.text + third.text == "Okay then bye"
    assert third.marks == (Mark(10, "emotion", "happy"),)


def test_tag_split_across_chunks() -> None:
    first = parse_chunk("Hello [exc", final=False)
    assert first.text == "Hello" and first.pending == " [exc"
    second = parse_chunk("ited] world", pending=first.pending, offset=first.offset)
    assert first.text + second.text == "Hello world"
    assert second.marks == (Mark(6, "emotion", "excited"),)


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_any_chunking_gives_the_same_text_and_marks(cuts: list[int]) -> None:
    text = "[happy] Hello there, friend. [surprised] Wow [joy] that is [sleep] great!"
    vocab = TagVocabulary({"joy": "happy"})
    whole = parse_chunk(text, vocabulary=vocab)
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    out, pending, offset = "", "", 0
    marks: list[Mark] = []
    for i, piece in enumerate(pieces):
        parsed = parse_chunk(
            piece, pending=pending, offset=offset, final=i == len(pieces) - 1, vocabulary=vocab
        )
        out += parsed.text
        marks += parsed.marks
        pending, offset = parsed.pending, parsed.offset
    assert out == whole.text
    assert tuple(marks) == whole.marks
