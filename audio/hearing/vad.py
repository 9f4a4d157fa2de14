"""Voice activity: a per-frame speech check and a pure, clock-free endpointer.

``SpeechDetector`` decides per frame (webrtcvad AND an energy gate over a tracked noise floor),
``Endpointer`` turns the per-frame decisions into utterances (pre-roll, end silence, min/max
length; speech longer than Whisper's window is handed on in parts, cut at a pause), and
``FrameSegmenter`` glues both to arbitrary-sized blocks of audio. The runtime ``Listener`` and the
``transcribe``/``eval`` tools all go through ``FrameSegmenter``.

Turn-taking (``hearing.turn_detector``): with ``silence`` an utterance ends after ``end_silence_ms`` of
non-speech. With ``smart_turn`` a pause of ``turn_pause_ms`` after real speech raises a
``TurnQuestion`` (with ``turn_decode_ms`` set, an earlier ``SpeechPaused`` of the same pause and
``ask`` starts the speculative decode first; with ``turn_ask_ms`` set, the question itself comes
that early, its audio continued by the pause's own quiet to ``turn_pause_ms``); whoever runs the end-of-turn model answers with ``Endpointer.verdict`` (the
endpointer stays clock-free: an answer is just another input). A "complete" answer while the pause
still goes on ends the utterance (``end="turn_complete"``) once it has lasted ``turn_hold_ms`` (at
least ``turn_pause_ms``: a comma's pause is not an end, however fast the answer); speech that resumes makes the question
stale and the utterance goes on; ``turn_fallback_ms`` of non-speech ends it anyway (``end="silence"``).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Literal

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.settings import HearingSettings

EndReason = Literal["turn_complete", "silence", "max_length"]
"""Why an utterance ended (protocol v1.1 ``speech_ended.end``)."""

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UtteranceBegan:
    """Speech started; ``offset`` is the stream sample index of the first speech frame."""

    offset: int
    pre_roll: int
    """Samples of audio kept from before ``offset``."""


@dataclass(frozen=True, slots=True)
class SpeechStirred:
    """Idle, the start window holds the endpointer's ``stir_ms`` of speech but not yet the speech a
    start needs: maybe the start of an utterance (the device ducks its reply early over it). Raised
    once until the window falls under ``stir_ms`` again; ``offset`` is the stream sample index of the
    window's first speech frame."""

    offset: int


@dataclass(frozen=True, slots=True)
class UtterancePart:
    """The utterance goes on past ``max_part_ms``: here is its next part to transcribe now.

    Parts are cut in the middle of the longest pause near the limit; together with the final
    ``UtteranceComplete`` they hold every sample of the utterance exactly once, in order.
    """

    audio: FloatArray
    speech_ratio: float
    index: int
    """0 for the first part."""


@dataclass(frozen=True, slots=True)
class UtteranceComplete:
    """Speech ended; ``audio`` is pre-roll + speech + post-roll, ``speech_ratio`` the share of speech frames.

    After ``UtterancePart`` events, ``audio`` is only the rest after the last part (empty when that
    rest holds no speech), ``speech_ms`` counts the whole utterance and ``earlier_samples`` the
    samples already handed on in parts.
    """

    audio: FloatArray
    speech_ms: int
    speech_ratio: float
    end_offset: int
    """Stream sample index just after the last speech frame."""
    earlier_samples: int = 0
    parts: int = 0
    """``UtterancePart`` events before this one."""
    end: EndReason = "silence"
    asked: int | None = None
    """The ``SpeechPaused``/``TurnQuestion`` ``ask`` of this completion's pause (no speech and no
    part since it began): the speculative decode of that event's ``audio`` is this utterance's
    transcript (the same words; the pause kept to the post-roll may be longer here)."""


@dataclass(frozen=True, slots=True)
class SpeechPaused:
    """A pause of ``turn_decode_ms`` after real speech, before its ``TurnQuestion`` (same ``ask``,
    at ``turn_pause_ms``): ``audio`` is what an ``UtteranceComplete`` ending now would hold, for the
    speculative decode; a completion with ``asked == ask`` had no speech since, and this decode is
    its transcript. Raised only when ``turn_decode_ms`` is set and under ``turn_pause_ms`` (else
    the question carries the audio)."""

    ask: int
    audio: FloatArray
    speech_ratio: float
    end_offset: int
    """Stream sample index just after the last speech frame."""


