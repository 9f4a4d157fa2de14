"""Button from a Linux input device via evdev: a USB button, a keyboard key or a touchscreen tap."""

from __future__ import annotations

import asyncio
import logging
import os
import selectors
import threading
from typing import Any

from device.buttons.press import ButtonUnavailable, PressCallback, PressSource, PressWorker
from device.buttons.settings import ButtonSettings

_LOGGER = logging.getLogger(__name__)

_REOPEN_S = 2.0
"""Seconds between attempts to reopen an input device that went away (USB unplugged)."""


def _evdev() -> Any:
    try:
        import evdev
    except ImportError as exc:
        raise ButtonUnavailable(
            "button.backend = 'evdev' needs the evdev package (pip install 'robot-face[pi]')"
        ) from exc
    return evdev


def resolve_key(name: str) -> int:
    """The evdev code of ``name`` (``BTN_0``, ``KEY_SPACE``, ``BTN_TOUCH`` or a number)."""
    if name.strip().isdigit():
        return int(name)
    code = _evdev().ecodes.ecodes.get(name.strip().upper())
    if code is None:
        raise ButtonUnavailable(
            f"button.evdev_key {name!r} is not an evdev key name (examples: BTN_0, KEY_SPACE, BTN_TOUCH)"
        )
    return int(code)


def _describe(devices: list[Any]) -> str:
    return ", ".join(f"{d.name!r} ({d.path})" for d in devices) or "none"


def open_input_device(spec: str | None, code: int) -> Any:
    """Open the device named by ``spec`` (path or name; None: the first with ``code``) that has ``code``."""
    evdev = _evdev()
    key_name = evdev.ecodes.KEY.get(code) or evdev.ecodes.BTN.get(code) or str(code)
    if spec is not None and spec.startswith("/"):
        try:
            device = evdev.InputDevice(spec)
        except PermissionError as exc:
            raise ButtonUnavailable(
                f"cannot read input device {spec}: permission denied; add the user to group 'input'"
            ) from exc
        except OSError as exc:
            raise ButtonUnavailable(f"input device {spec} is unavailable: {exc}") from exc
        candidates = [device]
    else:
        devices = []
        for path in sorted(evdev.list_devices()):
            try:
                devices.append(evdev.InputDevice(path))
            except OSError as exc:
                _LOGGER.debug("skipping %s: %s", path, exc)
        if spec is None:
            candidates = [d for d in devices if code in d.capabilities().get(evdev.ecodes.EV_KEY, [])]
        else:
            exact = [d for d in devices if d.name == spec]
            candidates = exact or [d for d in devices if spec.lower() in d.name.lower()]
        chosen = candidates[0] if candidates else None
        for d in devices:
            if d is not chosen:
                d.close()
        if chosen is None:
            wanted = f"named {spec!r}" if spec else f"with key {key_name}"
            raise ButtonUnavailable(
                f"no input device {wanted}; readable devices: {_describe(devices)} "
                "(is the user in group 'input'? set button.evdev_device)"
            )
        candidates = [chosen]
    device = candidates[0]
    keys = device.capabilities().get(evdev.ecodes.EV_KEY, [])
    if code not in keys:
        device.close()
        raise ButtonUnavailable(f"input device {device.name!r} ({device.path}) has no key {key_name}")
    return device


class EvdevButton:
    """Reads key events of one code from an input device in a thread; value 1 pressed, 0 released.

    ``device`` is an already open ``evdev.InputDevice`` (or anything with ``fd``, ``read()``,
    ``grab()``, ``close()``, ``name``, ``path``); by default the one named in the settings is opened.
    """

    def __init__(self, settings: ButtonSettings, device: Any | None = None) -> None:
        self._evdev = _evdev()
        self._code = resolve_key(settings.evdev_key)
        self._spec = settings.evdev_device
        self._grab = settings.evdev_grab
        self._can_reopen = device is None
        self._device = device if device is not None else open_input_device(self._spec, self._code)
        source: PressSource = "screen" if self._code == self._evdev.ecodes.BTN_TOUCH else "button"
        self.source: PressSource = source
        self._worker = PressWorker(source, settings.debounce_ms, settings.long_press_ms)
        self._wake_r, self._wake_w = os.pipe()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop, callback: PressCallback) -> None:
        """Start reading the device; presses go to ``callback`` on ``loop``."""
        pressed = False
        try:
            pressed = self._code in self._device.active_keys()
        except Exception:
            _LOGGER.debug("active_keys unavailable", exc_info=True)
        self._worker.start(loop, callback, initially_pressed=pressed)
        if self._grab:
            self._device.grab()
        self._thread = threading.Thread(target=self._run, name="button-evdev", daemon=True)
        self._thread.start()
        _LOGGER.info("evdev button ready: %s (%s)", getattr(self._device, "name", "?"), self.source)

    def handle_event(self, event: Any) -> None:
        """Feed one ``evdev.InputEvent``; key events of our code become edges, others are ignored."""
        if event.type != self._evdev.ecodes.EV_KEY or event.code != self._code:
            return
        if event.value == 1:
            self._worker.edge(True)
        elif event.value == 0:
            self._worker.edge(False)
        # value 2 is auto-repeat while held: not an edge

    def close(self) -> None:
        """Stop the reader and the worker, release the device (idempotent)."""
        self._stop.set()
        if self._wake_w >= 0:
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        self._worker.close()
        if self._device is not None:
            try:
                self._device.close()
            except Exception:
                _LOGGER.debug("closing input device failed", exc_info=True)
            self._device = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        while not self._stop.is_set():
            device = self._device
            if device is None:
                return
            try:
                self._read_until_stopped(device)
            except OSError as exc:
                _LOGGER.warning("input device %s failed: %s", getattr(device, "path", "?"), exc)
                self._worker.edge(False)
                if not self._can_reopen or not self._reopen():
                    return

    def _read_until_stopped(self, device: Any) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(device.fd, selectors.EVENT_READ, "device")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self._stop.is_set():
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    for event in device.read():
                        self.handle_event(event)

    def _reopen(self) -> bool:
        """Retry opening the device until it is back or we are stopped; True when reopened."""
        try:
            self._device.close()
        except Exception:
            _LOGGER.debug("closing failed input device", exc_info=True)
        while not self._stop.wait(_REOPEN_S):
            try:
                self._device = open_input_device(self._spec, self._code)
            except ButtonUnavailable as exc:
                _LOGGER.debug("input device still unavailable: %s", exc)
                continue
            if self._grab:
                self._device.grab()
            _LOGGER.info("input device back: %s", self._device.path)
            return True
        return False
