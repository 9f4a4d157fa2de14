"""Transcript confidence: raw decode features and a calibrated logistic score in (0, 1].

The features come from the decode itself (token and word probabilities, no-speech probability,
compression ratio, temperature fallbacks) and from the audio (VAD speech share, level). A logistic
regression fitted offline by ``audio/tools/eval_confidence.py fit`` on generated sets maps them to the
probability that the transcript is right. Its coefficients live in ``confidence_calibration.json``
next to this module. A computed score is never exactly 0 (0 means "no signal from the provider").
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

CALIBRATION_PATH = Path(__file__).with_name("confidence_calibration.json")
"""Fitted with the cross-check features (``ConfidenceFeatures.cross_checked``)."""
SINGLE_CALIBRATION_PATH = Path(__file__).with_name("confidence_calibration_single.json")
"""Fitted without them: used when ``hearing.stt_cross_check_model`` is "off"."""
MIN_CONFIDENCE = 0.001
"""Lowest computed confidence; exactly 0 is reserved for "the provider gave no signal"."""

FILLER_PHRASES = frozenset(
    {
        "you",
        "thank you",
        "thank you very much",
        "thanks",
        "thanks for watching",
        "thank you for watching",
        "thanks for watching and ill see you next time",
        "bye",
        "bye bye",
        "goodbye",
        "good night",
        "okay",
        "oh",
        "so",
        "the",
        "i",
        "hmm",
        "music",
        "applause",
        "silence",
    }
)
"""Texts Whisper is known to invent over near-silence and noise (normalised)."""


def has_repeated_word(text: str) -> bool:
    """Whether a word directly follows itself in ``text`` (after normalisation)."""
    words = normalise_text(text).split()
    return any(a == b for a, b in pairwise(words))


def normalise_text(text: str) -> str:
    """Lower-case, strip punctuation and bracketed sound tags, collapse spaces."""
    text = re.sub(r"[\[\(\*].*?[\]\)\*]", " ", text.lower())
    text = re.sub(r"[^a-z0-9' ]+", " ", text).replace("'", "")
    return " ".join(text.split())


def text_key(text: str) -> str:
    """``text`` normalised with spaces dropped: the same words however spelled apart, cased or
    punctuated ("Good bye." / "Goodbye" / "goodbye...")."""
    return normalise_text(text).replace(" ", "")


_FILLER_KEYS = frozenset(text_key(p) for p in FILLER_PHRASES)


def is_filler(text: str) -> bool:
    """Whether ``text`` is one of ``FILLER_PHRASES`` ("Goodnight." counts as "good night")."""
    return text_key(text) in _FILLER_KEYS


@dataclass(frozen=True, slots=True)
class ConfidenceFeatures:
    """Raw signals from one decode, before calibration."""

    avg_logprob: float
    """Mean token log-probability of the chosen hypothesis."""
    min_token_prob: float
    """Lowest probability of any text token (1.0 when unknown)."""
    mean_word_prob: float
    """Mean over words of the product of their token probabilities."""
    min_word_prob: float
    """Lowest word probability."""
    no_speech_prob: float
    """Whisper's no-speech probability."""
    compression_ratio: float
    """gzip compression ratio of the text (high = repetitive)."""
    fallbacks: int
    """Re-decodes needed (temperature fallback or full-window repetition guard)."""
    speech_ratio: float
    """Share of VAD speech frames in the utterance (1.0 when unknown)."""
    level_db: float
    """Loudness of the loudest 30 ms frames (90th percentile), dBFS."""
    audio_s: float
    """Utterance length in seconds."""
    n_words: int
    """Number of words in the transcript."""
    filler: bool
    """The transcript is one of Whisper's typical hallucinated fillers."""
    repeated_words: bool = False
    """Some word directly repeats ("9 9", "thanks thanks"), a typical short-window slip."""
    first_token_prob: float = 1.0
    """Probability of the first text token (1.0 when unknown)."""
    first_word_any_spelling: float = 1.0
    """Greedy pass: probability of its first word token in any spelling ("9" = " nine" = " Nine"),
    among the tokens that are words (1.0 when unknown)."""
    min_word_any_spelling: float = 1.0
    """Greedy pass: the lowest such probability over its word tokens (1.0 when unknown)."""
    nbest_posterior: float = 1.0
    """Posterior of these words among the N best of a beam search without timestamps (1.0 if not run)."""
    nbest_word_agreement: float = 1.0
    """Expected share of these words the N best keep (1 - their posterior-weighted WER; 1.0 if not run)."""
    min_token_margin: float = 20.0
    """Smallest log-probability margin of a greedy token over the best other token (nats)."""
    mean_token_margin: float = 20.0
    """Mean log-probability margin of the greedy tokens (nats; 20 when unknown)."""
    max_token_entropy: float = 0.0
    """Highest entropy of the greedy pass's next-token distributions (nats)."""
    mean_token_entropy: float = 0.0
    """Mean next-token entropy of the greedy pass (nats)."""
    changed_by_beam: bool = False
    """The beam search's best differs from the greedy transcript and replaced it."""
    voice_prob: float = 1.0
    """Silero VAD's speech probability of the utterance (``audio.hearing.voice_prob``; 1.0 when unknown)."""
    cross_checked: bool = False
    """A second recogniser transcribed the utterance too (``audio.hearing.cross_check``); the three
    ``cross_*`` features below are meaningful only then, and the cross-check calibration is used."""
    cross_word_disagreement: float = 0.0
    """Word edit distance to the second recogniser's transcript over the word count (≤ 1.5)."""
    cross_exact: bool = False
    """The second recogniser wrote the same words."""
    cross_char_similarity: float = 1.0
    """Letter-level similarity of the two transcripts (0..1)."""

    def as_dict(self) -> dict[str, float]:
        """Features as a plain dict (for JSON and fitting)."""
        return {k: float(v) for k, v in asdict(self).items()}


