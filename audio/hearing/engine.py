"""What every speech-to-text engine shares: the interface the Listener calls, what a decode gives,
and the error for a model that cannot be loaded.

The engines (``audio.hearing.whisper_stt``, ``audio.hearing.stt_openai``) and the speech gate in
front of them (``audio.hearing.speech_gate``) import this module; ``audio.hearing.stt`` builds the
engine the settings name and imports them, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from audio.edges.wav import FloatArray
from audio.hearing.confidence import ConfidenceFeatures

SAMPLE_RATE = 16000
"""Every engine takes 16 kHz mono float32."""


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
    end_prob: float | None = None
    """How sure the decoder was that the words end a sentence: the probability it gave a full stop,
    question or exclamation mark right after the last word (None: not known, e.g. a remote engine)."""


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


class Engine(Transcriber, Protocol):
    """A speech-to-text engine: a ``Transcriber`` that says which language it reports (both engines
    and the speech gate are)."""

    @property
    def language(self) -> str:
        """The language transcripts are reported in."""
        ...
