"""Optional remote STT: an OpenAI-compatible ``/audio/transcriptions`` endpoint.

Same interface as ``WhisperTranscriber`` (``load``, ``transcribe``, ``set_language``). Confidence
comes from what the endpoint returns: token log-probs (``include=["logprobs"]``, gpt-4o models) or
segment ``avg_logprob``/``no_speech_prob`` (``verbose_json``, whisper-1); when it returns neither the
confidence is exactly 0 ("the provider gave no signal").
"""

from __future__ import annotations

import logging
import math
import os
import time
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray, encode_wav
from audio.hearing.confidence import MIN_CONFIDENCE
from audio.hearing.engine import SAMPLE_RATE, CancelToken, Transcription, check_cancel
from audio.hearing.settings import HearingSettings

_LOGGER = logging.getLogger(__name__)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def confidence_from_response(resp: Any) -> float:
    """Confidence from log-probs or segment statistics in a transcription response; 0 if none."""
    logprobs = _get(resp, "logprobs")
    if logprobs:
        values = [float(_get(lp, "logprob")) for lp in logprobs if _get(lp, "logprob") is not None]
        if values:
            return min(1.0, max(MIN_CONFIDENCE, math.exp(sum(values) / len(values))))
    segments = _get(resp, "segments")
    if segments:
        avg = [float(_get(s, "avg_logprob")) for s in segments if _get(s, "avg_logprob") is not None]
        nsp = [float(_get(s, "no_speech_prob") or 0.0) for s in segments]
        if avg:
            p = math.exp(sum(avg) / len(avg)) * (1.0 - max(nsp, default=0.0))
            return min(1.0, max(MIN_CONFIDENCE, p))
    return 0.0


def _language_code(returned: Any, asked: str) -> str:
    """The endpoint's language if it is a code ("en"); whisper-1 returns names ("english")."""
    return returned if isinstance(returned, str) and len(returned) == 2 else asked


class OpenAITranscriber:
    """Transcribes through an OpenAI-compatible endpoint; blocking, call from a worker thread."""

    def __init__(self, settings: HearingSettings) -> None:
        self.settings = settings
        self._language = settings.stt_language or "en"
        self._client: Any = None

    @property
    def language(self) -> str:
        """Language passed to the endpoint."""
        return self._language

    def set_language(self, lang: str) -> None:
        """Switch the decoding language."""
        self._language = lang or "en"

    def load(self) -> None:
        """Create the client (no network traffic)."""
        import openai

        s = self.settings
        self._client = openai.OpenAI(
            api_key=os.environ.get(s.stt_openai_api_key_env) or "unset",
            base_url=s.stt_openai_base_url or None,
            timeout=s.stt_timeout_s,
            max_retries=0,
        )

    def transcribe(
        self, samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        """Send one utterance; raises on transport or HTTP errors (the Listener reports stt_error).
        A ``cancel`` set before the request sends nothing; one set while it runs drops its answer
        (both raise ``DecodeCancelled``)."""
        if self._client is None:
            raise RuntimeError("OpenAITranscriber.load() has not been called")
        check_cancel(cancel, "before its request")
        t0 = time.monotonic()
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        model = self.settings.stt_openai_model
        kwargs: dict[str, Any] = {"model": model, "language": self._language}
        if model.startswith("gpt-4o"):
            kwargs.update(response_format="json", include=["logprobs"])
        else:
            kwargs.update(response_format="verbose_json")
        resp = self._client.audio.transcriptions.create(
            file=("utterance.wav", encode_wav(samples, SAMPLE_RATE), "audio/wav"), **kwargs
        )
        check_cancel(cancel, "during its request")
        text = str(_get(resp, "text") or "").strip()
        confidence = confidence_from_response(resp) if text else 0.0
        return Transcription(
            text=text,
            confidence=confidence,
            language=_language_code(_get(resp, "language"), self._language),
            audio_ms=round(len(samples) * 1000 / SAMPLE_RATE),
            decode_ms=round((time.monotonic() - t0) * 1000),
            features=None,
        )
