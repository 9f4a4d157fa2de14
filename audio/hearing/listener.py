"""The ears: microphone → VAD endpointer → Whisper, emitting hearing events on the event loop.

Event order per utterance: ``SpeechStarted``, then usually ``SpeechEnded``, then exactly one of
``Transcribed`` or ``UtteranceFailed`` with the same id:

- ``too_short``: SpeechEnded, then UtteranceFailed.
- ``interrupted``: UtteranceFailed only — the microphone was closed or lost, or the device started
  speaking while half duplex (what the user says over the device's own voice is not used).

Full duplex (docs/hearing.md, "Full duplex"): behind the echo canceller (a ``DuplexSource``: the
``FrontEndSource`` of ``audio.hearing.front_end``, whose ``duplex`` is "full" once it converged and
while it has no fault) the microphone is heard while the device speaks: an utterance that starts
then is a barge-in (``SpeechStarted.over_playback``), needs ``barge_in_speech_ms`` of speech to
start (a stricter endpointer while the device speaks, swapped in and out only between utterances)
and closes through the normal turn logic; with ``early_duck_speech_ms`` set (off by default), that
much speech is said at once (``BargeInSuspected``: the core ducks the reply early, and lets go if no
start follows). Half duplex -- echo cancellation off, not converged yet,
or fallen back after a fault -- discards as before. Every change of the mode (and the first one
known, unless echo cancellation is off) is emitted as ``DuplexChanged`` with its reason; falling
back while the device speaks fails the utterance in progress with ``interrupted`` (never
transcribing the device's own voice). How much of the echo the canceller removes is emitted as
``EchoRemoval`` (the core ducks a barge-in deeper over a weak canceller).
- ``no_speech`` (Whisper heard nothing) and ``stt_error``: after SpeechEnded.

Speech longer than ``max_part_ms`` (Whisper's window) is handed on in parts cut at pauses; each part
is decoded while the user goes on talking, and the parts make one ``Transcribed`` (text joined,
confidence weighted by duration). Decodes run one at a time on a single worker thread; a decode
already running when the microphone closes still completes and emits its result.

Turn-taking (``hearing.turn_detector = "smart_turn"``): at the first pause after real speech (an
endpointer ``TurnQuestion``, at ``turn_ask_ms`` of it, on audio as it would be at ``turn_pause_ms``)
the end-of-turn model runs on its own thread and the
Whisper decode of the audio so far starts beside it (speculative; with ``turn_decode_ms`` set it
started already, at that much of the pause: an endpointer ``SpeechPaused`` of the same ``ask``) --
unless the Whisper thread is busy (a part, or an earlier pause's decode), then it starts only once
the model says the turn may be complete. A probability under ``turn_threshold`` is "unfinished" at once (with the late check off);
otherwise the model's probability and the transcript's words (``audio.hearing.turn``) give the
verdict the endpointer gets. Unfinished to the model but done to the words (``late_complete``):
the endpointer ends the turn if the pause lasts ``turn_late_ms``. A turn that ends with no speech since the question (``turn_complete``, or the fallback
silence) takes that decode as its transcript: no second decode. Speech that resumes makes the
question stale: its verdict is ignored and its decode cancelled -- not started, it never runs;
running, it stops at its next stage (``DecodeCancelled``) and publishes nothing -- so the decode that
ends the turn does not queue behind it (a new pause asks again). Only the
task that closes an utterance publishes, so two decodes of one utterance never race.

Opening and closing the source run in order on another
single thread ("mic-io"): finding a device, opening it and refreshing PortAudio's device list while a
microphone is missing can block for a long time on a Pi, and the event loop must not wait for that.
A close queued behind a slow open closes what that open produced; an open that finishes after the
microphone was closed again (an older generation) is closed at once.

A missing speaker plugged in while the microphone is open can only be found after PortAudio
rescans its device list, which would kill the open microphone stream. So when the source says a
rescan is wanted and the sound hardware changed (``DeviceListSource``), the Listener gives way
between utterances: closes the stream, lets the rescan run, reopens (a few hundred ms of audio not
heard, once per plug-in; not a device problem, nothing is reported).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from audio.edges.capture import AudioSource, DeviceListSource, MicrophoneUnavailable
from audio.edges.wav import FloatArray
from audio.events import (
    ECHO_REMOVAL_STEP_DB,
    AudioDeviceProblem,
    BargeInSuspected,
    DuplexChanged,
    DuplexMode,
    EchoRemoval,
    EventSink,
    SpeechEnded,
    SpeechStarted,
    Transcribed,
    UtteranceFailed,
)
from audio.hearing.echo_tail import EchoTail
from audio.hearing.engine import Transcriber, Transcription
from audio.hearing.settings import HearingSettings
from audio.hearing.turn import late_complete, short_text, turn_complete
from audio.hearing.turn_model import TurnModel, TurnVerdict, make_turn_model
from audio.hearing.utterance_parts import join_transcriptions
from audio.hearing.vad import (
    Endpointer,
    EndpointerEvent,
    FrameSegmenter,
    SpeechPaused,
    SpeechStirred,
    TurnQuestion,
    UtteranceBegan,
    UtteranceComplete,
    UtterancePart,
    UtteranceRejected,
    frame_level_db,
)

_LOGGER = logging.getLogger(__name__)


def text_wait_s(settings: HearingSettings) -> float:
    """Longest the turn verdict waits for the speculative decode's text after the model answered, in
    s: until the fallback silence would end the turn anyway (waiting costs nothing: that decode is
    the transcript, which cannot come sooner)."""
    return max(0.0, (settings.turn_fallback_ms - settings.turn_pause_ms) / 1000.0)


def _retrieved(fut: asyncio.Future[Transcription]) -> None:
    """Mark a decode's outcome as seen (a cancelled speculative decode's ``DecodeCancelled`` is
    expected, never logged as an exception nobody retrieved)."""
    if not fut.cancelled():
        fut.exception()


NOT_CONVERGED = (
    "the echo canceller has not heard enough of the speaker yet (converging, or re-converging after a "
    "timing jump or the microphone reopening)"
)
"""Why a ``DuplexSource`` without a fault is still half duplex."""


@runtime_checkable
class DetectionViews(Protocol):
    """A source that can deliver each block in two views, stacked ``(2, n)``: the audio to
    transcribe and the audio the VAD judges (``FrontEndSource``: cleaned, and cleaned then gated
    by the residual-echo check -- the gate decides when the user speaks; Whisper hears all they
    said, the start of "stop" the gate took for echo included)."""

    detection_view: bool


@runtime_checkable
class NearSpeechAware(Protocol):
    """A source told while the user speaks (``audio.hearing.front_end.FrontEndSource``: those blocks
    do not count in judging its canceller)."""

    near_speech: bool


@runtime_checkable
class DuplexSource(Protocol):
    """A source that can be listened to while the device speaks once ``duplex`` is "full"."""

    @property
    def duplex(self) -> str:
        """ "full" or "half"."""
        ...

    @property
    def fault_reason(self) -> str | None:
        """Why echo cancellation cannot be trusted now (None: no fault)."""
        ...

    @property
    def removal_db(self) -> float | None:
        """How much of the speaker's echo the canceller removes, in dB (None: not measured yet)."""
        ...


