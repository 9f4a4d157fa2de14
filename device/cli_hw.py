"""Hardware commands: ``robot-face doctor`` and ``robot-face button-test``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from typing import Any

from device.buttons.choice import ButtonPress, ButtonUnavailable, action_for, make_button
from device.buttons.settings import ButtonSettings
from device.doctor.result import CheckResult, exit_code, render

_LOGGER = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``doctor`` and ``button-test``."""
    from device.cli import add_config_arguments

    doctor = sub.add_parser(
        "doctor",
        help="check this device can run robot-face (audio, models, broker, clock, state, button)",
        description="Checks everything a deployment needs and explains how to fix what is missing. "
        "Exit code 1 when something required is missing.",
    )
    add_config_arguments(doctor)
    doctor.add_argument("--deep", action="store_true", help="also load the models and record a level check")
    doctor.add_argument("--json", action="store_true", help="print the results as JSON")
    doctor.set_defaults(func=_doctor)

    test = sub.add_parser("button-test", help="print every button press (tap / long) until Ctrl-C")
    add_config_arguments(test)
    test.add_argument(
        "--backend", choices=("gpio", "evdev", "keyboard", "none"), help="override button.backend"
    )
    test.add_argument("--gpio-pin", type=int, metavar="BCM", help="override button.gpio_pin")
    test.add_argument("--evdev-device", metavar="PATH|NAME", help="override button.evdev_device")
    test.add_argument("--evdev-key", metavar="CODE", help="override button.evdev_key (e.g. BTN_TOUCH)")
    test.add_argument(
        "--seconds", type=float, default=0.0, help="stop after this long (default: until Ctrl-C)"
    )
    test.set_defaults(func=_button_test)


def _load(args: argparse.Namespace) -> Any:
    from device.cli import config_from_args

    return config_from_args(args)


def _doctor(args: argparse.Namespace) -> int:
    from device.doctor.checks import check_config

    try:
        config = _load(args)
    except ValueError as exc:  # ConfigError / LinkConfigError / a settings __post_init__
        results = [CheckResult("configuration", "fail", str(exc), "fix the named key in the config file")]
    else:
        where = args.config or "built-in defaults"
        results = [CheckResult("configuration", "ok", f"{where} is valid"), *check_config(config, args.deep)]
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        print(render(results))
    return exit_code(results)


def _button_settings(args: argparse.Namespace, base: ButtonSettings) -> ButtonSettings:
    changes: dict[str, Any] = {}
    for option, field in (
        ("backend", "backend"),
        ("gpio_pin", "gpio_pin"),
        ("evdev_device", "evdev_device"),
        ("evdev_key", "evdev_key"),
    ):
        value = getattr(args, option, None)
        if value is not None:
            changes[field] = value
    return dataclasses.replace(base, **changes)


def _button_test(args: argparse.Namespace) -> int:
    try:
        settings = _button_settings(args, _load(args).button)
    except ValueError as exc:
        print(f"✘ {exc}")
        return 2
    try:
        return asyncio.run(_print_presses(settings, args.seconds))
    except KeyboardInterrupt:
        return 0


async def _print_presses(settings: ButtonSettings, seconds: float) -> int:
    if settings.backend == "none":
        print(
            "✘ button: none configured (button.backend = none): nothing to test; set button.backend "
            "in the config or pass --backend gpio|evdev|keyboard"
        )
        return 2
    try:
        button = make_button(settings)
    except ButtonUnavailable as exc:
        print(f"✘ button ({settings.backend}): {exc}")
        return 1
    start = time.time()

    def show(press: ButtonPress) -> None:
        action = action_for(press, settings)
        print(f"{press.ts - start:8.3f} s  {press.kind:<4} from {press.source}  -> {action}", flush=True)

    print(f"button-test: backend {settings.backend}; press the button (Ctrl-C to stop)", flush=True)
    button.start(asyncio.get_running_loop(), show)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            if seconds > 0:
                await asyncio.sleep(seconds)
            else:
                await asyncio.Event().wait()
    finally:
        button.close()
    return 0