@dataclass(frozen=True, slots=True)
class TurnQuestion:
    """A pause of ``turn_pause_ms`` after real speech (``turn_ask_ms`` when set): is the turn complete?

    ``audio`` is what an ``UtteranceComplete`` ending now would hold (the rest after any parts, the
    pause cut to the post-roll), for a speculative decode; ``context`` the utterance's last
    ``TURN_CONTEXT_MS`` up to now (pause included), for the end-of-turn model. Asked ahead of
    ``turn_pause_ms``, both are as they would be at it if the pause goes on (continued by copies of
    the pause's own frames). Answer with ``Endpointer.verdict(ask, complete)``.
    """

    ask: int
    audio: FloatArray
    context: FloatArray
    speech_ratio: float
    end_offset: int
    """Stream sample index just after the last speech frame."""


@dataclass(frozen=True, slots=True)
class UtteranceRejected:
    """The utterance in progress was dropped (too short)."""

    reason: Literal["too_short"]
    speech_ms: int


EndpointerEvent = (
    UtteranceBegan
    | UtterancePart
    | UtteranceComplete
    | UtteranceRejected
    | SpeechPaused
    | TurnQuestion
    | SpeechStirred
)

TURN_CONTEXT_MS = 8000
"""Audio kept for the end-of-turn model (Smart Turn reads the last 8 s)."""

MAX_PART_MS = 28000
"""Longest part ever handed to the transcriber, in ms (Whisper decodes 30 s at most)."""

_CUT_SEARCH_MS = 8000
"""A part is cut at the longest pause within this many ms before ``max_part_ms`` (quietest frame if none)."""


def frame_level_db(frame: FloatArray) -> float:
    """RMS level of a frame in dBFS (floor -120)."""
    n = len(frame)
    if n == 0:
        return -120.0
    x = frame.astype(np.float64).reshape(-1)
    rms = math.sqrt(float(np.dot(x, x)) / n)  # half the time of np.mean(np.square(x)), ~33 frames a second
    return max(-120.0, 20.0 * math.log10(rms + 1e-12))


def frame_levels_db(signal: FloatArray, frame: int) -> np.ndarray:
    """``frame_level_db`` of each whole ``frame``-sample frame of ``signal`` (a partial last frame
    is left out), in one pass: for offline analysis (benchmarks, the doctor's echo check)."""
    n = len(signal) // frame
    x = np.asarray(signal[: n * frame], dtype=np.float64).reshape(n, frame)
    rms = np.sqrt(np.einsum("ij,ij->i", x, x) / frame)
    return np.maximum(-120.0, 20.0 * np.log10(rms + 1e-12))