def feature_vector(f: ConfidenceFeatures, cross: bool | None = None) -> list[float]:
    """The model inputs derived from ``f``: ``FEATURE_NAMES``, then ``CROSS_FEATURE_NAMES`` when
    ``cross`` (default: when ``f.cross_checked``)."""
    level = max(-80.0, min(0.0, f.level_db))
    words_per_s = f.n_words / max(0.3, f.audio_s)
    filler = 1.0 if f.filler else 0.0
    return [
        max(-3.0, f.avg_logprob),
        math.log(max(1e-4, f.min_token_prob)),
        math.log(max(1e-4, f.mean_word_prob)),
        math.log(max(1e-4, f.min_word_prob)),
        f.no_speech_prob,
        min(2.0, max(0.0, f.compression_ratio - 1.6)),  # only repetitive text; short text compresses badly
        float(min(f.fallbacks, 3)),
        f.speech_ratio,
        (level + 40.0) / 20.0,
        min(6.0, words_per_s),
        filler,
        filler * f.no_speech_prob,
        filler * (level + 40.0) / 20.0,
        filler * (1.0 - f.speech_ratio),
        1.0 if f.repeated_words else 0.0,
        min(f.n_words, 6) / 6.0,  # capped: training sentences are short, do not extrapolate
        math.log(max(1e-3, f.nbest_posterior)),
        f.nbest_word_agreement,
        1.0 if f.changed_by_beam else 0.0,
        min(10.0, f.min_token_margin),
        min(10.0, f.mean_token_margin),
        f.max_token_entropy,
        f.mean_token_entropy,
        math.log(max(1e-4, f.first_token_prob)),
        math.log(max(0.01, f.voice_prob)),
        filler * (1.0 - f.voice_prob),
        math.log(max(1e-4, f.first_word_any_spelling)),
        math.log(max(1e-4, f.min_word_any_spelling)),
    ] + (cross_vector(f) if (f.cross_checked if cross is None else cross) else [])


def cross_vector(f: ConfidenceFeatures) -> list[float]:
    """The cross-check inputs (order matches ``CROSS_FEATURE_NAMES``)."""
    return [f.cross_word_disagreement, 1.0 if f.cross_exact else 0.0, f.cross_char_similarity]


