"""Transcribe a whole clip through exactly the runtime's path: segmenter (VAD endpointer) + STT."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audio.edges.wav import FloatArray, WavError, load_audio
from audio.hearing.engine import Engine, Transcription
from audio.hearing.settings import HearingSettings
from audio.hearing.utterance_parts import join_transcriptions
from audio.hearing.vad import UtteranceComplete, UtterancePart, UtteranceRejected, segment_audio

_LOGGER = logging.getLogger(__name__)


def load_clip(path: str | Path, rate: int = 16000) -> FloatArray:
    """Read a WAV with ``audio.edges.wav``; other formats (flac, mp3...) through PyAV."""
    try:
        return load_audio(path, rate)
    except WavError:
        from faster_whisper.audio import decode_audio

        return np.asarray(decode_audio(str(path), sampling_rate=rate), dtype=np.float32)


@dataclass(frozen=True, slots=True)
class ClipResult:
    """A clip's combined transcript (utterances joined) and per-utterance results."""

    text: str
    confidence: float
    language: str
    audio_ms: int
    decode_ms: int
    utterances: tuple[Transcription, ...]
    rejected: tuple[str, ...]


def transcribe_clip(samples: FloatArray, transcriber: Engine, settings: HearingSettings) -> ClipResult:
    """Segment ``samples`` like the Listener does and transcribe every utterance.

    Text is the utterances' (and long utterances' parts') texts joined; confidence is their
    duration-weighted mean (0 when nothing was heard; ``join_transcriptions``).
    """
    results: list[Transcription] = []
    rejected: list[str] = []
    for ev in segment_audio(samples, settings):
        if isinstance(ev, UtterancePart | UtteranceComplete) and len(ev.audio):
            results.append(transcriber.transcribe(ev.audio, speech_ratio=ev.speech_ratio))
        elif isinstance(ev, UtteranceRejected):
            rejected.append(ev.reason)
    joined = join_transcriptions(results, transcriber.language)
    return ClipResult(
        text=joined.text,
        confidence=joined.confidence,
        language=transcriber.language,
        audio_ms=round(len(samples) * 1000 / settings.sample_rate),
        decode_ms=joined.decode_ms,
        utterances=tuple(results),
        rejected=tuple(rejected),
    )
