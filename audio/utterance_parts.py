"""One transcript from several decodes: the parts of a long utterance, or the utterances of a clip."""

from __future__ import annotations

from collections.abc import Sequence

from audio.stt import Transcription


def join_transcriptions(parts: Sequence[Transcription], language: str) -> Transcription:
    """Join decodes in order into one ``Transcription``.

    Text: the non-empty texts joined with spaces. Confidence: their audio-duration-weighted mean
    (the expected share of the audio heard right; at least 0.001 when there is text, 0 when there
    is none). ``audio_ms`` and ``decode_ms`` are summed; ``features`` are kept only when a single
    part produced text.
    """
    spoken = [p for p in parts if p.text]
    weight = sum(max(1, p.audio_ms) for p in spoken)
    confidence = sum(p.confidence * max(1, p.audio_ms) for p in spoken) / weight if spoken else 0.0
    return Transcription(
        text=" ".join(p.text.strip() for p in spoken),
        confidence=max(confidence, 0.001) if spoken else 0.0,
        language=language,
        audio_ms=sum(p.audio_ms for p in parts),
        decode_ms=sum(p.decode_ms for p in parts),
        features=spoken[0].features if len(spoken) == 1 else None,
    )
