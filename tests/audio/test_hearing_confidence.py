"""Confidence score: calibration file in sync, clamping, text normalisation for WER."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from audio.confidence import (
    CALIBRATION_PATH,
    FEATURE_NAMES,
    MIN_CONFIDENCE,
    ConfidenceFeatures,
    has_repeated_word,
    load_calibration,
    normalise_for_wer,
    score,
)
from audio.eval_confidence import auroc, ece, word_errors


def features(**over: object) -> ConfidenceFeatures:
    base: dict[str, object] = {
        "avg_logprob": -0.3,
        "min_token_prob": 0.6,
        "mean_word_prob": 0.8,
        "min_word_prob": 0.6,
        "no_speech_prob": 0.1,
        "compression_ratio": 1.0,
        "fallbacks": 0,
        "speech_ratio": 0.9,
        "level_db": -20.0,
        "audio_s": 2.0,
        "n_words": 5,
        "filler": False,
    }
    base.update(over)
    return ConfidenceFeatures(**base)  # type: ignore[arg-type]


def test_stored_calibration_matches_features() -> None:
    raw = json.loads(CALIBRATION_PATH.read_text())
    assert tuple(raw["names"]) == FEATURE_NAMES
    assert len(raw["coef"]) == len(raw["mean"]) == len(raw["scale"]) == len(FEATURE_NAMES)


def test_scores_order_and_clamp() -> None:
    good = score(features())
    bad = score(
        features(
            avg_logprob=-2.5,
            min_token_prob=0.01,
            mean_word_prob=0.05,
            min_word_prob=0.01,
            no_speech_prob=0.95,
            compression_ratio=3.0,
            fallbacks=2,
            speech_ratio=0.2,
            level_db=-60.0,
            filler=True,
            agrees=False,
        )
    )
    assert 0.4 <= good <= 1.0
    assert MIN_CONFIDENCE <= bad < 0.1
    assert bad > 0.0  # computed scores are never exactly 0


def test_missing_calibration_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cal = load_calibration.__wrapped__(tmp_path / "nope.json")
    assert cal.names == FEATURE_NAMES
    assert "no usable confidence calibration" in caplog.text


def test_normalisation_for_wer() -> None:
    assert normalise_for_wer("Goodnight!") == "good night"
    assert normalise_for_wer("300... I'm 7") == "three hundred i am seven"
    assert word_errors("Good bye.", "goodbye") == 0
    assert word_errors("turn on the lights", "turn the light") == 2
    assert has_repeated_word("9 9") and not has_repeated_word("bye now")


def test_metrics() -> None:
    assert auroc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert auroc([0.1, 0.9], [True, False]) == 0.0
    assert ece([1.0, 0.0], [True, False]) == 0.0
    assert ece([0.9, 0.9], [False, False]) == pytest.approx(0.9)


def test_step_stats_margin_and_entropy() -> None:
    from audio.confidence_signals import step_stats

    logits = [[2.0, 0.0, 0.0], [0.0, 0.0, float("-inf")]]
    stats = step_stats(logits, [0, 1])
    p0 = math.exp(2.0) / (math.exp(2.0) + 2.0)
    assert stats.probs == pytest.approx([p0, 0.5])
    assert stats.margins == pytest.approx([2.0, 0.0])  # chosen vs best other token, in nats
    assert stats.entropies[1] == pytest.approx(math.log(2.0))  # -inf (suppressed) tokens ignored
    assert 0.0 < stats.entropies[0] < math.log(3.0)


def test_unstable_decode_lowers_the_score() -> None:
    stable = dict(min_token_margin=8.0, mean_token_margin=9.0, max_token_entropy=0.5, perturbed_agreement=1.0)
    torn = dict(min_token_margin=0.05, mean_token_margin=0.3, max_token_entropy=4.0, perturbed_agreement=0.0)
    assert score(features(**torn)) < score(features(**stable))
    assert score(features(perturbed_agreement=0.0)) < score(features(perturbed_agreement=1.0))
