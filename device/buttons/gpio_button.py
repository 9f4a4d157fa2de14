"""GPIO push button via gpiozero, on an explicitly chosen pin factory (lgpio on a Pi 5)."""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

from device.buttons.press import ButtonUnavailable, PressCallback, PressWorker
from device.buttons.settings import ButtonSettings

_LOGGER = logging.getLogger(__name__)

_FACTORIES = {
    "lgpio": (
        "gpiozero.pins.lgpio",
        "LGPIOFactory",
        "lgpio (apt install python3-lgpio, or pip install lgpio)",
    ),
    "rpigpio": ("gpiozero.pins.rpigpio", "RPiGPIOFactory", "RPi.GPIO (pip install RPi.GPIO)"),
    "pigpio": ("gpiozero.pins.pigpio", "PiGPIOFactory", "pigpio (pip install pigpio, and run pigpiod)"),
    "native": ("gpiozero.pins.native", "NativeFactory", "gpiozero's native factory (Pi 4 and older)"),
}


def make_pin_factory(name: str) -> Any:
    """Create the named gpiozero pin factory, or raise :class:`ButtonUnavailable` saying why."""
    if name not in _FACTORIES:
        raise ButtonUnavailable(f"unknown GPIO pin factory {name!r}; choose one of {', '.join(_FACTORIES)}")
    module_name, class_name, needs = _FACTORIES[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ButtonUnavailable(
            f"GPIO pin factory {name!r} needs {needs}: {exc}. Install the 'pi' extra "
            "(pip install 'robot-face[pi]') or choose another button.backend"
        ) from exc
    try:
        return getattr(module, class_name)()
    except Exception as exc:
        raise ButtonUnavailable(
            f"GPIO pin factory {name!r} cannot start here: {type(exc).__name__}: {exc}. "
            f"It needs {needs} on a Raspberry Pi with /dev/gpiochip* readable by this user "
            "(group 'gpio'); choose another button.backend on other machines"
        ) from exc


class GpioButton:
    """A push button on a GPIO pin; edges are debounced and classified by a :class:`PressWorker`.

    ``pin_factory`` overrides ``settings.gpio_factory`` (tests pass gpiozero's ``MockFactory``);
    nothing ever falls back to a mock on its own.
    """

    def __init__(self, settings: ButtonSettings, pin_factory: Any | None = None) -> None:
        try:
            from gpiozero import Button as GpioZeroButton
        except ImportError as exc:
            raise ButtonUnavailable(
                "button.backend = 'gpio' needs gpiozero (pip install 'robot-face[pi]')"
            ) from exc
        self._owns_factory = pin_factory is None
        factory = make_pin_factory(settings.gpio_factory) if pin_factory is None else pin_factory
        self._factory = factory
        if settings.active_high is None:
            pull_up: bool | None = settings.pull_up
            active_state: bool | None = None
        else:
            pull_up, active_state = None, settings.active_high
        try:
            self._device = GpioZeroButton(
                settings.gpio_pin,
                pull_up=pull_up,
                active_state=active_state,
                bounce_time=None,
                pin_factory=factory,
            )
        except Exception as exc:
            if self._owns_factory:
                _close_quietly(factory)
            raise ButtonUnavailable(
                f"GPIO pin {settings.gpio_pin} is unavailable: {type(exc).__name__}: {exc}. "
                "Check button.gpio_pin (BCM numbering) and that no other program holds the pin"
            ) from exc
        self._pin = settings.gpio_pin
        self._worker = PressWorker("button", settings.debounce_ms, settings.long_press_ms)
        self._started = False

    def start(self, loop: asyncio.AbstractEventLoop, callback: PressCallback) -> None:
        """Start delivering presses to ``callback`` on ``loop``."""
        self._worker.start(loop, callback, initially_pressed=bool(self._device.is_pressed))
        self._device.when_pressed = self._on_pressed
        self._device.when_released = self._on_released
        self._started = True
        _LOGGER.info("GPIO button on pin %d ready", self._pin)

    def close(self) -> None:
        """Release the pin and stop the worker (idempotent)."""
        if self._started:
            self._device.when_pressed = None
            self._device.when_released = None
            self._started = False
        _close_quietly(self._device)
        if self._owns_factory:
            _close_quietly(self._factory)
            self._owns_factory = False
        self._worker.close()

    def _on_pressed(self) -> None:
        self._worker.edge(True)

    def _on_released(self) -> None:
        self._worker.edge(False)


def _close_quietly(thing: Any) -> None:
    try:
        thing.close()
    except Exception:
        _LOGGER.debug("closing %r failed", thing, exc_info=True)
