"""Joining the decodes of a long utterance's parts into one transcript."""

from __future__ import annotations

import pytest

from audio.hearing.stt import Transcription
from audio.hearing.utterance_parts import join_transcriptions


def part(text: str, confidence: float, audio_ms: int) -> Transcription:
    return Transcription(text, confidence, "en", audio_ms, 100, None)


def test_parts_join_in_order_with_duration_weighted_confidence() -> None:
    got = join_transcriptions(
        [part(" Once upon a time.", 0.9, 20000), part("", 0.0, 500), part("The end.", 0.3, 5000)], "en"
    )
    assert got.text == "Once upon a time. The end."
    assert got.confidence == pytest.approx((0.9 * 20000 + 0.3 * 5000) / 25000)
    assert (got.audio_ms, got.decode_ms, got.features) == (25500, 300, None)


def test_a_part_decoded_mid_flow_starts_a_sentence_with_a_capital() -> None:
    texts = ["It lived by the sea.", "every morning it watched the boats", "go out", "iPhones too."]
    got = join_transcriptions([part(t, 0.8, 1000) for t in texts], "en")
    # a capital only after a sentence ended; words after an unfinished part stay as decoded
    assert got.text == "It lived by the sea. Every morning it watched the boats go out iPhones too."


def test_nothing_heard_in_any_part_is_no_transcript() -> None:
    got = join_transcriptions([part("", 0.0, 3000), part("", 0.0, 2000)], "en")
    assert (got.text, got.confidence, got.audio_ms) == ("", 0.0, 5000)


def test_parts_without_a_signal_stay_no_signal() -> None:
    # Exactly 0 is "the provider gave no signal" (an endpoint without log-probabilities), never a score.
    got = join_transcriptions([part("First half.", 0.0, 20000), part("second half.", 0.0, 5000)], "en")
    assert got.text == "First half. Second half." and got.confidence == 0.0
    mixed = join_transcriptions([part("Heard.", 0.8, 20000), part("unscored.", 0.0, 5000)], "en")
    assert mixed.confidence == pytest.approx(0.8)  # the unscored part is not counted as heard wrong
    assert join_transcriptions([part("Faint.", 0.0002, 1000)], "en").confidence == 0.001