FEATURE_NAMES = (
    "avg_logprob",
    "log_min_token_prob",
    "log_mean_word_prob",
    "log_min_word_prob",
    "no_speech_prob",
    "compression_ratio",
    "fallbacks",
    "speech_ratio",
    "level",
    "words_per_s",
    "filler",
    "filler_x_no_speech",
    "filler_x_level",
    "filler_x_nonspeech_ratio",
    "repeated_words",
    "n_words_capped",
    "log_nbest_posterior",
    "nbest_word_agreement",
    "changed_by_beam",
    "min_token_margin",
    "mean_token_margin",
    "max_token_entropy",
    "mean_token_entropy",
    "log_first_token_prob",
    "log_voice_prob",
    "filler_x_nonvoice",
    "log_first_word_any_spelling",
    "log_min_word_any_spelling",
)
CROSS_FEATURE_NAMES = ("cross_word_disagreement", "cross_exact", "cross_char_similarity")


@dataclass(frozen=True, slots=True)
class Calibration:
    """Logistic regression over standardised ``feature_vector`` inputs."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def probability(self, x: list[float]) -> float:
        """P(transcript right | features)."""
        z = self.intercept
        for xi, m, s, c in zip(x, self.mean, self.scale, self.coef, strict=True):
            z += c * (xi - m) / s
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def to_json(self) -> str:
        """Serialise for ``confidence_calibration.json``."""
        return json.dumps(asdict(self), indent=2) + "\n"


def calibration_names(cross: bool) -> tuple[str, ...]:
    """Feature names of the calibration with (``cross``) or without the cross-check features."""
    return FEATURE_NAMES + (CROSS_FEATURE_NAMES if cross else ())


_HAND_SET = {
    "avg_logprob": 1.5,
    "log_min_token_prob": 0.3,
    "log_mean_word_prob": 0.8,
    "log_min_word_prob": 0.3,
    "no_speech_prob": -2.0,
    "compression_ratio": -1.0,
    "fallbacks": -0.5,
    "speech_ratio": 1.0,
    "level": 0.5,
    "filler": -0.5,
    "filler_x_no_speech": -1.0,
    "filler_x_level": 0.5,
    "filler_x_nonspeech_ratio": -1.0,
    "repeated_words": -1.0,
    "n_words_capped": 0.5,
    "log_nbest_posterior": 1.0,
    "nbest_word_agreement": 1.0,
    "changed_by_beam": -0.5,
    "min_token_margin": 0.3,
    "mean_token_margin": 0.3,
    "max_token_entropy": -0.3,
    "mean_token_entropy": -0.3,
    "log_first_token_prob": 0.3,
    "log_voice_prob": 1.0,
    "filler_x_nonvoice": -1.0,
    "cross_word_disagreement": -1.0,
    "cross_exact": 0.5,
    "cross_char_similarity": 1.0,
}
"""Rough weights per feature (unlisted ones: 0), used only while no fitted calibration is usable."""


def _heuristic_calibration(cross: bool) -> Calibration:
    """Hand-set weights used until a fitted calibration file exists."""
    names = calibration_names(cross)
    n = len(names)
    return Calibration(names, (0.0,) * n, (1.0,) * n, tuple(_HAND_SET.get(k, 0.0) for k in names), 2.0)


@lru_cache(maxsize=2)
def load_calibration(cross: bool = True, path: Path | None = None) -> Calibration:
    """The fitted calibration (with or without the cross-check features; from ``path`` if given),
    or hand-set weights (with a warning) if the file is missing or stale."""
    if path is None:
        path = CALIBRATION_PATH if cross else SINGLE_CALIBRATION_PATH
    try:
        raw = json.loads(path.read_text())
        cal = Calibration(
            names=tuple(raw["names"]),
            mean=tuple(raw["mean"]),
            scale=tuple(raw["scale"]),
            coef=tuple(raw["coef"]),
            intercept=float(raw["intercept"]),
        )
    except (OSError, ValueError, KeyError) as err:
        _LOGGER.warning("no usable confidence calibration at %s (%s); using hand-set weights", path, err)
        return _heuristic_calibration(cross)
    if cal.names != calibration_names(cross):
        _LOGGER.warning("confidence calibration %s has other features; using hand-set weights", path)
        return _heuristic_calibration(cross)
    return cal


def score(features: ConfidenceFeatures, calibration: Calibration | None = None) -> float:
    """Calibrated confidence in [MIN_CONFIDENCE, 1] for a non-empty transcript."""
    cal = calibration or load_calibration(features.cross_checked)
    p = cal.probability(feature_vector(features))
    return min(1.0, max(MIN_CONFIDENCE, p))
