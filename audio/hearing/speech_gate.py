"""The speech gate in front of every speech-to-text engine: audio that is not speech gets no
transcript and never reaches the engine.

Today it holds one check: a pure tone (a chime, a phone's beep, the robot's own earcon through the
echo tail) is not speech (``audio.hearing.tones``; ``hearing.tone_gate_share``). Whisper would
happily read such a tone as "Bye." and the remote engine would be paid to; the gate stops it for
both. ``audio.hearing.stt.make_transcriber`` puts it in front of the engine the settings name.
"""

from __future__ import annotations

import logging
import time
from typing import Generic, TypeVar

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.engine import SAMPLE_RATE, Engine, Transcription
from audio.hearing.tones import is_pure_tone

_LOGGER = logging.getLogger(__name__)

E = TypeVar("E", bound=Engine)


def not_speech(samples: FloatArray, tone_gate_share: float) -> str | None:
    """Why ``samples`` are not speech ("a tone"), or None when they may be speech."""
    if is_pure_tone(samples, tone_gate_share):
        return "a tone"
    return None


class SpeechGate(Generic[E]):
    """An ``Engine`` that hands ``engine`` only what may be speech; ``tone_gate_share`` is
    ``hearing.tone_gate_share`` (1.0 turns the tone check off)."""

    def __init__(self, engine: E, tone_gate_share: float) -> None:
        self.engine = engine
        self.tone_gate_share = tone_gate_share

    def load(self) -> None:
        """Load the engine."""
        self.engine.load()

    def set_language(self, lang: str) -> None:
        """Switch the engine's decoding language."""
        self.engine.set_language(lang)

    def prepare(self) -> None:
        """The microphone opened: the engine may get ready what it opens lazily (if it does)."""
        prepare = getattr(self.engine, "prepare", None)
        if prepare is not None:
            prepare()

    def rest(self) -> None:
        """The microphone closed (asleep): the engine may let go of what it opens lazily."""
        rest = getattr(self.engine, "rest", None)
        if rest is not None:
            rest()

    @property
    def language(self) -> str:
        """The engine's language."""
        return self.engine.language

    def transcribe(self, samples: FloatArray, speech_ratio: float | None = None) -> Transcription:
        """The engine's transcript, or an empty one (confidence 0, no features) for audio that is
        not speech; blocking, call from a worker thread."""
        t0 = time.monotonic()
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        why = not_speech(samples, self.tone_gate_share)
        if why is None:
            return self.engine.transcribe(samples, speech_ratio)
        seconds = len(samples) / SAMPLE_RATE
        _LOGGER.info("utterance of %.1f s is %s, not speech: no transcript", seconds, why)
        audio_ms = round(seconds * 1000)
        decode_ms = round((time.monotonic() - t0) * 1000)
        return Transcription("", 0.0, self.engine.language, audio_ms, decode_ms, None)
