"""Viseme timelines from alignments and from the loudness envelope (pure)."""

from __future__ import annotations

import itertools

import numpy as np

from audio.events import VisemeCue
from audio.speaking.visemes import phoneme_viseme, visemes_from_alignments, visemes_from_envelope


def _check_timeline(cues: tuple[VisemeCue, ...], duration: float) -> None:
    assert cues
    assert cues[0].start == 0.0
    assert abs(cues[-1].end - duration) < 1e-9
    for a, b in itertools.pairwise(cues):
        assert a.end == b.start
        assert a.viseme != b.viseme
    assert all(c.end > c.start for c in cues)


def test_phoneme_mapping() -> None:
    assert phoneme_viseme("m") == "mbp"
    assert phoneme_viseme("f") == "fv"
    assert phoneme_viseme("ɑ") == "aa"
    assert phoneme_viseme("i") == "ee"
    assert phoneme_viseme("u") == "oo"
    assert phoneme_viseme("s") == "s"
    assert phoneme_viseme(" ") == "rest"
    assert phoneme_viseme("$") == "rest"


def test_alignment_timeline_spans_audio_and_stress_marks_join_vowels() -> None:
    # "^ m ˈ a ː p $" : the stress mark takes 'a' (next), the length mark takes 'a' (previous)
    align = [("^", 100), ("m", 200), ("ˈ", 100), ("a", 300), ("ː", 100), ("p", 200), ("$", 100)]
    cues = visemes_from_alignments(align, 1000, 2200)  # scaled to 2.2 s of audio
    _check_timeline(cues, 2.2)
    assert [c.viseme for c in cues] == ["rest", "mbp", "aa", "mbp", "rest"]
    aa = cues[2]
    assert abs(aa.start - 0.3 * 2.2 / 1.1) < 1e-9 and abs(aa.end - 0.8 * 2.2 / 1.1) < 1e-9


def test_envelope_fallback() -> None:
    rate = 16000
    t = np.arange(rate) / rate
    loud = (0.8 * np.sin(2 * np.pi * 200 * t[: rate // 2])).astype(np.float32)
    audio = np.concatenate([np.zeros(rate // 4, np.float32), loud, np.zeros(rate // 4, np.float32)])
    cues = visemes_from_envelope(audio, rate)
    _check_timeline(cues, 1.0)
    assert cues[0].viseme == "rest" and cues[-1].viseme == "rest"
    assert any(c.viseme == "aa" for c in cues)


def test_empty_inputs() -> None:
    assert visemes_from_alignments([], 22050, 100) == ()
    assert visemes_from_envelope(np.zeros(0, np.float32), 22050) == ()
