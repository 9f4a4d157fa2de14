"""Keyboard backend on a real pseudo-terminal; ``none`` and the factory."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from device.buttons.choice import (
    ButtonPress,
    ButtonUnavailable,
    KeyboardButton,
    NoButton,
    action_for,
    make_button,
)
from device.buttons.settings import ButtonSettings
from tests.device.button_helpers import PressCollector


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


async def test_space_enter_tap_and_l_long_then_terminal_restored(pty: tuple[int, int]) -> None:
    master, slave = pty
    before = termios.tcgetattr(slave)
    button = KeyboardButton(ButtonSettings(backend="keyboard"), fd=slave)
    got = PressCollector()
    button.start(got.loop, got)
    try:
        assert not termios.tcgetattr(slave)[3] & termios.ICANON  # cbreak: keys arrive one by one
        os.write(master, b" x")
        os.write(master, b"\r")
        os.write(master, b"l")
        presses = await got.wait_for(3)
    finally:
        button.close()
    assert [(p.kind, p.source) for p in presses] == [
        ("tap", "keyboard"),
        ("tap", "keyboard"),
        ("long", "keyboard"),
    ]
    assert termios.tcgetattr(slave) == before


def test_keyboard_without_a_terminal_is_a_clear_error() -> None:
    r, w = os.pipe()
    try:
        with pytest.raises(ButtonUnavailable, match="interactive terminal"):
            KeyboardButton(ButtonSettings(backend="keyboard"), fd=r)
    finally:
        os.close(r)
        os.close(w)


async def test_none_backend_never_emits() -> None:
    button = make_button(ButtonSettings())
    assert isinstance(button, NoButton)
    got = PressCollector()
    button.start(got.loop, got)
    assert await got.settle(0.05) == []
    button.close()


@pytest.mark.parametrize(
    ("kind", "action", "expected"),
    [("tap", "none", "tap"), ("long", "none", "none"), ("long", "tap", "tap"), ("tap", "tap", "tap")],
)
def test_long_press_action(kind: str, action: str, expected: str) -> None:
    press = ButtonPress(kind=kind, source="button", ts=0.0)  # type: ignore[arg-type]
    assert action_for(press, ButtonSettings(long_press_action=action)) == expected


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("backend", "mock", "button.backend"),
        ("gpio_factory", "mock", "button.gpio_factory"),
        ("long_press_action", "sleep", "button.long_press_action"),
        ("gpio_pin", 99, "button.gpio_pin"),
        ("debounce_ms", -1, "button.debounce_ms"),
        ("long_press_ms", 10, "button.long_press_ms"),
    ],
)
def test_settings_reject_bad_values_naming_the_key(field: str, value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ButtonSettings(**{field: value})  # type: ignore[arg-type]
