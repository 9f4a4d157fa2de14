"""The playback queue the output callback pulls from: pieces in, audio blocks and timing marks out.

``PlaybackQueue.render(out)`` runs on the audio thread (a sounddevice callback or a real-time clock
thread): it fills ``out`` and returns ``PlaybackMark``s saying at which frame of the block a reply
started, a piece started, or a reply finished. The Speaker turns marks into events, timed at the
output. Everything here is lock-protected and allocation-light; no clock is read.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Literal

import numpy as np

from audio.edges.wav import FloatArray
from audio.events import VisemeCue

MarkKind = Literal["reply_started", "piece_started", "reply_finished"]


@dataclass(frozen=True, slots=True)
class QueuedPiece:
    """Audio of one synthesised piece at the output rate (edges already faded)."""

    say: str
    reply: int
    """Serial number of the reply (unique per Speaker, even if a say id is reused)."""
    samples: FloatArray
    start: int
    end: int
    visemes: tuple[VisemeCue, ...]

    @property
    def frames(self) -> int:
        """Length in frames."""
        return len(self.samples)


@dataclass(frozen=True, slots=True)
class _ReplyEnd:
    say: str
    reply: int


@dataclass(frozen=True, slots=True)
class PlaybackMark:
    """Something that happened at frame ``frame`` of a rendered block."""

    kind: MarkKind
    say: str
    reply: int
    frame: int
    piece: QueuedPiece | None = None
    interrupted: bool = False
    gap_frames: int = 0
    """For ``piece_started``: silence frames played inside the reply since its previous piece ended
    (an underrun, i.e. synthesis did not keep up); 0 for the first piece."""


def fade_edges(samples: FloatArray, fade_frames: int) -> FloatArray:
    """Copy of ``samples`` with a linear fade-in and fade-out of ``fade_frames`` at the edges."""
    out = np.array(samples, dtype=np.float32, copy=True)
    k = min(fade_frames, len(out) // 2)
    if k > 0:
        ramp = np.linspace(0.0, 1.0, k, endpoint=False, dtype=np.float32)
        out[:k] *= ramp
        out[-k:] *= ramp[::-1]
    return out


DUCK_ATTACK_MS = 50.0
"""How long ducking takes to reach its level (the user started speaking over the reply), in ms."""
DUCK_RELEASE_MS = 250.0
"""How long the return to the full volume takes once the user stopped, in ms."""


class PlaybackQueue:
    """FIFO of pieces and reply ends, rendered block by block with volume and a stop fade."""

    def __init__(self, rate: int, volume: float = 0.8, stop_fade_ms: float = 8.0) -> None:
        self._lock = threading.Lock()
        self._items: deque[QueuedPiece | _ReplyEnd] = deque()
        self._rate = rate
        self._stop_fade_ms = stop_fade_ms
        self._volume = _clamp_volume(volume)
        self._gain = self._volume
        self._duck = 1.0
        """The ducking gain now (linear; 1.0 = not ducked)."""
        self._duck_target = 1.0
        self._generation = 0
        self._open: int | None = None
        self._open_say = ""
        self._current: QueuedPiece | None = None
        self._cursor = 0
        self._gap = 0
        self._stopping = False
        self._fade_left = 0
        self._fade_total = 1
        self._seen: dict[int, None] = {}
        """Replies the output started or finished (their ``reply_finished`` comes from ``render``)."""
        self._ended: deque[str] = deque(maxlen=64)
        """Say ids whose end already played (a hold at their end holds at once)."""
        self._holds: set[str] = set()
        """Holds waiting at the end of their reply."""
        self._held_at: set[str] = set()
        """Holds in force: nothing new starts."""

    @property
    def rate(self) -> int:
        """Output sample rate in Hz."""
        return self._rate

    @rate.setter
    def rate(self, rate: int) -> None:
        self._rate = rate

    @property
    def generation(self) -> int:
        """Incremented by every ``stop``; pushes tagged with an older generation are dropped."""
        return self._generation

    @property
    def volume(self) -> float:
        """Target output volume (0..1)."""
        return self._volume

    def set_volume(self, volume: float) -> None:
        """Change the volume; it ramps over the next block (no zipper noise)."""
        self._volume = _clamp_volume(volume)

    def set_duck(self, gain: float) -> None:
        """Duck the output to ``gain`` (linear, 0..1) under the volume, or back to 1.0; it ramps
        linearly over ``DUCK_ATTACK_MS`` down, ``DUCK_RELEASE_MS`` up (from full to silent)."""
        self._duck_target = float(min(1.0, max(0.0, gain)))

    @property
    def duck(self) -> float:
        """The ducking gain reached so far (linear; 1.0 = not ducked)."""
        return self._duck

    def _next_duck(self, frames: int) -> float:
        """The ducking gain at the end of the next ``frames`` (the ramp's step)."""
        delta = self._duck_target - self._duck
        if delta == 0.0:
            return self._duck
        ramp_ms = DUCK_ATTACK_MS if delta < 0 else DUCK_RELEASE_MS
        step = frames / max(1.0, (self._rate or 16000) * ramp_ms / 1000.0)
        return self._duck + max(-step, min(step, delta))

    @property
    def busy(self) -> bool:
        """True while anything is queued or a reply is open at the output."""
        with self._lock:
            return bool(self._items) or self._open is not None or self._stopping

    def push(self, piece: QueuedPiece, generation: int) -> bool:
        """Queue a piece unless a ``stop`` happened since ``generation`` was read."""
        with self._lock:
            if generation != self._generation:
                return False
            self._items.append(piece)
            return True

    def push_end(self, say: str, reply: int, generation: int) -> bool:
        """Queue the end of reply ``say`` (marks ``reply_finished`` once everything before it played)."""
        with self._lock:
            if generation != self._generation:
                return False
            self._items.append(_ReplyEnd(say, reply))
            return True

    def hold(self, say: str, *, at_once: bool = False) -> None:
        """Start nothing queued after reply ``say`` until ``release(say)``; ``stop`` keeps holds.

        ``at_once`` (or when the end of ``say`` already played): nothing new starts from now on.
        Replaces an earlier hold of ``say``.
        """
        with self._lock:
            self._holds.discard(say)
            self._held_at.discard(say)
            (self._held_at if at_once or say in self._ended else self._holds).add(say)

    def release(self, say: str) -> None:
        """Drop the hold of ``say``: what waited behind it plays."""
        with self._lock:
            self._holds.discard(say)
            self._held_at.discard(say)

    @property
    def holding(self) -> bool:
        """True while the output waits at a hold with nothing started after it."""
        with self._lock:
            return bool(self._held_at)

    def stop(self) -> frozenset[int]:
        """Drop everything queued and fade out now (holds stay: the caller releases them).

        Returns the replies the output side already started or finished: each of those gets (or got)
        its ``reply_finished`` mark from ``render`` (the open one with ``interrupted=True`` once the
        fade is out); every other reply was never heard and is the caller's to close.
        """
        with self._lock:
            self._generation += 1
            self._items.clear()
            if self._open is not None and not self._stopping:
                self._stopping = True
                self._fade_left = max(1, int(self._rate * self._stop_fade_ms / 1000))
                self._fade_total = self._fade_left
            return frozenset(self._seen)

    def _remember(self, reply: int) -> None:
        self._seen[reply] = None
        while len(self._seen) > 256:
            del self._seen[next(iter(self._seen))]

    def render(self, out: FloatArray) -> list[PlaybackMark]:
        """Fill ``out`` (mono float32) with the next block; return what started/finished in it."""
        out[:] = 0.0
        marks: list[PlaybackMark] = []
        with self._lock:
            if (
                self._current is None
                and not self._items
                and not self._stopping
                and self._duck == self._duck_target
                and self._gain == self._volume
            ):
                # Nothing to play, no ramp under way (the idle device's 100 blocks a second).
                if self._open is not None:
                    self._gap += len(out)
                return marks
            if self._stopping:
                self._render_stop(out, marks)
            else:
                self._render_queue(out, marks)
            duck = self._next_duck(len(out))
            start, end = self._gain * self._duck, self._volume * duck
            if start != end:
                out *= np.linspace(start, end, len(out), dtype=np.float32)
            elif end != 1.0:
                out *= end
            self._gain, self._duck = self._volume, duck
        return marks

    def _render_stop(self, out: FloatArray, marks: list[PlaybackMark]) -> None:
        pos = 0
        piece = self._current
        if piece is not None:
            left = piece.frames - self._cursor
            k = min(len(out), self._fade_left, left)
            if k > 0:
                steps = self._fade_left - 1 - np.arange(k, dtype=np.float32)
                ramp = np.clip(steps / self._fade_total, 0.0, 1.0)
                out[:k] = piece.samples[self._cursor : self._cursor + k] * ramp
                self._cursor += k
                self._fade_left -= k
            pos = k
            if self._fade_left > 0 and self._cursor < piece.frames:
                return  # fade continues in the next block
        if self._open is not None:
            marks.append(PlaybackMark("reply_finished", self._open_say, self._open, pos, interrupted=True))
        self._open = None
        self._current = None
        self._cursor = 0
        self._gap = 0
        self._stopping = False

    def _render_queue(self, out: FloatArray, marks: list[PlaybackMark]) -> None:
        pos = 0
        n = len(out)
        while pos < n:
            if self._current is None:
                if not self._items or self._held_at:
                    break
                item = self._items.popleft()
                if isinstance(item, _ReplyEnd):
                    self._remember(item.reply)
                    marks.append(PlaybackMark("reply_finished", item.say, item.reply, pos))
                    if self._open == item.reply:
                        self._open = None
                    self._gap = 0
                    self._ended.append(item.say)
                    if item.say in self._holds:
                        self._holds.discard(item.say)
                        self._held_at.add(item.say)
                    continue
                if self._open != item.reply:
                    self._remember(item.reply)
                    marks.append(PlaybackMark("reply_started", item.say, item.reply, pos))
                    self._open = item.reply
                    self._open_say = item.say
                    self._gap = 0
                marks.append(
                    PlaybackMark("piece_started", item.say, item.reply, pos, piece=item, gap_frames=self._gap)
                )
                self._gap = 0
                self._current = item
                self._cursor = 0
            piece = self._current
            k = min(n - pos, piece.frames - self._cursor)
            out[pos : pos + k] = piece.samples[self._cursor : self._cursor + k]
            self._cursor += k
            pos += k
            if self._cursor >= piece.frames:
                self._current = None
                self._cursor = 0
        if pos < n and self._open is not None:
            self._gap += n - pos


def _clamp_volume(volume: float) -> float:
    return float(min(1.0, max(0.0, volume)))