def duplex_of(source: AudioSource, echo_cancellation: str) -> tuple[DuplexMode, str]:
    """The duplex mode of ``source`` now and why it is half ("" when full)."""
    if isinstance(source, DuplexSource):
        if source.duplex == "full":
            return "full", ""
        return "half", source.fault_reason or NOT_CONVERGED
    if echo_cancellation == "off":
        return "half", "echo cancellation is off (hearing.echo_cancellation)"
    if echo_cancellation in ("webrtc", "dtln"):
        return "half", "the echo canceller did not start (see the log)"
    return "half", (
        f"echo cancellation {echo_cancellation!r}: no reference here for the residual-echo guard, "
        "so the device does not listen over itself"
    )


def _new_id() -> str:
    return "u-" + uuid.uuid4().hex[:12]


@dataclass(slots=True)
class _Speculation:
    """The open question of the current utterance: its model run and its speculative decode."""

    uid: str
    ask: int
    decode: Future[Transcription] | None
    """On the Whisper thread."""
    model: asyncio.Future[TurnVerdict] | None
    """On the model's thread, from the ``TurnQuestion`` on (None after ``SpeechPaused`` alone)."""
    question: SpeechPaused | TurnQuestion
    """The event whose ``audio`` is (or is to be) decoded: the pause's first."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set when the question goes stale (speech resumed, the utterance ended otherwise): the decode
    stops at its next stage and raises ``DecodeCancelled`` (it is never published)."""


