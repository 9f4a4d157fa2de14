"""Per-token uncertainty signals from Whisper's per-step vocabulary logits (for the confidence)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StepStats:
    """Per generated token: its probability, log-prob margin to the best other token, entropy (nats),
    and (with spelling keys) its probability whatever the spelling (NaN for spaces/punctuation)."""

    probs: list[float]
    margins: list[float]
    entropies: list[float]
    any_spelling: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SpellingKeys:
    """Per token id, a key shared by the tokens that are the same word once normalised the way the
    WER is counted ("5", " five", " Five." -> "five"); ``NO_WORD`` for spaces, punctuation and
    special tokens. Ids beyond the table (timestamps) are not words either."""

    keys: np.ndarray
    by_key: np.ndarray
    """Token ids sorted by key: the members of key ``k`` are ``by_key[bounds[k]:bounds[k + 1]]``."""
    bounds: np.ndarray
    NO_WORD = 0

    @classmethod
    def from_keys(cls, keys: np.ndarray) -> SpellingKeys:
        """The table for ``keys`` (one int per token id, ``NO_WORD`` = 0)."""
        keys = np.asarray(keys, dtype=np.int64)
        by_key = np.argsort(keys, kind="stable")
        bounds = np.searchsorted(keys[by_key], np.arange(int(keys.max(initial=0)) + 2))
        return cls(keys, by_key, bounds)

    @classmethod
    def build(
        cls, decode: Callable[[int], str], n_tokens: int, normalise: Callable[[str], str]
    ) -> SpellingKeys:
        """Keys for token ids ``0 .. n_tokens - 1`` (special tokens decode to "": not words)."""
        ids: dict[str, int] = {"": cls.NO_WORD}
        keys = np.empty(n_tokens, dtype=np.int64)
        for i in range(n_tokens):
            keys[i] = ids.setdefault(normalise(decode(i)), len(ids))
        return cls.from_keys(keys)

    def any_spelling(self, e: np.ndarray, chosen: list[int]) -> list[float]:
        """Per row of unnormalised probabilities ``e`` (one per step): the mass of the chosen token's
        word over the mass of all word tokens (NaN when the chosen token is not a word)."""
        n = min(e.shape[1], len(self.keys))
        words = (self.keys[:n] != self.NO_WORD).astype(e.dtype)
        word_mass = e[:, :n] @ words
        out: list[float] = []
        for row, token, mass in zip(e, chosen, word_mass.tolist(), strict=True):
            key = int(self.keys[token]) if token < n else self.NO_WORD
            if key == self.NO_WORD or mass <= 0:
                out.append(math.nan)
                continue
            members = self.by_key[self.bounds[key] : self.bounds[key + 1]]
            out.append(float(row[members].sum(dtype=np.float64)) / mass)
        return out


_FLOOR = -1e4
"""Stand-in for suppressed (-inf) logits: exp() underflows to 0 and 0 * floor stays 0."""


def step_stats(logits: list[Any], ids: list[int], spelling: SpellingKeys | None = None) -> StepStats:
    """Token probability, margin and entropy of each generated token from the per-step logits; with
    ``spelling``, also the probability of its word in any spelling, among the tokens that are words
    (Whisper torn between "9", " nine" and " Nine" heard the word fine; torn between " Bye" and
    " five" it did not)."""
    n = min(len(logits), len(ids))
    if n == 0:
        return StepStats([], [], [], [])
    z = np.stack([np.asarray(step, dtype=np.float32).reshape(-1) for step in logits[:n]])
    z[~np.isfinite(z)] = _FLOOR  # what np.nan_to_num would do here, in a tenth of its time
    rows = np.arange(n)
    chosen = np.asarray(ids[:n])
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, dtype=np.float64)
    mine = z[rows, chosen].astype(np.float64) - np.log(total)
    z[rows, chosen] = _FLOOR
    other = z.max(axis=1).astype(np.float64) - np.log(total) if z.shape[1] > 1 else np.full(n, -np.inf)
    z[rows, chosen] = mine + np.log(total)
    entropies = np.log(total) - np.einsum("ij,ij->i", e, z).astype(np.float64) / total  # no n x V temporary
    return StepStats(
        [math.exp(v) for v in mine.tolist()],
        [min(20.0, v) for v in (mine - other).tolist()],
        entropies.tolist(),
        spelling.any_spelling(e, chosen.tolist()) if spelling is not None else [],
    )


SENTENCE_MARKS = frozenset(".?!")
_CLOSERS = frozenset("\"')")


def sentence_end_ids(decode: Callable[[int], str], n_tokens: int) -> np.ndarray:
    """Ids of the tokens that end a sentence: a full stop, question or exclamation mark, alone or
    with a closing quote or bracket (``.``, `` ?``, ``."``); never an ellipsis (``...``, ``…``: the
    speaker trails off, the sentence is not over)."""
    ids = []
    for i in range(n_tokens):
        piece = decode(i).strip()
        if not piece or ".." in piece or not set(piece) <= SENTENCE_MARKS | _CLOSERS:
            continue
        if set(piece) & SENTENCE_MARKS:
            ids.append(i)
    return np.asarray(ids, dtype=np.int64)


def end_punctuation_prob(
    logits: list[Any], ids: list[int], spelling: SpellingKeys, end_ids: np.ndarray
) -> float | None:
    """The probability the decoder gave a sentence mark (``end_ids``) at the step right after the last
    word token of ``ids`` (the generated tokens, ``logits`` their per-step vocabulary logits): how sure
    it was that the words so far end a sentence, whatever it then chose. None without a word."""
    n = min(len(logits), len(ids))
    table = len(spelling.keys)
    last = next(
        (i for i in range(n - 1, -1, -1) if ids[i] < table and spelling.keys[ids[i]] != SpellingKeys.NO_WORD),
        None,
    )
    if last is None or last + 1 >= len(logits):
        return None
    return sentence_mark_prob(logits[last + 1], end_ids)


def sentence_mark_prob(step: Any, end_ids: np.ndarray) -> float | None:
    """The probability mass of the tokens ``end_ids`` in one step's vocabulary logits (None if none)."""
    if len(end_ids) == 0:
        return None
    z = np.asarray(step, dtype=np.float64).reshape(-1)
    z[~np.isfinite(z)] = _FLOOR
    z -= z.max()
    e = np.exp(z)
    ok = end_ids[end_ids < len(e)]
    return float(e[ok].sum() / e.sum())