class SpeechDetector:
    """Per-frame speech check: webrtcvad says speech AND the frame clears an energy gate.

    The gate is ``max(energy_gate_db, noise_floor + noise_margin_db)``; the noise floor follows the
    quiet frames quickly downwards and slowly upwards, so steady room noise and chimes that webrtcvad
    alone would accept do not open an utterance.
    """

    def __init__(self, settings: HearingSettings) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(settings.vad_aggressiveness)
        self._rate = settings.sample_rate
        self._gate_db = settings.energy_gate_db
        self._margin_db = settings.noise_margin_db
        self.noise_floor_db = -70.0
        """Tracked noise floor in dBFS."""

    def is_speech(self, frame: FloatArray) -> bool:
        """Whether ``frame`` (10/20/30 ms float32 at the settings rate) is speech."""
        level = frame_level_db(frame)
        pcm = (np.clip(frame, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        voiced = bool(self._vad.is_speech(pcm, self._rate))
        gate = max(self._gate_db, self.noise_floor_db + self._margin_db)
        speech = voiced and level >= gate
        # Track the floor: fall fast, rise slowly (only on frames not taken as speech).
        if level < self.noise_floor_db:
            self.noise_floor_db += 0.5 * (level - self.noise_floor_db)
        elif not speech:
            self.noise_floor_db += 0.02 * (level - self.noise_floor_db)
        return speech


class Endpointer:
    """Pure, clock-free segmenter: feed it frames with a speech decision, get utterance events.

    Time is counted in frames only. States: idle (keeping a pre-roll ring) and in speech
    (collecting audio until ``end_silence_ms`` of non-speech, or with the ``smart_turn`` detector
    until a "complete" verdict on a pause or ``turn_fallback_ms`` of non-speech). An utterance that reaches
    ``max_part_ms`` is handed on in parts (``UtterancePart``, cut in a pause); one that reaches
    ``max_utterance_ms`` ends there as if the speaker had paused, and the next one starts as soon as
    speech goes on (the pre-roll ring keeps what comes meanwhile).
    """

    def __init__(self, settings: HearingSettings, stir_ms: int = 0) -> None:
        fms = settings.block_ms
        self.frame_ms = fms
        self._start_window = max(1, settings.start_window_ms // fms)
        self._start_needed = max(1, min(self._start_window, -(-settings.start_speech_ms // fms)))
        self._stir_needed = -(-stir_ms // fms) if stir_ms > 0 else 0
        """Speech frames in the start window that raise ``SpeechStirred`` (0: never; under
        ``_start_needed`` to be raised at all)."""
        self._stirred = False
        self.smart_turn = settings.turn_detector == "smart_turn"
        end_ms = settings.turn_fallback_ms if self.smart_turn else settings.end_silence_ms
        self.end_silence_ms = end_ms
        """Non-speech that ends an utterance in any case, in ms (the fallback with ``smart_turn``)."""
        self._end_frames = max(1, end_ms // fms)
        self._pause_frames = max(1, settings.turn_pause_ms // fms)
        self._hold_frames = -(-settings.turn_floor_ms // fms)
        """Silence (frames) before which a "complete" verdict does not end the turn (``turn_floor_ms``:
        the hold, at least the pause)."""
        ask_ms = settings.turn_question_ms
        self._ask_frames = min(self._pause_frames, max(1, ask_ms // fms))
        decode_ms = settings.turn_decode_ms or ask_ms
        self._decode_frames = min(self._ask_frames, max(1, decode_ms // fms))
        self._recent: deque[FloatArray] = deque(maxlen=max(1, TURN_CONTEXT_MS // fms))
        self._asks = 0
        self._open_ask: int | None = None
        self._complete_at: int | None = None
        """Silence (frames) at which the open question's late "complete" ends the utterance."""
        self._post_frames = min(self._end_frames, settings.post_roll_ms // fms)
        self._min_ms = settings.min_utterance_ms
        self._max_frames = max(1, settings.max_utterance_ms // fms)
        part_ms = settings.max_part_ms
        if part_ms > MAX_PART_MS:
            _LOGGER.warning("hearing.max_part_ms %d is over Whisper's window: using %d", part_ms, MAX_PART_MS)
            part_ms = MAX_PART_MS
        self._part_frames = max(2, part_ms // fms)
        self._search_frames = max(1, min(self._part_frames - 1, _CUT_SEARCH_MS // fms))
        self._pre_frames = settings.pre_roll_ms // fms
        self._ring: deque[tuple[FloatArray, bool]] = deque(maxlen=self._pre_frames + self._start_window)
        self._frames: list[FloatArray] = []
        self._flags: list[bool] = []
        self._silence_run = 0
        self._state: Literal["idle", "speech"] = "idle"
        self._samples_seen = 0
        self._parts = 0
        self._part_samples = 0
        self._part_frames_total = 0
        self._part_speech_frames = 0

    @property
    def samples_seen(self) -> int:
        """Samples processed since creation (stream position)."""
        return self._samples_seen

    @property
    def in_speech(self) -> bool:
        """Whether an utterance is in progress."""
        return self._state == "speech"

    @property
    def open_question(self) -> int | None:
        """The ``TurnQuestion.ask`` a verdict can still end the utterance on (None: no pause asked
        about, or speech resumed since)."""
        return self._open_ask

    def reset(self) -> None:
        """Forget everything (the stream was closed or audio was discarded)."""
        self._ring.clear()
        self._frames = []
        self._flags = []
        self._recent.clear()
        self._open_ask = None
        self._complete_at = None
        self._silence_run = 0
        self._state = "idle"
        self._stirred = False
        self._parts = 0
        self._part_samples = 0
        self._part_frames_total = 0
        self._part_speech_frames = 0

    def process(self, frame: FloatArray, is_speech: bool) -> list[EndpointerEvent]:
        """Take one frame and its speech decision; return the events it causes (often none)."""
        self._samples_seen += len(frame)
        if self._state == "idle":
            return self._process_idle(frame, is_speech)
        return self._process_speech(frame, is_speech)

    def _process_idle(self, frame: FloatArray, is_speech: bool) -> list[EndpointerEvent]:
        self._ring.append((frame, is_speech))
        window = list(self._ring)[-self._start_window :]
        voiced = sum(flag for _, flag in window)
        if voiced < self._start_needed:
            return self._stir(window, voiced)
        self._stirred = False
        # Start: keep the whole ring (pre-roll + start window), but drop leading frames beyond pre-roll
        # that precede the first speech frame of the window.
        items = list(self._ring)
        first_speech = next(i for i, (_, flag) in enumerate(items) if flag)
        begin = max(0, first_speech - self._pre_frames)
        items = items[begin:]
        self._frames = [f for f, _ in items]
        self._flags = [flag for _, flag in items]
        self._recent.extend(self._frames)
        self._ring.clear()
        self._state = "speech"
        self._silence_run = 0
        start = self._samples_seen - sum(len(f) for f in self._frames)
        pre = sum(len(f) for f in self._frames[: first_speech - begin])
        return [UtteranceBegan(offset=start + pre, pre_roll=pre)]

    def _stir(self, window: list[tuple[FloatArray, bool]], voiced: int) -> list[EndpointerEvent]:
        """``SpeechStirred`` when the window's speech first reaches ``_stir_needed`` (not again
        until it fell under it)."""
        if not self._stir_needed or voiced < self._stir_needed:
            self._stirred = False
            return []
        if self._stirred:
            return []
        self._stirred = True
        first = next(i for i, (_, flag) in enumerate(window) if flag)
        return [SpeechStirred(offset=self._samples_seen - sum(len(f) for f, _ in window[first:]))]

    def _process_speech(self, frame: FloatArray, is_speech: bool) -> list[EndpointerEvent]:
        self._frames.append(frame)
        self._flags.append(is_speech)
        self._recent.append(frame)
        self._silence_run = 0 if is_speech else self._silence_run + 1
        if is_speech:
            self._open_ask = None  # the user goes on: an answer about the pause comes too late
            self._complete_at = None
        elif self._complete_at is not None and self._silence_run >= self._complete_at:
            return [self._finish(trailing=self._silence_run, end="turn_complete")]
        if self._silence_run >= self._end_frames:
            return [self._finish(trailing=self._silence_run, end="silence")]
        if self._part_frames_total + len(self._frames) >= self._max_frames:
            return [self._finish(trailing=0, end="max_length")]
        if len(self._frames) >= self._part_frames:
            self._open_ask = None  # the audio asked about is no longer what would be transcribed
            self._complete_at = None
            return [self._cut_part()]
        if not self.smart_turn or self._silence_run not in (self._decode_frames, self._ask_frames):
            return []
        if not self._real_speech():
            return []
        return [self._question() if self._silence_run == self._ask_frames else self._paused()]

    def _real_speech(self) -> bool:
        """Whether the utterance so far holds at least ``min_utterance_ms`` of speech (the model calls
        pure silence "complete": it is only asked about pauses after real speech)."""
        flags = self._flags[: len(self._flags) - self._silence_run]
        first = self._voiced_start(flags)
        return (len(flags) - first + self._part_speech_frames) * self.frame_ms >= max(self._min_ms, 1)

    def _paused(self) -> SpeechPaused:
        self._asks += 1
        self._open_ask = self._asks
        self._complete_at = None
        audio, ratio, end_offset = self._closing_audio(self._silence_run)
        return SpeechPaused(ask=self._asks, audio=audio, speech_ratio=ratio, end_offset=end_offset)

    def _question(self) -> TurnQuestion:
        ask = self._open_ask  # set: this pause's SpeechPaused (cleared by speech or a part cut since)
        if ask is None:
            self._asks += 1
            ask = self._open_ask = self._asks
        self._complete_at = None
        audio, ratio, end_offset = self._closing_audio(self._silence_run)
        context = np.concatenate(list(self._recent)).astype(np.float32)
        if self._silence_run < self._pause_frames:  # turn_ask_ms: asked ahead of the pause's end
            audio, context = self._as_at_pause_end(audio, context)
        return TurnQuestion(ask=ask, audio=audio, context=context, speech_ratio=ratio, end_offset=end_offset)

    def verdict(self, ask: int, complete: bool, after_ms: int = 0) -> list[EndpointerEvent]:
        """The answer to ``TurnQuestion`` ``ask``: complete → the utterance ends (``end=
        "turn_complete"``) if that pause still goes on -- now, or once the pause has lasted
        ``turn_hold_ms`` (a question asked ahead of it, ``turn_ask_ms``; or answered inside a
        comma) or ``after_ms`` (the late check, a one-word answer's hold), unless speech resumes
        first; otherwise (unfinished, stale) nothing."""
        if not complete or ask != self._open_ask or self._state != "speech":
            return []
        frames = max(self._hold_frames, -(-after_ms // self.frame_ms))
        if self._silence_run < frames:
            self._complete_at = frames
            return []
        return [self._finish(trailing=self._silence_run, end="turn_complete")]

    def _cut_index(self) -> int:
        """Where to cut the current part: the middle of the longest non-speech run in the search
        window (the latest of equals), else before the quietest frame there."""
        lo = len(self._frames) - self._search_frames
        best_len, best_mid, run = 0, -1, 0
        for i in range(lo, len(self._frames)):
            run = 0 if self._flags[i] else run + 1
            if run and run >= best_len:
                best_len, best_mid = run, i + 1 - run // 2
        if best_mid > 0:
            return best_mid
        levels = [frame_level_db(f) for f in self._frames[lo:]]
        return lo + int(np.argmin(levels))

    def _voiced_start(self, flags: list[bool]) -> int:
        """Index of the first speech frame of the first part (the pre-roll before it is not
        speech time); later parts count from their start."""
        return next((i for i, f in enumerate(flags) if f), 0) if self._parts == 0 else 0

    def _cut_part(self) -> EndpointerEvent:
        cut = self._cut_index()
        flags = self._flags[:cut]
        first = self._voiced_start(flags)
        ratio = sum(flags[first:]) / max(1, len(flags) - first)
        audio = np.concatenate(self._frames[:cut]).astype(np.float32)
        event = UtterancePart(audio=audio, speech_ratio=ratio, index=self._parts)
        self._parts += 1
        self._part_samples += len(audio)
        self._part_frames_total += cut
        self._part_speech_frames += len(flags) - first
        self._frames, self._flags = self._frames[cut:], self._flags[cut:]
        return event

    def _as_at_pause_end(self, audio: FloatArray, context: FloatArray) -> tuple[FloatArray, FloatArray]:
        """A question's ``audio`` and ``context`` asked ahead of ``turn_pause_ms``, as they would be
        at it if the pause goes on: continued by copies of the pause's own frames (the room's quiet)
        to ``turn_pause_ms`` (``audio`` as far as the post-roll keeps it). The model and the decode
        then judge the pause they would have judged there, only sooner."""
        run = min(self._silence_run, len(self._frames))  # a part may have taken the pause's start
        quiet = self._frames[len(self._frames) - run :]
        if not quiet:
            return audio, context
        more = self._pause_frames - self._silence_run
        kept = min(run + more, self._post_frames) - min(run, self._post_frames)

        def copies(n: int) -> list[FloatArray]:
            return [quiet[i % len(quiet)] for i in range(n)]

        if len(audio) and kept > 0:  # empty: only the pause after a part, nothing to transcribe
            audio = np.concatenate([audio, *copies(kept)]).astype(np.float32)
        return audio, np.concatenate([context, *copies(more)]).astype(np.float32)

    def _closing_audio(self, trailing: int) -> tuple[FloatArray, float, int]:
        """What an utterance ending now would transcribe: (audio, speech ratio, end offset), the
        ``trailing`` non-speech frames at the end cut to the post-roll."""
        trailing = min(trailing, len(self._frames))  # a part may have taken the start of the pause
        keep = len(self._frames) - trailing + min(trailing, self._post_frames)
        flags = self._flags[: len(self._flags) - trailing]
        first = self._voiced_start(flags)
        voiced_span = flags[first:]
        ratio = sum(voiced_span) / max(1, len(voiced_span))
        audio = np.concatenate([np.zeros(0, np.float32), *self._frames[:keep]]).astype(np.float32)
        if self._parts and not any(flags):
            audio = audio[:0]  # only the pause after the last part: nothing left to transcribe
        end_offset = self._samples_seen - sum(len(f) for f in self._frames[len(flags) :])
        return audio, ratio, end_offset

    def _finish(self, trailing: int, end: EndReason) -> EndpointerEvent:
        """End the utterance; ``trailing`` non-speech frames at the end are cut to the post-roll."""
        audio, ratio, end_offset = self._closing_audio(trailing)
        trailing = min(trailing, len(self._frames))
        flags = self._flags[: len(self._flags) - trailing]
        parts, earlier = self._parts, self._part_samples
        speech_ms = (len(flags) - self._voiced_start(flags) + self._part_speech_frames) * self.frame_ms
        asked = self._open_ask if end != "max_length" else None  # max_length keeps the whole pause
        self.reset()
        if speech_ms < self._min_ms:
            return UtteranceRejected(reason="too_short", speech_ms=speech_ms)
        return UtteranceComplete(
            audio=audio,
            speech_ms=speech_ms,
            speech_ratio=ratio,
            end_offset=end_offset,
            earlier_samples=earlier,
            parts=parts,
            end=end,
            asked=asked,
        )

    def flush(self) -> list[EndpointerEvent]:
        """End the stream: an utterance in progress ends as if silence followed it."""
        if self._state != "speech":
            self.reset()
            return []
        return [self._finish(trailing=self._silence_run, end="silence")]


class FrameSegmenter:
    """Slices arbitrary blocks of 16 kHz float32 audio into VAD frames and runs detector + endpointer."""

    def __init__(self, settings: HearingSettings) -> None:
        self.frame_len = settings.sample_rate * settings.block_ms // 1000
        self.detector = SpeechDetector(settings)
        self.endpointer = Endpointer(settings)
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_detect = np.zeros(0, dtype=np.float32)

    def feed(self, samples: FloatArray, detect: FloatArray | None = None) -> list[EndpointerEvent]:
        """Add samples; return the endpointer events of every complete frame. ``detect`` (as long
        as ``samples``): what the detector judges instead of the samples themselves (the utterance
        keeps ``samples``)."""
        buf = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        view = buf
        if detect is not None or len(self._pending_detect):
            extra = samples if detect is None else detect
            view = np.concatenate([self._pending_detect, extra.astype(np.float32, copy=False)])
        events: list[EndpointerEvent] = []
        n = len(buf) // self.frame_len
        for i in range(n):
            frame = buf[i * self.frame_len : (i + 1) * self.frame_len]
            judged = view[i * self.frame_len : (i + 1) * self.frame_len]
            events.extend(self.endpointer.process(frame, self.detector.is_speech(judged)))
        self._pending = buf[n * self.frame_len :].copy()
        self._pending_detect = view[n * self.frame_len :].copy() if view is not buf else self._pending[:0]
        return events

    @property
    def pending_samples(self) -> int:
        """Samples waiting for a complete frame."""
        return len(self._pending)

    def reset(self) -> None:
        """Drop partial frames and any utterance in progress (the detector keeps its noise floor)."""
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_detect = np.zeros(0, dtype=np.float32)
        self.endpointer.reset()


def segment_audio(samples: FloatArray, settings: HearingSettings) -> list[EndpointerEvent]:
    """Run a whole clip through the runtime's segmenter, followed by end silence so speech closes.

    Clips are cut with the ``silence`` detector (``end_silence_ms`` pauses), whatever
    ``turn_detector`` says: no end-of-turn model runs offline, so the tools' segments stay as before.
    """
    from dataclasses import replace

    settings = replace(settings, turn_detector="silence")
    seg = FrameSegmenter(settings)
    tail = np.zeros(settings.sample_rate * (settings.end_silence_ms + 2 * settings.block_ms) // 1000)
    return seg.feed(samples) + seg.feed(tail.astype(np.float32)) + seg.endpointer.flush()
