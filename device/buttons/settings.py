"""Settings of the tap-to-wake button (``[button]`` in the config file)."""

from __future__ import annotations

from dataclasses import dataclass

BACKENDS = ("none", "gpio", "evdev", "keyboard")
"""Button backends that can be selected explicitly."""

GPIO_FACTORIES = ("lgpio", "rpigpio", "pigpio", "native")
"""gpiozero pin factories that can be selected (never a mock)."""

LONG_PRESS_ACTIONS = ("none", "tap")
"""What the orchestrator does with a long press: ignore it, or treat it as a tap."""


@dataclass(frozen=True)
class ButtonSettings:
    """How the device is tapped awake: one explicitly chosen backend and its press timing."""

    backend: str = "none"
    """Button backend: "none", "gpio" (gpiozero), "evdev" (USB button, key, touchscreen) or
    "keyboard" (space/enter in the terminal, development only) (default "none")."""

    gpio_pin: int = 17
    """GPIO pin (BCM numbering) the button is wired to, for backend "gpio" (default 17)."""

    gpio_factory: str = "lgpio"
    """gpiozero pin factory for backend "gpio": "lgpio" (Pi 5 and later OS images), "rpigpio",
    "pigpio" or "native" (default "lgpio")."""

    pull_up: bool = True
    """Use the internal pull-up (button to ground, pressed = low) or, when false, the internal
    pull-down (button to 3V3, pressed = high) (default true). Ignored when active_high is set."""

    active_high: bool | None = None
    """For an external pull resistor: the internal pull is disabled and the pin reads pressed when
    high (true) or low (false). None derives the level from pull_up (default None)."""

    evdev_device: str | None = None
    """Input device for backend "evdev": a path (/dev/input/event3, /dev/input/by-id/...) or a device
    name (exact, else a case-insensitive substring); None picks the first device that has
    evdev_key (default None)."""

    evdev_key: str = "BTN_0"
    """Key code the evdev backend reacts to: an evdev name (BTN_0, KEY_SPACE, BTN_TOUCH for a
    touchscreen tap) or a number (default "BTN_0")."""

    evdev_grab: bool = False
    """Grab the evdev device exclusively so its events reach no other program (default false)."""

    debounce_ms: int = 30
    """A press or release counts only once the contact has been stable this long, in milliseconds;
    0 disables debouncing (default 30)."""

    long_press_ms: int = 1500
    """Holding the button this long emits a long press instead of a tap, in milliseconds
    (default 1500)."""

    long_press_action: str = "none"
    """What a long press does: "none" (ignored) or "tap" (handled like a tap) (default "none")."""

    def __post_init__(self) -> None:
        """Reject values that cannot work, naming the key."""
        if self.backend not in BACKENDS:
            raise ValueError(f"button.backend must be one of {', '.join(BACKENDS)}, not {self.backend!r}")
        if self.gpio_factory not in GPIO_FACTORIES:
            raise ValueError(
                f"button.gpio_factory must be one of {', '.join(GPIO_FACTORIES)}, not {self.gpio_factory!r}"
            )
        if self.long_press_action not in LONG_PRESS_ACTIONS:
            raise ValueError(
                f"button.long_press_action must be one of {', '.join(LONG_PRESS_ACTIONS)}, "
                f"not {self.long_press_action!r}"
            )
        if not 0 <= self.gpio_pin <= 63:
            raise ValueError(f"button.gpio_pin must be a BCM pin number 0..63, not {self.gpio_pin}")
        if self.debounce_ms < 0:
            raise ValueError(f"button.debounce_ms must be >= 0, not {self.debounce_ms}")
        if self.long_press_ms <= self.debounce_ms:
            raise ValueError(
                f"button.long_press_ms ({self.long_press_ms}) must be longer than "
                f"button.debounce_ms ({self.debounce_ms})"
            )
