"""One Whisper decode and the confidence features it gives (pure: no model).

``Decode`` is what ``audio.hearing.whisper_stt`` reads from one pass of the decoder (tokens, their
probabilities, margins and entropies, loop and repeat flags); ``confidence_features`` turns it,
with what is known about the utterance (``DecodeContext``), into the ``ConfidenceFeatures`` that
``audio.hearing.confidence.score`` calibrates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from audio.hearing.confidence import ConfidenceFeatures, has_repeated_word, is_filler, normalise_text
from audio.hearing.cross_check import Agreement
from audio.hearing.transcript_checks import NBest


@dataclass(frozen=True, slots=True)
class Decode:
    tokens: list[int]
    text: str
    avg_logprob: float
    token_probs: list[float]
    token_margins: list[float]
    """Of the greedy pass, also when the beam's text replaced it (how torn the decoder was)."""
    token_entropies: list[float]
    no_speech_prob: float
    token_any_spelling: list[float]
    """Of the greedy pass: each token's word probability in any spelling (NaN: not a word)."""
    compression_ratio: float
    looped: bool
    repeated: bool
    encoder_output: Any = None
    end_prob: float | None = None
    """Probability of a sentence mark right after the last word (``end_punctuation_prob``)."""
    unfinished_at: float | None = None
    """Where the last segment, left unread because Whisper took it to go on past the window, starts
    (seconds); None when the decode read to its end."""


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """What the confidence needs beside the decode itself."""

    fallbacks: int
    """Repeated text dropped plus decodes redone on the full window."""
    speech_ratio: float
    level_db: float
    audio_s: float
    nbest: NBest
    changed_by_beam: bool
    voice_prob: float


def confidence_features(d: Decode, word_probs: list[float], ctx: DecodeContext) -> ConfidenceFeatures:
    """The features of a decode ``d`` with text, its per-word probabilities, and ``ctx``."""
    words = word_probs or [0.0]
    spelled = [p for p in d.token_any_spelling if not math.isnan(p)]
    return ConfidenceFeatures(
        avg_logprob=d.avg_logprob,
        min_token_prob=min(d.token_probs) if d.token_probs else 1.0,
        first_token_prob=d.token_probs[0] if d.token_probs else 1.0,
        first_word_any_spelling=spelled[0] if spelled else 1.0,
        min_word_any_spelling=min(spelled) if spelled else 1.0,
        min_token_margin=min(d.token_margins) if d.token_margins else 20.0,
        mean_token_margin=float(np.mean(d.token_margins)) if d.token_margins else 20.0,
        max_token_entropy=max(d.token_entropies) if d.token_entropies else 0.0,
        mean_token_entropy=float(np.mean(d.token_entropies)) if d.token_entropies else 0.0,
        mean_word_prob=float(np.mean(words)),
        min_word_prob=float(min(words)),
        no_speech_prob=d.no_speech_prob,
        compression_ratio=d.compression_ratio,
        fallbacks=ctx.fallbacks,
        speech_ratio=ctx.speech_ratio,
        level_db=ctx.level_db,
        audio_s=ctx.audio_s,
        n_words=len(normalise_text(d.text).split()),
        filler=is_filler(d.text),
        repeated_words=has_repeated_word(d.text),
        nbest_posterior=ctx.nbest.posterior,
        nbest_word_agreement=ctx.nbest.word_agreement,
        changed_by_beam=ctx.changed_by_beam,
        voice_prob=ctx.voice_prob,
    )


def cross_checked(features: ConfidenceFeatures, agree: Agreement) -> ConfidenceFeatures:
    """``features`` with the second recogniser's agreement."""
    return replace(
        features,
        cross_checked=True,
        cross_word_disagreement=agree.word_disagreement,
        cross_exact=agree.exact,
        cross_char_similarity=agree.char_similarity,
    )
