"""Tap-to-wake button: one interface, backends chosen explicitly by ``ButtonSettings.backend``.

A backend only hands each debounced press to the orchestrator:
``loop.call_soon_threadsafe(callback, ButtonPress(kind, source, ts))``. Selecting a backend that
cannot run here raises :class:`ButtonUnavailable`; there is never a silent fallback to a fake.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal, Protocol

from device.buttons.evdev_button import EvdevButton
from device.buttons.gpio_button import GpioButton
from device.buttons.keyboard_button import KeyboardButton
from device.buttons.press import ButtonPress, ButtonUnavailable, PressCallback
from device.buttons.settings import ButtonSettings

_LOGGER = logging.getLogger(__name__)

__all__ = [
    "Button",
    "ButtonPress",
    "ButtonUnavailable",
    "EvdevButton",
    "GpioButton",
    "KeyboardButton",
    "NoButton",
    "action_for",
    "make_button",
]


class Button(Protocol):
    """A source of button presses."""

    def start(self, loop: asyncio.AbstractEventLoop, callback: PressCallback) -> None:
        """Start delivering presses to ``callback`` on ``loop`` (thread-safe hand-off)."""

    def close(self) -> None:
        """Stop and release the hardware (idempotent)."""


class NoButton:
    """No button configured: never emits anything."""

    def __init__(self, settings: ButtonSettings | None = None) -> None:
        self._settings = settings

    def start(self, loop: asyncio.AbstractEventLoop, callback: PressCallback) -> None:
        """Nothing to start."""
        _LOGGER.info("no button configured (button.backend = 'none')")

    def close(self) -> None:
        """Nothing to release."""


def make_button(settings: ButtonSettings) -> Button:
    """The backend named by ``settings.backend``; raises :class:`ButtonUnavailable` if it cannot run."""
    if settings.backend == "gpio":
        return GpioButton(settings)
    if settings.backend == "evdev":
        return EvdevButton(settings)
    if settings.backend == "keyboard":
        return KeyboardButton(settings)
    if settings.backend == "none":
        return NoButton(settings)
    raise ButtonUnavailable(f"unknown button.backend {settings.backend!r}")


def action_for(press: ButtonPress, settings: ButtonSettings) -> Literal["tap", "none"]:
    """What the orchestrator should do with ``press``: a tap, or nothing (long press per settings)."""
    if press.kind == "tap":
        return "tap"
    return "tap" if settings.long_press_action == "tap" else "none"
