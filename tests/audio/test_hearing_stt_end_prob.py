"""The decoder's probability of a sentence mark after the last word (``Transcription.end_prob``):
pure tests on synthetic logits, and the real Whisper ranking a whole sentence above its first half."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from audio.hearing.confidence_signals import (
    SpellingKeys,
    end_punctuation_prob,
    sentence_end_ids,
    sentence_mark_prob,
)
from audio.hearing.settings import HearingSettings
from audio.hearing.whisper_stt import WhisperTranscriber
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_silence

VOCAB = [" the", " sea", ".", "?", "!", ",", "...", '."', " and", "", "…", "?!"]
"""A toy vocabulary: token id = index; "" stands for a special or timestamp token."""


def _keys() -> SpellingKeys:
    return SpellingKeys.build(lambda i: VOCAB[i], len(VOCAB), lambda s: s.strip('.,?!…" ').lower())


def _logits(**mass: float) -> np.ndarray:
    """Logits whose softmax gives each named token its share (the rest to " and")."""
    p = np.full(len(VOCAB), 1e-9)
    for word, share in mass.items():
        p[VOCAB.index({"full": ".", "comma": ",", "ellipsis": "...", "sea": " sea", "q": "?"}[word])] = share
    p[VOCAB.index(" and")] = max(1e-9, 1.0 - sum(mass.values()))
    return np.log(p)


def test_sentence_marks_are_stops_questions_and_exclamations_never_an_ellipsis() -> None:
    ids = sentence_end_ids(lambda i: VOCAB[i], len(VOCAB))
    assert sorted(VOCAB[i] for i in ids) == sorted([".", "?", "!", '."', "?!"])


def test_end_probability_is_read_at_the_step_after_the_last_word() -> None:
    keys, ends = _keys(), sentence_end_ids(lambda i: VOCAB[i], len(VOCAB))
    ids = [0, 1, 5]  # " the", " sea", "," : the decoder chose a comma after " sea"
    steps = [_logits(sea=0.9), _logits(sea=0.9), _logits(comma=0.5, full=0.3, q=0.1)]
    got = end_punctuation_prob(steps, ids, keys, ends)
    assert got is not None and math.isclose(got, 0.4, abs_tol=1e-3)
    assert sentence_mark_prob(steps[2], ends) == pytest.approx(got)


def test_no_word_no_end_probability() -> None:
    keys, ends = _keys(), sentence_end_ids(lambda i: VOCAB[i], len(VOCAB))
    assert end_punctuation_prob([_logits(full=0.9)], [2], keys, ends) is None
    assert end_punctuation_prob([_logits(sea=0.9)], [1], keys, ends) is None  # no step after the word
    assert sentence_mark_prob(_logits(full=0.9), np.zeros(0, np.int64)) is None


def _jfk() -> np.ndarray:
    from faster_whisper import decode_audio

    return np.asarray(decode_audio(str(HEARING_SPEECH_DIR / "jfk/jfk.flac"), 16000), np.float32)


@pytest.fixture(scope="module")
def float32_transcriber(hearing_settings: HearingSettings) -> WhisperTranscriber:
    """Whisper decoding in float32: the same on every x86 and ARM CPU within rounding. CTranslate2's
    int8 GEMM without Intel MKL (every non-Intel x86 CPU) runs on oneDNN's u8s8 kernels, whose AVX2
    path saturates: on an AMD EPYC without VNNI the int8 decode writes no punctuation at all (JFK's
    whole sentence: no full stop, ``end_prob`` 0.00; float32 0.63, int8 with MKL forced 0.68)."""
    t = WhisperTranscriber(replace(hearing_settings, stt_compute_type="float32"))
    t.load()
    return t


def test_a_whole_sentence_is_expected_to_end_and_its_first_half_is_not(
    float32_transcriber: WhisperTranscriber,
) -> None:
    jfk = _jfk()  # "... ask not what your country | can do for you, ask what you can do for your country."
    whole = float32_transcriber.transcribe(np.concatenate([jfk, hearing_silence(0.2)]))
    half = float32_transcriber.transcribe(np.concatenate([jfk[: int(6.2 * 16000)], hearing_silence(0.2)]))
    assert whole.end_prob is not None and half.end_prob is not None
    assert whole.end_prob >= 0.5 > half.end_prob
    assert whole.end_prob > half.end_prob + 0.3
