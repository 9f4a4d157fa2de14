"""Lip-sync timelines: mouth shapes from Piper phoneme alignments, or from the loudness envelope.

Both builders are pure: they return ``VisemeCue``s relative to the piece's first sample, sorted,
contiguous, starting at 0 and ending at the audio's duration.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audio.edges.wav import FloatArray
from audio.events import Viseme, VisemeCue

_GROUPS: dict[Viseme, str] = {
    "aa": "aɑæʌɐɒəɜɚaɶ",
    "ee": "iɪeɛjᵻɨ",
    "oo": "ouʊɔwɵyøœɹʉɤ",
    "mbp": "mbpɱ",
    "fv": "fv",
    "l": "lɫɬtdnɾθðkɡgŋhxɣcɲʔ",
    "s": "szʃʒçʂʐɕʑ",
}
_PHONEME_VISEME: dict[str, Viseme] = {ch: vis for vis, chars in _GROUPS.items() for ch in chars}
_SILENT = frozenset("^$_ .,;:!?…-—–\"'()")
_PREFIX_MODIFIERS = frozenset("ˈˌ")
_SUFFIX_MODIFIERS = frozenset("ːˑ̩̃")
_ENVELOPE_STEP_S = 0.04


def phoneme_viseme(phoneme: str) -> Viseme:
    """Mouth shape for one IPA phoneme (espeak-ng style); silence and punctuation are ``rest``."""
    if not phoneme or phoneme in _SILENT or phoneme.isspace():
        return "rest"
    return _PHONEME_VISEME.get(phoneme[0], "l")


def visemes_from_alignments(
    alignments: Sequence[tuple[str, int]], rate: int, total_samples: int
) -> tuple[VisemeCue, ...]:
    """Timeline from (phoneme, sample count) pairs, scaled to ``total_samples`` at ``rate`` Hz.

    Stress marks take the shape of the phoneme after them, length marks the one before them.
    """
    if not alignments or total_samples <= 0 or rate <= 0:
        return ()
    shapes: list[Viseme | None] = []
    for phoneme, _ in alignments:
        if phoneme in _PREFIX_MODIFIERS or phoneme in _SUFFIX_MODIFIERS:
            shapes.append(None)
        else:
            shapes.append(phoneme_viseme(phoneme))
    for i, (phoneme, _) in enumerate(alignments):
        if shapes[i] is not None:
            continue
        step = 1 if phoneme in _PREFIX_MODIFIERS else -1
        j = i + step
        while 0 <= j < len(shapes) and shapes[j] is None:
            j += step
        shapes[i] = shapes[j] if 0 <= j < len(shapes) else "rest"
    counts = np.array([max(0, int(n)) for _, n in alignments], dtype=np.float64)
    aligned = counts.sum()
    if aligned <= 0:
        return ()
    duration = total_samples / rate
    edges = np.concatenate(([0.0], np.cumsum(counts))) / aligned * duration
    segments = [(float(edges[i]), float(edges[i + 1]), shape) for i, shape in enumerate(shapes)]
    return _merge([(a, b, s if s is not None else "rest") for a, b, s in segments], duration)


def visemes_from_envelope(audio: FloatArray, rate: int) -> tuple[VisemeCue, ...]:
    """Fallback timeline from loudness (and zero-crossing rate for hiss) in 40 ms steps."""
    if len(audio) == 0 or rate <= 0:
        return ()
    duration = len(audio) / rate
    step = max(1, int(rate * _ENVELOPE_STEP_S))
    frames = [audio[i : i + step] for i in range(0, len(audio), step)]
    rms = np.array([float(np.sqrt(np.mean(np.square(f)))) for f in frames])
    peak = float(rms.max()) if len(rms) else 0.0
    segments: list[tuple[float, float, Viseme]] = []
    for i, frame in enumerate(frames):
        level = rms[i] / peak if peak > 1e-6 else 0.0
        crossings = (
            float(np.mean(np.abs(np.diff(np.signbit(frame).astype(np.int8))))) if len(frame) > 1 else 0
        )
        shape: Viseme
        if level < 0.08:
            shape = "rest"
        elif crossings > 0.25:
            shape = "s"
        elif level < 0.35:
            shape = "l"
        elif level < 0.7:
            shape = "ee"
        else:
            shape = "aa"
        start = i * step / rate
        segments.append((start, min(duration, start + len(frame) / rate), shape))
    return _merge(segments, duration)


def _merge(segments: Sequence[tuple[float, float, Viseme]], duration: float) -> tuple[VisemeCue, ...]:
    """Join neighbours with the same shape, drop empty ones, pin the ends to 0 and ``duration``."""
    cues: list[VisemeCue] = []
    for start, end, shape in segments:
        if end <= start:
            continue
        if cues and cues[-1].viseme == shape:
            cues[-1] = VisemeCue(start=cues[-1].start, end=end, viseme=shape)
        else:
            cues.append(VisemeCue(start=cues[-1].end if cues else 0.0, end=end, viseme=shape))
    if cues:
        cues[0] = VisemeCue(start=0.0, end=cues[0].end, viseme=cues[0].viseme)
        cues[-1] = VisemeCue(start=cues[-1].start, end=duration, viseme=cues[-1].viseme)
    return tuple(cues)
