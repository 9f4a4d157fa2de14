"""Checks on Whisper transcripts and hypotheses: loops, repeats, and how an N-best list backs a text.

Pure functions over token ids and strings (no model), used by ``audio.hearing.whisper_stt``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from audio.hearing.confidence import has_repeated_word, normalise_text, text_key
from audio.hearing.confidence_signals import StepStats
from audio.hearing.wer import normalise_for_wer, word_edit_distance

COMPRESSION_LIMIT = 2.4
"""gzip compression ratio above which a transcript counts as looping text."""


@dataclass(frozen=True, slots=True)
class NBest:
    posterior: float
    word_agreement: float


@dataclass(frozen=True, slots=True)
class Hypothesis:
    tokens: list[int]
    text: str
    score: float
    """Summed token log-probability."""
    length: int
    """Generated tokens, before a looped phrase was cut."""
    looped: bool


def compression_ratio(text: str) -> float:
    raw = text.encode("utf-8")
    return len(raw) / max(1, len(zlib.compress(raw))) if raw else 0.0


def repeat_period(tokens: list[int]) -> int:
    """Length of a phrase (>= 2 tokens) the sequence repeats ("Yes? Yes?", "A b c. A b"), else 0."""
    n = len(tokens)
    for k in range(2, n - 1):
        if tokens[k:] == tokens[: n - k]:
            return k
    return 0


def unlooped(ids: list[int], eot: int) -> list[int]:
    """Text tokens of a decode without timestamps, one copy of a looped phrase."""
    ids = [t for t in ids if t < eot]
    cut = repeat_period(ids)  # without timestamps short windows loop: compare one copy
    return ids[:cut] if cut else ids


def one_copy(words: str) -> str:
    """``"bye bye bye"`` -> ``"bye"``: one word said over and over counts once."""
    split = words.split()
    return split[0] if split and all(w == split[0] for w in split) else words


def word_agreement(mine: str, other: str) -> float:
    """1 - word error rate of ``other`` against ``mine`` (clamped at 0)."""
    ref, hyp = mine.split(), other.split()
    if not ref:
        return 1.0 if not hyp else 0.0
    return max(0.0, 1.0 - word_edit_distance(ref, hyp) / len(ref))


def nbest_stats(mine: str, hyps: list[Hypothesis]) -> NBest:
    """How the N best hypotheses back ``mine``: its posterior (softmax of the summed log-probabilities,
    hypotheses with the same normalised words pooled) and the expected share of its words they keep.

    A clearly heard word holds nearly all the mass; an unclear one ("five" heard as "Bye.") shares it
    with rivals.
    """
    key = one_copy(normalise_for_wer(mine))
    texts = [one_copy(normalise_for_wer(h.text)) for h in hyps]
    scores = np.asarray([h.score for h in hyps], dtype=np.float64)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    posterior = float(sum(w for w, t in zip(weights, texts, strict=True) if t == key))
    agreement = float(sum(w * word_agreement(key, t) for w, t in zip(weights, texts, strict=True)))
    return NBest(posterior, agreement)


def looks_looped(tokens: list[int], text: str, generated: int, budget: int) -> bool:
    """Whether a decode looped: token budget used up, text too compressible (> ``COMPRESSION_LIMIT``),
    or a token / word pattern repeated."""
    return (
        generated >= budget
        or compression_ratio(text) > COMPRESSION_LIMIT
        or repeats(tokens, 4)
        or repeats(normalise_text(text).split(), 3)
    )


def _goes_on_from(head: list[str], words: list[str]) -> bool:
    """Whether ``words`` start with the words of ``head`` (at most one in five different) and go on."""
    if not head or len(head) >= len(words):
        return False
    differ = sum(a != b for a, b in zip(words[: len(head)], head, strict=True))
    return differ <= len(head) // 5


def stopped_early(beam_text: str, greedy_text: str, audio_s: float) -> bool:
    """Whether the beam's words are the greedy ones cut short: the greedy text's first words (at
    most one in five different) and fewer than one word per second of audio. The beam decodes
    without timestamps and scores by summed log-probability, so over several sentences its best is
    often the first sentence alone ("Thank you for calling Super Awesome Company." for 25 s of
    speech the greedy pass read whole): shorter is likelier, not better heard."""
    beam, greedy = normalise_for_wer(beam_text).split(), normalise_for_wer(greedy_text).split()
    return _goes_on_from(beam, greedy) and len(beam) / max(audio_s, 0.5) < STOPPED_EARLY_WORDS_PER_S


def reads_on(short_text: str, full_text: str) -> bool:
    """Whether the full window's reading is the short window's one (at most one word in five
    different) with more words after it: the short window stopped before the speech did."""
    return _goes_on_from(normalise_for_wer(short_text).split(), normalise_for_wer(full_text).split())


def unfinished_at(ids: list[int], ts_begin: int) -> float | None:
    """Where a timestamped decode's last segment starts, in seconds, when the decode ends on it
    ("... your volume.<12.00><12.00>" then end-of-text: Whisper's way of saying the segment goes on
    past the window, so it is not read); None when the last segment was closed or nothing was read."""
    if len(ids) >= 3 and ids[-1] >= ts_begin and ids[-2] >= ts_begin:
        return (ids[-1] - ts_begin) * 0.02
    return None


STOPPED_EARLY_WORDS_PER_S = 1.0
"""Below this rate (words per second of audio) a beam text that is the greedy text cut short has
stopped early (speech runs at 2-3 words per second)."""


def beam_wins(beam_text: str, greedy_text: str, hyps: list[Hypothesis], audio_s: float) -> bool:
    """Whether the beam's best words should replace the greedy ones: they differ, hold more of the
    N-best mass, do not add a repeated word ("Goodbye Goodbye", a short-window slip) and did not
    stop early (``stopped_early``) over ``audio_s`` seconds of audio."""
    mine, theirs = one_copy(normalise_for_wer(greedy_text)), one_copy(normalise_for_wer(beam_text))
    if mine == theirs or (has_repeated_word(beam_text) and not has_repeated_word(greedy_text)):
        return False
    if stopped_early(beam_text, greedy_text, audio_s):
        return False
    return nbest_stats(beam_text, hyps).posterior > nbest_stats(greedy_text, hyps).posterior


def repeats(items: list[Any], times: int) -> bool:
    """Whether some 1- or 2-item pattern repeats ``times`` times in a row."""
    for size in (1, 2):
        run = 1
        for i in range(size, len(items) - size + 1, size):
            run = run + 1 if items[i : i + size] == items[i - size : i] else 1
            if run >= times:
                return True
    return False


def _without_repeated_sentences(tokens: list[int], text_of: Callable[[list[int]], str]) -> list[int]:
    """Positions of ``tokens`` to keep: a sentence that says the same words as the one before,
    spelled or punctuated differently, is left out (a punctuation-only piece never is)."""
    keep: list[int] = []
    last = ""
    first = 0
    for k, t in enumerate(tokens):
        if not text_of([t]).rstrip().endswith((".", "!", "?")) and k < len(tokens) - 1:
            continue
        key = text_key(text_of(tokens[first : k + 1]))
        if not key or key != last:
            keep += range(first, k + 1)
        last = key or last
        first = k + 1
    return keep


_Segment = tuple[float, list[int], list[int]]
"""A timestamped decode's segment: its start (s), its text tokens, their step indices."""


