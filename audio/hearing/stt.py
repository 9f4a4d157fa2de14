"""Speech-to-text: the engine named in the settings, behind the speech gate.

``make_transcriber`` builds it: ``audio.hearing.whisper_stt.WhisperTranscriber`` (faster-whisper on
the device, the default) or ``audio.hearing.stt_openai.OpenAITranscriber`` (an OpenAI-compatible
endpoint, for devices too weak for local Whisper), each behind ``audio.hearing.speech_gate``, so
every engine gets the same "is this speech?" check. The interface (``Transcriber``), what a decode
gives (``Transcription``), its cancel token (``CancelToken``, ``DecodeCancelled``) and
``ModelUnavailable`` live in ``audio.hearing.engine`` and are
re-exported here.
"""

from __future__ import annotations

from audio.hearing.engine import (
    SAMPLE_RATE,
    CancelToken,
    DecodeCancelled,
    Engine,
    ModelUnavailable,
    Transcriber,
    Transcription,
)
from audio.hearing.settings import STT_PROVIDERS, HearingSettings
from audio.hearing.speech_gate import SpeechGate

__all__ = [
    "SAMPLE_RATE",
    "CancelToken",
    "DecodeCancelled",
    "Engine",
    "ModelUnavailable",
    "Transcriber",
    "Transcription",
    "make_transcriber",
]


def make_transcriber(settings: HearingSettings) -> Engine:
    """The engine named by ``settings.stt_provider`` ("whisper" or "openai") behind the speech gate;
    not loaded yet."""
    engine: Engine
    if settings.stt_provider == "whisper":
        from audio.hearing.whisper_stt import WhisperTranscriber

        engine = WhisperTranscriber(settings)
    elif settings.stt_provider == "openai":
        from audio.hearing.stt_openai import OpenAITranscriber

        engine = OpenAITranscriber(settings)
    else:
        raise ValueError(
            f"unknown stt_provider {settings.stt_provider!r} (use one of {', '.join(STT_PROVIDERS)})"
        )
    return SpeechGate(engine, settings.tone_gate_share)
