"""Development button: space or enter in the terminal is a tap, ``l`` a long press.

A terminal cannot report key releases, so there is no hold timing here: a long press has its own
key. Only usable when the input stream is a terminal (never under systemd).
"""

from __future__ import annotations

import asyncio
import logging
import os
import selectors
import sys
import termios
import threading
import time
import tty
from typing import Any

from device.buttons.press import ButtonPress, ButtonUnavailable, PressCallback, PressKind
from device.buttons.settings import ButtonSettings

_LOGGER = logging.getLogger(__name__)

TAP_KEYS = frozenset(b" \r\n")
"""Bytes that mean a tap."""

LONG_KEYS = frozenset(b"lL")
"""Bytes that mean a long press."""


class KeyboardButton:
    """Reads single keys from a terminal in cbreak mode (restored on close) in a thread."""

    def __init__(self, settings: ButtonSettings, fd: int | None = None) -> None:
        self._fd = sys.stdin.fileno() if fd is None else fd
        if not os.isatty(self._fd):
            raise ButtonUnavailable(
                "button.backend = 'keyboard' needs an interactive terminal on stdin; "
                "use 'gpio' or 'evdev' for a service, or 'none'"
            )
        self._settings = settings
        self._saved: list[Any] | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._callback: PressCallback | None = None

    def start(self, loop: asyncio.AbstractEventLoop, callback: PressCallback) -> None:
        """Switch the terminal to cbreak mode and start reading keys."""
        self._loop, self._callback = loop, callback
        self._saved = termios.tcgetattr(self._fd)
        tty.setcbreak(self._fd)
        self._thread = threading.Thread(target=self._run, name="button-keyboard", daemon=True)
        self._thread.start()
        _LOGGER.info("keyboard button ready: space/enter = tap, l = long press")

    def handle_bytes(self, data: bytes) -> None:
        """Turn typed bytes into presses (other keys are ignored)."""
        for byte in data:
            kind: PressKind | None = "tap" if byte in TAP_KEYS else "long" if byte in LONG_KEYS else None
            if kind is not None and self._loop is not None and self._callback is not None:
                press = ButtonPress(kind=kind, source="keyboard", ts=time.time())
                try:
                    self._loop.call_soon_threadsafe(self._callback, press)
                except RuntimeError:
                    _LOGGER.debug("event loop closed; dropped %s", press)

    def close(self) -> None:
        """Stop reading and restore the terminal (idempotent)."""
        if self._wake_w >= 0:
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._saved is not None:
            try:
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            except termios.error:
                _LOGGER.debug("could not restore the terminal", exc_info=True)
            self._saved = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._fd, selectors.EVENT_READ, "tty")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while True:
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    try:
                        data = os.read(self._fd, 64)
                    except OSError as exc:
                        _LOGGER.warning("terminal read failed: %s; keyboard button stopped", exc)
                        return
                    if not data:
                        _LOGGER.info("terminal closed; keyboard button stopped")
                        return
                    self.handle_bytes(data)