def _segments(ids: list[int], ts_begin: int, eot: int) -> list[_Segment]:
    """The text segments of a timestamped decode, each with its start and its tokens' step indices."""
    segments: list[_Segment] = []
    start = 0.0
    cur: list[int] = []
    cur_i: list[int] = []
    for i, t in enumerate(ids):
        if t >= ts_begin:
            if cur:
                segments.append((start, cur, cur_i))
                cur, cur_i = [], []
            start = (t - ts_begin) * 0.02
        elif t < eot:
            cur.append(t)
            cur_i.append(i)
    if cur:
        segments.append((start, cur, cur_i))
    return segments


def _join_segments(
    segments: list[_Segment], audio_s: float, text_of: Callable[[list[int]], str] | None
) -> tuple[list[int], list[int], bool]:
    """Tokens and steps of the segments starting inside the audio, repeats left out; whether any was."""
    tokens: list[int] = []
    steps: list[int] = []
    repeated = False
    last: list[int] | str | None = None
    for seg_start, seg, seg_i in segments:
        if seg_start > 0 and seg_start >= audio_s - 0.1:
            repeated = True  # text placed after the audio ended: invented
            continue
        this = seg if text_of is None else text_key(text_of(seg))
        if this and this == last:  # (a punctuation-only piece is never a repeat)
            repeated = True
            continue
        tokens += seg
        steps += seg_i
        last = this
    return tokens, steps, repeated


def _stats_at(stats: StepStats, steps: list[int]) -> StepStats:
    """The step stats at ``steps`` (a step past a list's end takes that list's neutral value)."""

    def pick(values: list[float], default: float) -> list[float]:
        return [values[i] if i < len(values) else default for i in steps]

    return StepStats(
        pick(stats.probs, 1.0),
        pick(stats.margins, 20.0),
        pick(stats.entropies, 0.0),
        pick(stats.any_spelling, math.nan),
    )


def keep_segments(
    ids: list[int],
    stats: StepStats,
    audio_s: float,
    ts_begin: int,
    eot: int,
    text_of: Callable[[list[int]], str] | None = None,
) -> tuple[list[int], StepStats, bool]:
    """Text tokens (and their step stats) of a timestamped decode ``ids``: the segments that start
    inside the ``audio_s`` seconds of audio, without repeated segments or a repeated tail. Returns
    (tokens, their stats, whether anything was dropped); ``ts_begin`` and ``eot`` are the
    tokenizer's first timestamp id and end-of-text id. With ``text_of`` (tokens -> text), a
    segment or sentence that says the same words as the one before, spelled or punctuated
    differently, is a repeat too ("Goodbye. Good bye. Good bye."); without it, only the same tokens
    repeat."""
    tokens, steps, repeated = _join_segments(_segments(ids, ts_begin, eot), audio_s, text_of)
    cut = repeat_period(tokens)
    if cut:
        tokens, steps, repeated = tokens[:cut], steps[:cut], True
    if text_of is not None:
        kept_at = _without_repeated_sentences(tokens, text_of)
        if len(kept_at) < len(tokens):
            tokens, steps, repeated = [tokens[k] for k in kept_at], [steps[k] for k in kept_at], True
    return tokens, _stats_at(stats, steps), repeated
