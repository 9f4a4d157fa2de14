"""One transcript from several decodes: the parts of a long utterance, or the utterances of a clip."""

from __future__ import annotations

from collections.abc import Sequence

from audio.hearing.engine import Transcription


def join_transcriptions(parts: Sequence[Transcription], language: str) -> Transcription:
    """Join decodes in order into one ``Transcription``.

    Text: the non-empty texts joined with spaces (a part that starts in lower case after one that
    ended a sentence -- Whisper decoded it without the words before -- gets a capital).
    Confidence: the audio-duration-weighted mean of the scored parts' (the expected share of the
    audio heard right; at least 0.001). Exactly 0 -- the provider gave no signal -- stays 0 when no
    part with text was scored, and a part without a signal is left out of the mean rather than
    counted as heard wrong. ``audio_ms`` and ``decode_ms`` are summed; ``features`` are kept only
    when a single part produced text.
    """
    spoken = [p for p in parts if p.text]
    scored = [p for p in spoken if p.confidence > 0.0]
    weight = sum(max(1, p.audio_ms) for p in scored)
    confidence = sum(p.confidence * max(1, p.audio_ms) for p in scored) / weight if scored else 0.0
    return Transcription(
        text=_joined([p.text.strip() for p in spoken]),
        confidence=max(confidence, 0.001) if scored else 0.0,
        language=language,
        audio_ms=sum(p.audio_ms for p in parts),
        decode_ms=sum(p.decode_ms for p in parts),
        features=spoken[0].features if len(spoken) == 1 else None,
    )


def _joined(texts: list[str]) -> str:
    out: list[str] = []
    for text in texts:
        if out and out[-1].endswith((".", "!", "?")) and text[:1].islower():
            text = text[0].upper() + text[1:]
        out.append(text)
    return " ".join(out)
