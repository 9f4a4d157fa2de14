"""Transcribe a whole clip through exactly the runtime's path: segmenter (VAD endpointer) + STT."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audio.hearing_settings import HearingSettings
from audio.stt import Transcription, WhisperTranscriber
from audio.vad import UtteranceComplete, segment_audio
from audio.wav import FloatArray, WavError, load_audio

_LOGGER = logging.getLogger(__name__)


def load_clip(path: str | Path, rate: int = 16000) -> FloatArray:
    """Read a WAV with ``audio.wav``; other formats (flac, mp3...) through PyAV."""
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


def transcribe_clip(
    samples: FloatArray, transcriber: WhisperTranscriber, settings: HearingSettings
) -> ClipResult:
    """Segment ``samples`` like the Listener does and transcribe every utterance.

    Text is the utterances' texts joined; confidence is their duration-weighted mean (0 when nothing
    was heard).
    """
    results: list[Transcription] = []
    rejected: list[str] = []
    for ev in segment_audio(samples, settings):
        if isinstance(ev, UtteranceComplete):
            results.append(transcriber.transcribe(ev.audio, speech_ratio=ev.speech_ratio))
        elif hasattr(ev, "reason"):
            rejected.append(ev.reason)
    spoken = [r for r in results if r.text]
    text = " ".join(r.text for r in spoken)
    weight = sum(r.audio_ms for r in spoken)
    conf = sum(r.confidence * r.audio_ms for r in spoken) / weight if weight else 0.0
    if spoken:
        conf = max(conf, 0.001)
    return ClipResult(
        text=text,
        confidence=conf,
        language=transcriber.language,
        audio_ms=round(len(samples) * 1000 / settings.sample_rate),
        decode_ms=sum(r.decode_ms for r in results),
        utterances=tuple(results),
        rejected=tuple(rejected),
    )
