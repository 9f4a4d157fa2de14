"""The Speaker: streamed reply text in, speech out, playback events (timed at the output) back.

Flow: ``speak()`` (loop thread) splits text into pieces (``SentenceSplitter``) and queues synthesis
jobs for the reply at the head of the line (later replies wait their turn, so replies never mix); a
worker thread synthesises with Piper, resamples to the sink rate, fades the edges and pushes the
piece into the ``PlaybackQueue``; the sink's audio callback renders blocks and returns marks; marks
come back to the loop and are emitted as events at the moment they reach the output.

Empty replies (no speakable text once final) emit only ``PlaybackFinished(interrupted=False)``, in
order with the other replies. The speaker judges nothing: which chunks to speak, when to hold the
output and when to release it are the device core's decisions; it plays, holds and drops what it is told.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from audio.edges.sinks import AudioSink
from audio.edges.wav import FloatArray, resample
from audio.events import (
    AudioDeviceProblem,
    AudioEvent,
    EventSink,
    PlaybackFinished,
    PlaybackStarted,
    SentencePlaying,
)
from audio.speaking.playback import PlaybackMark, PlaybackQueue, QueuedPiece, fade_edges
from audio.speaking.sentences import SentenceSplitter, TextPiece
from audio.speaking.settings import SpeakingSettings
from audio.speaking.tts import TtsVoice, VoiceNotFound, load_voice, resolve_voice_path

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PieceTiming:
    """When a piece reached the output, and the underrun silence before it (for benchmarks)."""

    say: str
    index: int
    ts: float
    duration: float
    gap_s: float


@dataclass
class _Reply:
    say: str
    serial: int
    splitter: SentenceSplitter
    pending: deque[TextPiece] = field(default_factory=deque)
    final: bool = False
    pieces: int = 0


@dataclass(frozen=True, slots=True)
class _Job:
    generation: int
    say: str
    serial: int
    piece: TextPiece | None


@dataclass(frozen=True, slots=True)
class _VoiceSwitch:
    """Load ``spec`` in the worker, in order with synthesis: text given after it gets the new voice,
    while the loop (and a ``stop``) never waits for the load."""

    spec: str
    done: concurrent.futures.Future[TtsVoice]


class Speaker:
    """Speaks streamed replies in order through one sink; see the module docstring."""

    def __init__(self, settings: SpeakingSettings, sink: AudioSink, emit: EventSink) -> None:
        self._settings = settings
        self._sink = sink
        self._emit = emit
        self._voice_spec = settings.voice
        self._voice: TtsVoice | None = None
        self._queue = PlaybackQueue(rate=0, volume=settings.volume, stop_fade_ms=settings.stop_fade_ms)
        self._replies: dict[int, _Reply] = {}
        self._by_say: dict[str, _Reply] = {}
        self._feed: deque[int] = deque()
        self._serial = 0
        self._jobs: queue.Queue[_Job | _VoiceSwitch | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: deque[tuple[float, AudioEvent]] = deque()
        """Events with the monotonic time they are due at."""
        self._timer: asyncio.TimerHandle | None = None
        self._started = False
        self.piece_log: deque[PieceTiming] = deque(maxlen=500)
        """Recent pieces as they reached the output (benchmarks, diagnostics)."""

    # ---- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Load and warm the voice, open the sink, start the synthesis worker."""
        self._loop = asyncio.get_running_loop()
        self._voice = await asyncio.to_thread(self._load_voice, self._voice_spec)
        if self._settings.preload_voices:
            for spec in self._settings.voices.values():
                await asyncio.to_thread(self._load_voice, spec)
        await asyncio.to_thread(self._sink.open, self._render, self._report_problem)
        self._queue.rate = self._sink.rate
        self._worker = threading.Thread(target=self._work, name="tts-worker", daemon=True)
        self._worker.start()
        self._started = True

    async def aclose(self) -> None:
        """Stop speaking (every open reply gets its interrupted finish), close the sink and the worker."""
        self.stop()
        deadline = time.monotonic() + 0.5
        while self._queue.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # let the stop fade reach the output
        await asyncio.to_thread(self._sink.close)
        now = time.time()
        for reply in list(self._replies.values()):
            self._schedule(now, PlaybackFinished(say=reply.say, interrupted=True, ts=now))
        self._replies.clear()
        self._by_say.clear()
        if self._worker is not None:
            self._jobs.put(None)
            await asyncio.to_thread(self._worker.join, 5.0)
            self._worker = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flush_pending(force=True)

    # ---- commands (loop thread) ----------------------------------------------------------------
    def speak(self, say: str, text: str, final: bool) -> None:
        """Queue a chunk of reply ``say`` (non-blocking); ``final`` closes the reply."""
        if self._loop is None:
            raise RuntimeError("Speaker.start() was not awaited")
        if not self._started:
            # start() failed (no voice / no output device): the reply ends at once, never hangs.
            _LOGGER.warning("cannot speak reply %s: the speaker did not start", say)
            now = time.time()
            self._schedule(now, PlaybackFinished(say=say, interrupted=True, ts=now))
            return
        reply = self._by_say.get(say)
        if reply is None:
            self._serial += 1
            reply = _Reply(
                say,
                self._serial,
                SentenceSplitter(self._settings.first_clause_min_words, self._settings.max_piece_chars),
            )
            self._replies[reply.serial] = reply
            self._by_say[say] = reply
            self._feed.append(reply.serial)
        reply.pending.extend(reply.splitter.feed(text, final))
        reply.final = final
        self._pump()

    def stop(self) -> None:
        """Stop now: fade out the current reply, drop every queued one (each gets an interrupted finish)."""
        handled = self._queue.stop()
        self._feed.clear()
        now = time.time()
        for serial, reply in list(self._replies.items()):
            if self._by_say.get(reply.say) is reply:
                del self._by_say[reply.say]
            if serial not in handled:
                del self._replies[serial]
                self._schedule(now, PlaybackFinished(say=reply.say, interrupted=True, ts=now))

    def hold(self, say: str, *, at_once: bool = False) -> None:
        """Start no reply queued after ``say`` until ``release(say)`` (a stop keeps the holds).

        ``at_once``: hold from now on (``say`` was stopped: its end will never play here).
        """
        self._queue.hold(say, at_once=at_once)

    def release(self, say: str) -> None:
        """Drop the hold of ``say``: the replies behind it play."""
        self._queue.release(say)

    def set_volume(self, volume: float) -> None:
        """Set the output volume (0..1); applies within one audio block."""
        self._queue.set_volume(volume)

    def duck(self, level_db: float) -> None:
        """Play ``level_db`` (<= 0) under the volume, ramping (the user speaks over the reply)."""
        self._queue.set_duck(10.0 ** (min(0.0, level_db) / 20.0))

    def unduck(self) -> None:
        """Back to the full volume, ramping."""
        self._queue.set_duck(1.0)

    def duck_gain(self) -> float:
        """The ducking gain the latest block was rendered at (linear; 1.0 = not ducked)."""
        return self._queue.duck

    @property
    def ducked(self) -> bool:
        """Whether the output is ducked (or ramping back up)."""
        return self._queue.duck < 1.0

    @property
    def volume(self) -> float:
        """Current output volume."""
        return self._queue.volume

    @property
    def voice_path(self) -> Path | None:
        """Model file of the voice in use."""
        return self._voice.path if self._voice else None

    @property
    def sample_rate(self) -> int:
        """Output sample rate in Hz (after ``start``)."""
        return self._queue.rate

    @property
    def busy(self) -> bool:
        """True while any reply is queued, synthesising or playing."""
        return bool(self._replies) or self._queue.busy

    async def set_voice(self, voice: str) -> None:
        """Switch voice: a ``.onnx`` path, "" (packaged), or the file stem of a configured voice.

        A bad voice raises ``VoiceNotFound`` and the current voice stays. Once started, the voice is
        loaded by the synthesis worker in order: pieces it was handed before are spoken with the old
        voice, pieces after with the new one; ``stop`` never waits for a load.
        """
        spec = self._named_voice(voice)
        if self._worker is None:
            self._voice = await asyncio.to_thread(self._load_voice, spec)
            self._voice_spec = spec
            return
        switch = _VoiceSwitch(spec, concurrent.futures.Future())
        self._jobs.put(switch)
        await asyncio.wrap_future(switch.done)

    # ---- internals -----------------------------------------------------------------------------
    def _named_voice(self, voice: str) -> str:
        if not voice or Path(voice).expanduser().exists():
            return voice
        for candidate in (self._settings.voice, *self._settings.voices.values()):
            if candidate and Path(candidate).name.removesuffix(".onnx") == voice:
                return candidate
        if voice == resolve_voice_path("").name.removesuffix(".onnx"):
            return ""
        return voice

    def _load_voice(self, spec: str) -> TtsVoice:
        return load_voice(spec, threads=self._settings.tts_threads)

    def _pump(self) -> None:
        """Hand pieces of the head reply to the worker; move on when it is final."""
        generation = self._queue.generation
        while self._feed:
            reply = self._replies.get(self._feed[0])
            if reply is None:
                self._feed.popleft()
                continue
            while reply.pending:
                self._jobs.put(_Job(generation, reply.say, reply.serial, reply.pending.popleft()))
            if not reply.final:
                return
            self._jobs.put(_Job(generation, reply.say, reply.serial, None))
            self._feed.popleft()

    def _work(self) -> None:
        """Worker thread: synthesise jobs in order and push them to the playback queue."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if isinstance(job, _VoiceSwitch):
                self._switch_voice(job)
                continue
            if job.generation != self._queue.generation:
                continue
            if job.piece is None:
                self._queue.push_end(job.say, job.serial, job.generation)
                continue
            try:
                piece = self._synthesize(job, job.piece)
            except Exception:
                _LOGGER.exception("synthesis failed for %r", job.piece.text)
                continue
            self._queue.push(piece, job.generation)

    def _switch_voice(self, switch: _VoiceSwitch) -> None:
        try:
            voice = self._load_voice(switch.spec)
        except BaseException as err:  # the current voice stays; the caller hears why
            switch.done.set_exception(err)
            return
        self._voice, self._voice_spec = voice, switch.spec
        switch.done.set_result(voice)

    def _synthesize(self, job: _Job, piece: TextPiece) -> QueuedPiece:
        voice = self._voice
        if voice is None:
            raise VoiceNotFound("no voice loaded")
        result = voice.synthesize(piece.text, length_scale=self._settings.length_scale)
        rate = self._queue.rate or result.rate
        samples: FloatArray = resample(result.audio, result.rate, rate)
        samples = fade_edges(samples, int(rate * self._settings.fade_ms / 1000))
        return QueuedPiece(
            say=job.say,
            reply=job.serial,
            samples=samples,
            start=piece.start,
            end=piece.end,
            visemes=result.visemes,
        )

    def _render(self, out: FloatArray, t0: float) -> list[PlaybackMark]:
        """Audio thread: render a block, hand its marks to the loop."""
        marks = self._queue.render(out)
        if marks and self._loop is not None:
            rate = self._queue.rate or 1
            try:
                self._loop.call_soon_threadsafe(self._on_marks, marks, t0, rate)
            except RuntimeError:  # loop closed while the output still runs
                _LOGGER.debug("playback marks dropped: event loop closed")
        return marks

    def _report_problem(self, ok: bool, detail: str) -> None:
        if self._loop is not None:
            event = AudioDeviceProblem(direction="output", ok=ok, detail=detail, ts=time.time())
            self._loop.call_soon_threadsafe(self._emit_safely, event)

    def _on_marks(self, marks: list[PlaybackMark], t0: float, rate: int) -> None:
        for mark in marks:
            ts = t0 + mark.frame / rate
            reply = self._replies.get(mark.reply)
            if mark.kind == "reply_started":
                self._schedule(ts, PlaybackStarted(say=mark.say, ts=ts))
            elif mark.kind == "piece_started" and mark.piece is not None:
                piece = mark.piece
                duration = piece.frames / rate
                index = reply.pieces if reply else 0
                if reply is not None:
                    reply.pieces += 1
                self.piece_log.append(PieceTiming(mark.say, index, ts, duration, mark.gap_frames / rate))
                event = SentencePlaying(
                    say=mark.say,
                    start=piece.start,
                    end=piece.end,
                    duration=duration,
                    visemes=piece.visemes,
                    ts=ts,
                )
                self._schedule(ts, event)
            elif mark.kind == "reply_finished":
                self._replies.pop(mark.reply, None)
                if reply is not None and self._by_say.get(reply.say) is reply:
                    del self._by_say[reply.say]
                self._schedule(ts, PlaybackFinished(say=mark.say, interrupted=mark.interrupted, ts=ts))

    def _schedule(self, ts: float, event: AudioEvent) -> None:
        """Emit ``event`` when the output reaches ``ts``, after everything scheduled before it."""
        # Due on the monotonic clock: a wall-clock step (NTP on a board without RTC) neither hurries
        # nor holds back the event (``ts`` stays the wall time it happened).
        self._pending.append((time.monotonic() + ts - time.time(), event))
        if self._timer is None:
            self._flush_pending()

    def _flush_pending(self, force: bool = False) -> None:
        self._timer = None
        now = time.monotonic()
        while self._pending and (force or self._pending[0][0] <= now + 0.0005):
            _, event = self._pending.popleft()
            self._emit_safely(event)
        if self._pending and self._loop is not None:
            delay = max(0.0, self._pending[0][0] - time.monotonic())
            self._timer = self._loop.call_later(delay, self._flush_pending)

    def _emit_safely(self, event: AudioEvent) -> None:
        try:
            self._emit(event)
        except Exception:
            _LOGGER.exception("event sink failed on %s", type(event).__name__)
