"""Refreshing PortAudio's device list safely (one ``PortAudio`` helper per sounddevice backend).

Why: PortAudio enumerates audio devices once, in ``Pa_Initialize``. A USB microphone or speaker that
was not plugged in when the daemon started, or that re-enumerates as a new device after being
unplugged, stays invisible to ``sd.query_devices()`` (or keeps a stale entry that cannot be opened)
until PortAudio is re-initialised. sounddevice exposes the private ``sd._terminate()`` /
``sd._initialize()`` pair for that.

The rule: never terminate PortAudio while one of this process's streams is open -- ``Pa_Terminate``
closes every open stream under its owner's feet. So every sounddevice stream is opened through
``PortAudio.open_stream`` (which counts it) and closed through ``PortAudio.close_stream``;
``refresh_devices()`` re-initialises only when the count is zero, at most once per
``min_interval_s``, and all of it happens under one lock, so no stream can be created (and no
device queried) half-way through a refresh. A stream that died (device unplugged) still counts
until its owner closes it: the stream object still holds PortAudio resources.

Only when the hardware changed: on Linux the set of sound cards (``/proc/asound/cards`` and the
nodes in ``/dev/snd``) is compared with what it was at the last re-initialisation; if nothing was
plugged in or out since, a rescan would find the same list, so it is skipped (a missing microphone
retried every two seconds does not keep re-initialising PortAudio, nor make the speaker give way
every time). Where that cannot be read (other systems, containers without sound) every allowed
refresh runs. The first refresh always runs: what PortAudio saw at import is unknown.

Cooperation: the speaker keeps its output stream open all the time (it plays silence while idle),
so a missing microphone could never trigger a refresh while the speaker works. A refresh that was
refused because streams are open is therefore remembered as a *request* (valid ``request_ttl_s``);
a stream owner that can pause safely polls ``refresh_wanted(own_streams)`` and, when it is idle,
closes its stream, calls ``refresh_devices()`` and reopens (``SoundDeviceSink`` does this between
replies). The microphone does the same (``Listener``, between utterances), but only on evidence
that the hardware changed (``require_change``): closing it costs what the user might say in that
half second, so a missing speaker makes it give way once per plug-in, not every few seconds, and
never where the card list cannot be read.

Also note: PortAudio's initialisation is reference counted; if something else in the process called
``Pa_Initialize`` too, ``_terminate()`` does not really terminate and the list is not rescanned.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")

COMMON_RATES = (48000, 44100)
"""Rates (Hz) a stream is tried at after the wanted one and the device's reported default: an ALSA
``hw:`` device may report a default it cannot run at."""


def linux_sound_cards() -> str | None:
    """What sound hardware is plugged in (Linux: ``/proc/asound/cards`` plus the ``/dev/snd``
    nodes), or None where that cannot be read. Only compared for equality."""
    try:
        cards = Path("/proc/asound/cards").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    try:
        nodes = sorted(os.listdir("/dev/snd"))
    except OSError:
        nodes = []
    return cards + "\n" + " ".join(nodes)


class PortAudio:
    """Counts this process's open streams on one sounddevice ``backend`` and re-initialises it."""

    def __init__(
        self,
        backend: Any,
        *,
        min_interval_s: float = 2.0,
        request_ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        hardware: Callable[[], str | None] = linux_sound_cards,
    ) -> None:
        self.backend = backend
        self.min_interval_s = min_interval_s
        """Shortest time between two refreshes (a reopen loop cannot hammer PortAudio)."""
        self.request_ttl_s = request_ttl_s
        """How long a refused refresh stays requested for cooperating stream owners."""
        self.lock = threading.RLock()
        """Held while a refresh runs; hold it around 'query devices + open a stream' too."""
        self.refreshes = 0
        """Successful refreshes so far."""
        self.hardware = hardware
        """Fingerprint of the plugged-in sound hardware (None: unknown, refresh whenever allowed)."""
        self._clock = clock
        self._enumerated: str | None = None
        self._streams: dict[int, Any] = {}
        self._last_refresh: float | None = None
        self._requested_at: float | None = None
        self._uninitialised = False

    @property
    def open_streams(self) -> int:
        """Streams opened through this helper and not closed yet."""
        with self.lock:
            return len(self._streams)

    @property
    def can_refresh(self) -> bool:
        """Whether the backend has sounddevice's ``_terminate``/``_initialize`` pair."""
        return callable(getattr(self.backend, "_terminate", None)) and callable(
            getattr(self.backend, "_initialize", None)
        )

    def open_stream(self, factory: Callable[[], Any]) -> Any:
        """Create a stream with ``factory()`` under the lock (never during a refresh) and count it."""
        with self.lock:
            stream = factory()
            self._streams[id(stream)] = stream
            return stream

    def close_stream(self, stream: Any) -> None:
        """Stop and close ``stream`` (outside the lock: stopping waits for PortAudio's callback
        thread), then stop counting it. Errors of a dead stream are logged, not raised."""
        try:
            stream.stop()
            stream.close()
        except Exception as err:
            _LOGGER.debug("closing stream: %s", err)
        finally:
            self.forget_stream(stream)

    def forget_stream(self, stream: Any) -> None:
        """Stop counting ``stream`` (it is closed; idempotent)."""
        with self.lock:
            self._streams.pop(id(stream), None)

    def hardware_changed(self) -> bool | None:
        """Whether sound hardware was plugged in or out since PortAudio last enumerated it (True
        before the first refresh: what it saw at import is unknown); None where it cannot be told."""
        now = self.hardware()
        if now is None:
            return None
        return self._enumerated is None or now != self._enumerated

    def refresh_wanted(self, own_streams: int = 0, *, require_change: bool = False) -> bool:
        """Whether someone asked for a refresh that would be allowed now if the caller closed its
        ``own_streams`` streams (a cooperating owner then closes them and calls ``refresh_devices``).
        With ``require_change``, only on evidence that the hardware changed (not when unknown)."""
        if not self.can_refresh:
            return False
        with self.lock:
            now = self._clock()
            requested = self._requested_at is not None and now - self._requested_at <= self.request_ttl_s
            if not requested or len(self._streams) > own_streams or self._rate_limited(now):
                return False
            changed = self.hardware_changed()
            return changed is True if require_change else changed is not False

    def refresh_devices(self) -> bool:
        """Re-initialise PortAudio so it rescans devices; only when no stream is open, the hardware
        may have changed and not more often than ``min_interval_s``. Returns whether it refreshed.
        A refusal because streams are open is remembered as a request (see ``refresh_wanted``)."""
        if not self.can_refresh:
            return False
        with self.lock:
            now = self._clock()
            if self.hardware_changed() is False:
                _LOGGER.debug("device refresh skipped: no sound hardware plugged in or out since the last")
                return False
            if self._streams:
                self._requested_at = now
                _LOGGER.debug("device refresh deferred: %d stream(s) open", len(self._streams))
                return False
            if self._rate_limited(now):
                return False
            self._last_refresh = now
            seen = self.hardware()  # before rescanning: a change during it shows up next time
            before = self._device_names()
            try:
                if not self._uninitialised:
                    self.backend._terminate()
                    self._uninitialised = True
                self.backend._initialize()
                self._uninitialised = False
            except Exception as err:
                _LOGGER.warning("re-initialising PortAudio failed: %s", err)
                return False
            self._enumerated = seen
            self.refreshes += 1
            self._requested_at = None
            after = self._device_names()
            if after != before:
                _LOGGER.info("audio devices changed: now %s", ", ".join(map(repr, after)) or "none")
            else:  # nothing new (the usual case while a device stays missing): no log noise
                _LOGGER.debug("audio device list rescanned: unchanged")
            return True

    def _device_names(self) -> list[str]:
        try:
            return [str(d["name"]) for d in self.backend.query_devices()]
        except Exception:  # not initialised, or a backend without a list
            return []

    def with_refresh(self, attempt: Callable[[], T], what: str, errors: type[Exception] = Exception) -> T:
        """``attempt()`` under the lock (no refresh between finding a device and counting its
        stream); if it raises one of ``errors`` and a refresh is allowed, refresh and try once more."""
        with self.lock:
            try:
                return attempt()
            except errors as err:
                if not self.refresh_devices():
                    raise
                _LOGGER.debug("retrying %s after the device refresh (%s)", what, err)
            return attempt()

    def _rate_limited(self, now: float) -> bool:
        return self._last_refresh is not None and now - self._last_refresh < self.min_interval_s


_SHARED: weakref.WeakKeyDictionary[Any, PortAudio] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared(backend: Any = None) -> PortAudio:
    """The process-wide helper for ``backend`` (default: the ``sounddevice`` module)."""
    if backend is None:
        import sounddevice

        backend = sounddevice
    with _SHARED_LOCK:
        helper = _SHARED.get(backend)
        if helper is None:
            helper = _SHARED[backend] = PortAudio(backend)
        return helper
