"""Button presses: the event, a clock-free debounce/long-press model and the thread that runs it.

Backends only report raw contact edges (``pressed`` true/false). :class:`PressDetector` turns those
into taps and long presses; :class:`PressWorker` owns one detector in a small thread (it needs timers
for the debounce window and the long-press threshold) and hands each press to the asyncio loop with
``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

_LOGGER = logging.getLogger(__name__)

PressKind = Literal["tap", "long"]
PressSource = Literal["button", "screen", "keyboard"]


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A debounced press: ``kind`` tap or long, where it came from, ``ts`` unix seconds of the press."""

    kind: PressKind
    source: PressSource
    ts: float


PressCallback = Callable[[ButtonPress], None]
"""Receives presses on the asyncio loop thread; must not block."""


class ButtonUnavailable(RuntimeError):
    """The selected button backend cannot run here (library, device, pin or terminal missing)."""


class PressDetector:
    """Debounce raw edges and classify presses; pure: time arrives as ``ts`` (seconds, any base).

    A contact change counts once it has been stable for ``debounce_s``. A press held for
    ``long_s`` emits ``"long"`` as soon as the threshold is reached (its release emits nothing); a
    shorter press emits ``"tap"`` on release. Each emitted item is ``(kind, press_start_ts)``.
    """

    def __init__(self, debounce_s: float, long_s: float) -> None:
        self._debounce_s = debounce_s
        self._long_s = long_s
        self._stable = False
        self._raw = False
        self._raw_since = 0.0
        self._press_ts: float | None = None
        self._consumed = False

    @property
    def pressed(self) -> bool:
        """The debounced contact state."""
        return self._stable

    def reset(self, pressed: bool, ts: float) -> None:
        """Start from a known state; a button already held at start never emits (it is not a press)."""
        self._stable = self._raw = pressed
        self._raw_since = ts
        self._press_ts = ts if pressed else None
        self._consumed = pressed

    def edge(self, pressed: bool, ts: float) -> list[tuple[PressKind, float]]:
        """Record a raw contact edge at ``ts``; returns what became due up to ``ts``."""
        out = self.tick(ts)
        if pressed != self._raw:
            self._raw = pressed
            self._raw_since = ts
        out.extend(self.tick(ts))
        return out

    def tick(self, ts: float) -> list[tuple[PressKind, float]]:
        """Advance time to ``ts``: settle a stable edge, fire the long-press threshold."""
        out: list[tuple[PressKind, float]] = []
        if self._raw != self._stable and ts - self._raw_since >= self._debounce_s:
            self._stable = self._raw
            if self._stable:
                self._press_ts = self._raw_since
                self._consumed = False
            else:
                if self._press_ts is not None and not self._consumed:
                    out.append(("tap", self._press_ts))
                self._press_ts = None
        held = self._press_ts is not None and self._stable and not self._consumed
        if held and self._press_ts is not None and ts - self._press_ts >= self._long_s:
            self._consumed = True
            out.append(("long", self._press_ts))
        return out

    def next_deadline(self) -> float | None:
        """The earliest ``ts`` at which :meth:`tick` may emit or settle something, if any."""
        deadlines: list[float] = []
        if self._raw != self._stable:
            deadlines.append(self._raw_since + self._debounce_s)
        if self._stable and self._press_ts is not None and not self._consumed:
            deadlines.append(self._press_ts + self._long_s)
        return min(deadlines) if deadlines else None


_STOP = object()


class PressWorker:
    """Runs a :class:`PressDetector` in a thread fed by :meth:`edge` (callable from any thread)."""

    def __init__(
        self,
        source: PressSource,
        debounce_ms: int,
        long_press_ms: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source: PressSource = source
        self._detector = PressDetector(debounce_ms / 1000.0, long_press_ms / 1000.0)
        self._clock = clock
        self._edges: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._callback: PressCallback | None = None

    def start(
        self, loop: asyncio.AbstractEventLoop, callback: PressCallback, initially_pressed: bool = False
    ) -> None:
        """Start the thread; presses go to ``callback`` on ``loop``."""
        if self._thread is not None:
            raise RuntimeError("button already started")
        self._loop, self._callback = loop, callback
        self._detector.reset(initially_pressed, self._clock())
        self._thread = threading.Thread(target=self._run, name=f"button-{self._source}", daemon=True)
        self._thread.start()

    def edge(self, pressed: bool) -> None:
        """Report a raw contact edge now (thread-safe, never blocks)."""
        self._edges.put((bool(pressed), self._clock()))

    def close(self) -> None:
        """Stop the thread (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._edges.put(_STOP)
            thread.join(timeout=2.0)

    def _run(self) -> None:
        while True:
            deadline = self._detector.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - self._clock())
            try:
                item = self._edges.get(timeout=timeout)
            except queue.Empty:
                self._emit(self._detector.tick(self._clock()))
                continue
            if item is _STOP:
                return
            assert isinstance(item, tuple)
            self._emit(self._detector.edge(bool(item[0]), float(item[1])))

    def _emit(self, presses: list[tuple[PressKind, float]]) -> None:
        if not presses or self._loop is None or self._callback is None:
            return
        offset = time.time() - self._clock()
        for kind, start in presses:
            press = ButtonPress(kind=kind, source=self._source, ts=start + offset)
            _LOGGER.debug("button %s: %s", self._source, kind)
            try:
                self._loop.call_soon_threadsafe(self._callback, press)
            except RuntimeError:
                _LOGGER.debug("event loop closed; dropped %s", press)