@dataclass(frozen=True, slots=True)
class TurnAsk:
    """One question to the end-of-turn model and its verdict (for ``robot-face bench turns``)."""

    utterance: str
    ask: int
    probability: float
    text: str | None
    complete: bool
    """The verdict given (False when ``stale``)."""
    cpu_ms: float
    stale: bool = False
    """The answer came after speech resumed or the utterance ended: nothing was decided on it."""
    end_prob: float | None = None
    """The speculative decode's probability of a sentence mark after the last word."""
    late: bool = False
    """Unfinished to the model, but the late check (``hearing.turn_late_ms``) holds: the turn ends
    if the pause lasts that long."""


class Listener:
    """Opens the microphone on wake, closes it on sleep, and turns speech into events."""

    watch_interval_s = 1.0
    """How often (s) the open stream is checked for stalls and for a wanted device rescan."""

    def __init__(
        self,
        settings: HearingSettings,
        source: AudioSource,
        transcriber: Transcriber,
        emit: EventSink,
        *,
        utterance_ids: Callable[[], str] | None = None,
        turn_model: TurnModel | None = None,
    ) -> None:
        """``turn_model``: the loaded end-of-turn model for ``turn_detector = "smart_turn"``; when
        None it is loaded here (``ModelUnavailable`` if it cannot be)."""
        self.settings = settings
        self._source = source
        if isinstance(source, DetectionViews):
            source.detection_view = True
        # Checked once (a runtime-checkable protocol's isinstance walks its members: too dear for
        # every block): only a DuplexSource's mode changes, only a NearSpeechAware one is told.
        self._canceller: DuplexSource | None = source if isinstance(source, DuplexSource) else None
        self._duplex_source = self._canceller is not None
        self._near_speech: NearSpeechAware | None = source if isinstance(source, NearSpeechAware) else None
        self._stt = transcriber
        self._emit = emit
        self._ids = utterance_ids or _new_id
        self._segmenter = FrameSegmenter(settings)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")
        self._turn_model = turn_model
        if settings.turn_detector == "smart_turn" and turn_model is None:
            loaded = make_turn_model(settings)
            assert loaded is not None
            loaded.load()
            self._turn_model = loaded
        self._turn_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turn")
        self._spec: _Speculation | None = None
        self._whisper_jobs: dict[Future[Transcription], threading.Event | None] = {}
        """Decodes queued or running on the Whisper thread, with their cancel tokens."""
        self.turn_asks: deque[TurnAsk] = deque(maxlen=1000)
        """The latest questions to the end-of-turn model and their verdicts."""
        self._block_clock = (0.0, 0)
        """(wall time, stream position) of the end of the last block fed (timestamps of events)."""
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mic-io")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._want_open = False
        self._stream_live = False
        self._generation = 0
        self._resampler: Any = None
        self._utterance: str | None = None
        self._parts: list[asyncio.Future[Transcription]] = []
        """Decodes of the current utterance's earlier parts, in order."""
        self._speaking = False
        self._normal = self._segmenter.endpointer
        self._strict = Endpointer(_barge_in_settings(settings), stir_ms=settings.early_duck_speech_ms)
        """The endpointer while the device speaks in full duplex (``barge_in_speech_ms`` to start,
        ``early_duck_speech_ms`` to say a barge-in may be starting)."""
        self._duplex: tuple[DuplexMode, str] | None = None
        """The duplex mode and its reason as last emitted (None: not known yet)."""
        self._removal: float | None = None
        """The canceller's removal as last emitted (dB; None: not measured yet)."""
        rate = settings.sample_rate
        self._echo = EchoTail(
            rate,
            min_samples=rate * settings.speaking_tail_ms // 1000,
            max_samples=rate * max(settings.speaking_tail_ms, settings.speaking_tail_max_ms) // 1000,
            margin_db=settings.echo_margin_db,
        )
        self.heard_samples = 0
        """Samples that reached the endpointer (16 kHz) since creation."""
        self._last_block = 0.0
        self._decodes: set[asyncio.Task[None]] = set()
        self._reopen_task: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self.discarded_samples = 0
        """Samples thrown away by half-duplex (device speaking + tail)."""

    @property
    def duplex(self) -> DuplexMode:
        """ "full" when the microphone is heard while the device speaks, else "half"."""
        return self._duplex[0] if self._duplex is not None else "half"

    @property
    def is_open(self) -> bool:
        """Whether the microphone is wanted open (it may be waiting for the device to come back)."""
        return self._want_open

    @property
    def overflows(self) -> int:
        """Input overflows counted by the source."""
        return self._source.overflows

    # ---- open / close ---------------------------------------------------------------------------
    async def open(self) -> None:
        """Open the microphone stream (safe to call twice). A missing device is reported with
        ``AudioDeviceProblem(ok=False)`` and retried every ``reopen_interval_s``."""
        if self._want_open:
            return
        self._loop = asyncio.get_running_loop()
        self._want_open = True
        self._update_duplex()
        prepare = getattr(self._stt, "prepare", None)  # a transcriber that loads lazily gets ready
        if prepare is not None:
            prepare()
        self._watchdog = asyncio.create_task(self._watch_stalls())
        try:
            await self._start_source()
        except MicrophoneUnavailable as err:
            if self._want_open:
                self._device_problem(False, str(err))
                self._schedule_reopen()

    async def close(self) -> None:
        """Close the stream; an utterance in progress fails with ``interrupted``."""
        if not self._want_open:
            return
        self._want_open = False
        for task in (self._reopen_task, self._watchdog):
            if task is not None:
                task.cancel()
        self._reopen_task = self._watchdog = None
        closed = self._stop_source()
        self._interrupt("microphone closed")
        await asyncio.wrap_future(closed)
        rest = getattr(self._stt, "rest", None)  # asleep: a lazily loading transcriber lets go
        if rest is not None:
            rest()

    async def aclose(self) -> None:
        """Close and wait for queued decodes to finish; the Listener cannot be used afterwards."""
        await self.close()
        if self._decodes:
            await asyncio.gather(*self._decodes, return_exceptions=True)
        self._executor.shutdown(wait=True)
        self._turn_executor.shutdown(wait=True)
        self._io.shutdown(wait=True)

    def set_speaking(self, active: bool) -> None:
        """The device started/stopped speaking. Half duplex: while it speaks, and for the room's
        echo of it after (``audio.hearing.echo_tail``: at least ``speaking_tail_ms``, at most
        ``speaking_tail_max_ms``), microphone audio is discarded; an utterance in progress when
        speaking starts fails with ``interrupted``. Full duplex: the microphone is still heard (an
        utterance in progress goes on; one that starts while it speaks is a barge-in)."""
        if not self.settings.half_duplex or self.duplex == "full":
            self._speaking = active
            return
        if active and not self._speaking:
            self._interrupt("device started speaking")
            self._segmenter.reset()
            self._echo.cancel()
        if not active and self._speaking:
            self._echo.start()
        self._speaking = active

    # ---- source handling ------------------------------------------------------------------------
    async def _start_source(self) -> None:
        """Open the source on the mic-io thread; raises ``MicrophoneUnavailable``. If the microphone
        was closed (or reopened) meanwhile, the stream just opened is closed again."""
        self._generation += 1
        gen = self._generation
        loop = self._loop
        assert loop is not None

        def on_audio(block: FloatArray) -> None:
            with contextlib.suppress(RuntimeError):  # loop closed during shutdown
                loop.call_soon_threadsafe(self._on_block, gen, block)

        def on_lost(detail: str) -> None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_lost, gen, detail)

        rate = await asyncio.wrap_future(self._io.submit(self._source.open, on_audio, on_lost))
        if gen != self._generation or not self._want_open:
            self._io.submit(self._close_quietly)
            return
        self._resampler = None
        if rate != self.settings.sample_rate:
            import soxr

            self._resampler = soxr.ResampleStream(rate, self.settings.sample_rate, 1, dtype="float32")
        self._segmenter.reset()
        self._stream_live = True
        self._last_block = time.monotonic()

    def _stop_source(self) -> Future[None]:
        """Invalidate the current stream and queue its close on the mic-io thread (after any open)."""
        self._generation += 1
        self._stream_live = False
        return self._io.submit(self._close_quietly)

    def _close_quietly(self) -> None:
        try:
            self._source.close()
        except Exception as err:
            _LOGGER.warning("closing audio source: %s", err)

    def _on_lost(self, gen: int, detail: str) -> None:
        if gen != self._generation or not self._want_open:
            return
        self._stop_source()
        self._interrupt("microphone lost")
        self._device_problem(False, detail)
        self._schedule_reopen()

    def _schedule_reopen(self) -> None:
        if self._reopen_task is None or self._reopen_task.done():
            self._reopen_task = asyncio.create_task(self._reopen_loop())

    async def _reopen_loop(self) -> None:
        while self._want_open and not self._stream_live:
            await asyncio.sleep(self.settings.reopen_interval_s)
            if not self._want_open:
                return
            try:
                await self._start_source()
            except MicrophoneUnavailable as err:
                _LOGGER.debug("microphone still unavailable: %s", err)
                continue
            if not self._stream_live:
                return  # closed while the device was opening
            self._device_problem(True, f"input device {self.settings.input_device or 'default'!r} is back")

    async def _watch_stalls(self) -> None:
        limit = max(2.0, 3 * self.settings.block_ms / 1000)
        while self._want_open:
            await asyncio.sleep(self.watch_interval_s)
            if self._stream_live and time.monotonic() - self._last_block > limit:
                self._on_lost(self._generation, "input device stopped delivering audio")
            elif self._stream_live and self._utterance is None and await self._refresh_wanted():
                await self._give_way_for_refresh()

    async def _refresh_wanted(self) -> bool:
        source = self._source
        if not isinstance(source, DeviceListSource):
            return False
        return await asyncio.wrap_future(self._io.submit(source.refresh_wanted))

    async def _give_way_for_refresh(self) -> None:
        """Between utterances: close the stream, let the device list be rescanned, reopen."""
        source = self._source
        assert isinstance(source, DeviceListSource)
        if self._utterance is not None or not self._stream_live:
            return
        _LOGGER.info("microphone: pausing for a device rescan (sound hardware changed)")
        self._stop_source()
        await asyncio.wrap_future(self._io.submit(source.refresh_devices))
        if not self._want_open:
            return
        try:
            await self._start_source()
        except MicrophoneUnavailable as err:
            if self._want_open:
                self._device_problem(False, f"lost after a device rescan: {err}")
                self._schedule_reopen()

    def _device_problem(self, ok: bool, detail: str) -> None:
        (_LOGGER.info if ok else _LOGGER.warning)("microphone: %s", detail)
        self._emit(AudioDeviceProblem(direction="input", ok=ok, detail=detail, ts=time.time()))

    # ---- audio → events -------------------------------------------------------------------------
    def _on_block(self, gen: int, block: FloatArray) -> None:
        if gen != self._generation or not self._want_open:
            return
        now = time.time()
        self._last_block = time.monotonic()
        detect: FloatArray | None = None
        if block.ndim == 2:  # a ``DetectionViews`` source: (what is transcribed, what the VAD judges)
            block, detect = block[0], block[1]
        if self._resampler is not None:
            block = self._resampler.resample_chunk(block)
            detect = None
        self._update_duplex()
        self._update_removal()
        if (
            self.settings.half_duplex
            and self.duplex == "half"
            and (
                self._speaking
                or (
                    self._echo.active
                    and self._echo.drop(
                        len(block),
                        frame_level_db(block if detect is None else detect),
                        self._segmenter.detector.noise_floor_db,
                    )
                )
            )
        ):
            self.discarded_samples += len(block)
            return
        self.heard_samples += len(block)
        self._choose_endpointer()
        events = self._segmenter.feed(np.asarray(block, dtype=np.float32), detect)
        self._block_clock = (now, self._segmenter.endpointer.samples_seen + self._segmenter.pending_samples)
        if (
            self._spec is not None
            and self._segmenter.endpointer.open_question != self._spec.ask
            and not any(isinstance(ev, UtteranceComplete) for ev in events)  # `_complete` decides
        ):
            self._drop_spec()  # the user went on speaking after the pause
        self._handle(events)
        if self._near_speech is not None:
            self._near_speech.near_speech = self._utterance is not None

    def _update_duplex(self) -> None:
        """Follow the source's duplex mode; emit each change (and the first mode known) -- not with
        echo cancellation off (always half, nothing to tell)."""
        if self._duplex is not None and not self._duplex_source:
            return  # fixed by the settings: known since the first block
        now = duplex_of(self._source, self.settings.echo_cancellation)
        if now == self._duplex:
            return
        if self._duplex is None and self.settings.echo_cancellation == "off":
            self._duplex = now
            return
        before, self._duplex = self._duplex, now
        mode, reason = now
        if before is not None and before[0] != mode and self._speaking:
            if mode == "half":  # fell back mid-reply: what follows is discarded, never transcribed
                self._interrupt(f"echo cancellation fell back while the device speaks: {reason}")
            self._segmenter.reset()
            self._echo.cancel()
        log = _LOGGER.info if mode == "full" or before is None else _LOGGER.warning
        log("microphone: %s duplex%s", mode, f" ({reason})" if reason else "")
        self._emit(DuplexChanged(mode=mode, reason=reason, ts=time.time()))

    def _update_removal(self) -> None:
        """Say how much of the echo the source's canceller removes (``EchoRemoval``): when first
        measured and when it moves by ``ECHO_REMOVAL_STEP_DB``; not measured (re-converging) is not
        said: the last figure holds."""
        if self._canceller is None:
            return
        removed = self._canceller.removal_db
        if removed is None or (
            self._removal is not None and abs(removed - self._removal) < ECHO_REMOVAL_STEP_DB
        ):
            return
        self._removal = removed
        self._emit(EchoRemoval(removed_db=round(float(removed), 1), ts=time.time()))

    def _choose_endpointer(self) -> None:
        """The stricter endpointer while the device speaks in full duplex, the normal one otherwise;
        swapped only between utterances (the one swapped in starts with an empty pre-roll)."""
        want = self._strict if self._over_playback else self._normal
        current = self._segmenter.endpointer
        if want is current or current.in_speech or self._utterance is not None or self._spec is not None:
            return
        want.reset()
        self._segmenter.endpointer = want

    @property
    def _over_playback(self) -> bool:
        """The device speaks and the microphone hears the user over it (full duplex)."""
        return self._speaking and self.duplex == "full"

    def _ts_of(self, pos: int) -> float:
        """Wall time of stream sample ``pos`` (from the last block's arrival)."""
        now, end_pos = self._block_clock
        return now - (end_pos - pos) / self.settings.sample_rate

    def _handle(self, events: list[EndpointerEvent]) -> None:
        for ev in events:
            if isinstance(ev, UtteranceBegan):
                self._utterance = self._ids()
                over = self._over_playback
                ts = self._ts_of(ev.offset)
                self._emit(SpeechStarted(utterance=self._utterance, ts=ts, over_playback=over))
            elif isinstance(ev, SpeechStirred):
                if self._utterance is None and self._over_playback:
                    self._emit(BargeInSuspected(ts=self._ts_of(ev.offset)))
            elif isinstance(ev, UtterancePart):
                if self._utterance is not None:
                    self._parts.append(self._submit_decode(ev.audio, ev.speech_ratio))
            elif isinstance(ev, SpeechPaused):
                if self._utterance is not None:
                    self._paused(self._utterance, ev)
            elif isinstance(ev, TurnQuestion):
                if self._utterance is not None:
                    self._ask(self._utterance, ev)
            elif isinstance(ev, UtteranceComplete):
                self._complete(ev)
            elif isinstance(ev, UtteranceRejected):
                uid, self._utterance = self._utterance, None
                self._drop_parts()
                if uid is None:
                    continue
                now = time.time()
                self._emit(SpeechEnded(utterance=uid, audio_ms=ev.speech_ms, ts=now))
                detail = f"{ev.speech_ms} ms of speech"
                self._emit(UtteranceFailed(utterance=uid, reason=ev.reason, detail=detail, ts=now))

    def _complete(self, ev: UtteranceComplete) -> None:
        uid, self._utterance = self._utterance, None
        parts, self._parts = self._parts, []
        spec, self._spec = self._spec, None
        if uid is None:
            if spec is not None:
                self._cancel_spec(spec)
            return
        audio_ms = round((ev.earlier_samples + len(ev.audio)) * 1000 / self.settings.sample_rate)
        self._emit(SpeechEnded(utterance=uid, audio_ms=audio_ms, ts=self._ts_of(ev.end_offset), end=ev.end))
        if spec is not None and spec.uid == uid and ev.asked == spec.ask and spec.decode is not None:
            # No speech since the question: its decode is of exactly this audio.
            reused = asyncio.wrap_future(spec.decode)
            self._start_decode(uid, ev.audio[:0], ev.speech_ratio, [*parts, reused])
            return
        if spec is not None:
            self._cancel_spec(spec)
        self._start_decode(uid, ev.audio, ev.speech_ratio, parts)

    # ---- turn-taking ------------------------------------------------------------------------------
    def _whisper_free(self) -> bool:
        """No decode in flight on the Whisper thread (a cancelled one stopping at its next stage aside)."""
        return not any(not f.done() and not (c and c.is_set()) for f, c in self._whisper_jobs.items())

    def _paused(self, uid: str, p: SpeechPaused) -> None:
        """A pause has begun (``turn_decode_ms``): start the speculative decode of the words so far
        if the Whisper thread is free, ahead of the model's question about the same pause."""
        if self._turn_model is None:
            return
        self._drop_spec()
        self._spec = _Speculation(uid=uid, ask=p.ask, decode=None, model=None, question=p)
        if self._whisper_free():
            self._speculate(self._spec)

    def _ask(self, uid: str, q: TurnQuestion) -> None:
        """A pause after speech: run the end-of-turn model and, if the Whisper thread is free, the
        speculative decode beside it unless the pause's ``SpeechPaused`` started it already (if it is
        busy -- an earlier pause's decode the user spoke on past, or a part -- the decode waits for
        the model and runs only if the turn may be complete)."""
        if self._turn_model is None:
            return
        spec = self._spec
        if spec is None or spec.uid != uid or spec.ask != q.ask or spec.model is not None:
            self._drop_spec()
            spec = self._spec = _Speculation(uid=uid, ask=q.ask, decode=None, model=None, question=q)
        loop = asyncio.get_running_loop()
        spec.model = model = loop.run_in_executor(self._turn_executor, self._turn_model.predict, q.context)
        if spec.decode is None and self._whisper_free():
            self._speculate(spec)
        task = asyncio.create_task(self._judge(spec, model), name=f"turn-{uid}-{q.ask}")
        self._decodes.add(task)
        task.add_done_callback(self._decodes.discard)

    async def _judge(self, spec: _Speculation, model: asyncio.Future[TurnVerdict]) -> None:
        """Wait for the model (and, if the verdict uses it, the decode), then tell the endpointer."""
        try:
            verdict = await model
        except Exception as err:  # a model that fails leaves the turn to the fallback silence
            _LOGGER.error("end-of-turn model failed: %s", err)
            return
        late = self.settings.turn_late_ms > 0 and self.settings.turn_text_check == "words+end"
        if verdict.probability < self.settings.turn_threshold and not late:
            # Unfinished whatever the words say: no decode needed for the verdict (one not started
            # yet never runs; a running one finishes and serves the fallback if nothing follows).
            if spec.decode is not None and spec.decode.cancel():
                spec.decode = None
            stale = self._spec is not spec
            self.turn_asks.append(
                TurnAsk(spec.uid, spec.ask, verdict.probability, None, False, verdict.cpu_ms, stale)
            )
            return
        if spec.decode is None and self._spec is spec:
            self._speculate(spec)
        text: str | None = None
        end_prob: float | None = None
        if self.settings.turn_text_check != "off" and spec.decode is not None:
            # A decode slower than the fallback (a loaded board) leaves the verdict to the model.
            with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
                decoded = asyncio.wrap_future(spec.decode)
                decoded.add_done_callback(_retrieved)  # also when the wait below times out first
                result = await asyncio.wait_for(asyncio.shield(decoded), text_wait_s(self.settings))
                text, end_prob = result.text, result.end_prob
        stale = self._spec is not spec  # speech resumed, or the utterance ended (fallback, close)
        complete = not stale and turn_complete(
            verdict.probability,
            text,
            self.settings.turn_threshold,
            self.settings.turn_text_check,
            end_prob=end_prob,
            long_end_min=self.settings.turn_long_end,
            long_sure=self.settings.turn_long_sure,
        )
        # The model says unfinished, the words say done: end the turn if the pause lasts turn_late_ms.
        late_ok = (
            late and not stale and not complete and late_complete(text, end_prob, self.settings.turn_late_end)
        )
        ask = TurnAsk(
            spec.uid, spec.ask, verdict.probability, text, complete, verdict.cpu_ms, stale, end_prob, late_ok
        )
        self.turn_asks.append(ask)
        # A short answer waits out the pause its first words before a comma would last.
        short = self.settings.turn_short_floor_ms if short_text(text) else 0
        if late_ok:
            after = max(self.settings.turn_late_ms, short)
            self._handle(self._segmenter.endpointer.verdict(spec.ask, True, after_ms=after))
        elif not stale:
            self._handle(
                self._segmenter.endpointer.verdict(spec.ask, complete, after_ms=short if complete else 0)
            )

    def _speculate(self, spec: _Speculation) -> None:
        """Start the speculative decode of the question's audio on the Whisper thread."""
        q = spec.question
        if len(q.audio):
            spec.decode = self._whisper(q.audio, q.speech_ratio, spec.cancel)

    def _whisper(
        self, audio: FloatArray, speech_ratio: float, cancel: threading.Event | None = None
    ) -> Future[Transcription]:
        """Queue a decode on the Whisper thread (tracked: a speculative decode starts beside the
        model only when none is in flight, a cancelled one stopping at its next stage aside)."""
        job = self._executor.submit(self._stt.transcribe, audio, speech_ratio, cancel)
        self._whisper_jobs = {f: c for f, c in self._whisper_jobs.items() if not f.done()}
        self._whisper_jobs[job] = cancel
        return job

    def _drop_spec(self) -> None:
        spec, self._spec = self._spec, None
        if spec is not None:
            self._cancel_spec(spec)

    @staticmethod
    def _cancel_spec(spec: _Speculation) -> None:
        """Forget a question: a decode not started yet never runs, one running stops at its next
        stage (``DecodeCancelled``, never published)."""
        spec.cancel.set()
        if spec.decode is not None:
            spec.decode.cancel()

    def _drop_parts(self) -> None:
        """Forget the current utterance's part decodes (not started ones never run)."""
        for fut in self._parts:
            fut.cancel()
        self._parts = []

    def _interrupt(self, detail: str) -> None:
        uid, self._utterance = self._utterance, None
        self._drop_parts()
        self._drop_spec()
        self._segmenter.reset()
        if uid is not None:
            self._emit(UtteranceFailed(utterance=uid, reason="interrupted", detail=detail, ts=time.time()))

    def _submit_decode(self, audio: FloatArray, speech_ratio: float) -> asyncio.Future[Transcription]:
        return asyncio.wrap_future(self._whisper(audio, speech_ratio))

    def _start_decode(
        self,
        uid: str,
        audio: FloatArray,
        speech_ratio: float,
        parts: list[asyncio.Future[Transcription]],
    ) -> None:
        if len(audio):
            parts = [*parts, self._submit_decode(audio, speech_ratio)]
        task = asyncio.create_task(self._decode(uid, parts), name=f"decode-{uid}")
        self._decodes.add(task)
        task.add_done_callback(self._decodes.discard)

    async def _decode(self, uid: str, parts: list[asyncio.Future[Transcription]]) -> None:
        outcomes = await asyncio.gather(*parts, return_exceptions=True)
        results = [r for r in outcomes if isinstance(r, Transcription)]
        errors = [r for r in outcomes if not isinstance(r, Transcription)]
        if errors:
            err = errors[0]
            _LOGGER.error("transcription failed for %s", uid, exc_info=err)
            where = f"part {outcomes.index(err) + 1} of {len(outcomes)}: " if len(outcomes) > 1 else ""
            detail = f"{where}{err}"
            self._emit(UtteranceFailed(utterance=uid, reason="stt_error", detail=detail, ts=time.time()))
            return
        if len(results) == 1:
            result = results[0]
        else:  # a long utterance's parts
            result = join_transcriptions(results, results[-1].language if results else "")
        if not result.text:
            self._emit(UtteranceFailed(utterance=uid, reason="no_speech", detail="", ts=time.time()))
            return
        self._emit(
            Transcribed(
                utterance=uid,
                text=result.text,
                confidence=result.confidence,
                language=result.language,
                audio_ms=result.audio_ms,
                decode_ms=result.decode_ms,
                ts=time.time(),
            )
        )


def _barge_in_settings(settings: HearingSettings) -> HearingSettings:
    """The endpointer's settings while the device speaks: ``barge_in_start_ms`` of speech to start
    (``barge_in_speech_ms`` or the canceller's own; the start window widened to hold it)."""
    need = settings.barge_in_start_ms
    window = max(settings.start_window_ms, need + 60)
    return replace(settings, start_speech_ms=need, start_window_ms=window)
