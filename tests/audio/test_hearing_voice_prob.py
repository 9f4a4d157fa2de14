"""Silero VAD's utterance-level speech probability (the confidence feature ``voice_prob``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.voice_prob import CHUNK, chunk_probabilities, voice_probability
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.stt_clip import load_clip
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_noise, hearing_silence
from tests.audio.test_hearing_tones import tone


def test_speech_scores_high_and_sounds_low(hearing_say: Callable[[str], FloatArray]) -> None:
    assert voice_probability(load_clip(HEARING_SPEECH_DIR / "jfk" / "jfk.flac")) > 0.8
    digits = [voice_probability(load_clip(p)) for p in sorted((HEARING_SPEECH_DIR / "fsdd").glob("*.wav"))]
    assert np.median(digits) > 0.8 and len(digits) > 100
    assert voice_probability(hearing_say("Good night.")) > 0.8
    for sound in (
        hearing_silence(1.0),
        hearing_noise(1.5, -30.0),
        tone([1000.0], 1.0),
        load_clip(HEARING_SPEECH_DIR / "nonspeech" / "processing.wav"),
    ):
        assert voice_probability(sound) < 0.3


def test_chunks_padding_and_input_left_alone() -> None:
    x = hearing_noise(1.0, -30.0)
    before = x.copy()
    probs = chunk_probabilities(x)
    assert len(probs) == -(-len(x) // CHUNK) and np.all((probs >= 0) & (probs <= 1))
    assert np.array_equal(x, before)  # faster-whisper's runner writes into its input: we pass a copy
    assert 0.0 <= voice_probability(np.zeros(0, dtype=np.float32)) < 0.3
    assert 0.0 <= voice_probability(np.zeros(100, dtype=np.float32)) < 0.3


def test_transcript_features_carry_it(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    res = hearing_transcriber.transcribe(hearing_say("Turn on the lights in the kitchen."))
    assert res.features is not None and res.features.voice_prob > 0.8
