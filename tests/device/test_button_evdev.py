"""evdev backend fed synthetic ``evdev.InputEvent`` objects (no /dev/input needed)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from evdev import InputEvent, ecodes

from device.buttons.choice import ButtonUnavailable, EvdevButton, make_button
from device.buttons.evdev_button import resolve_key
from device.buttons.settings import ButtonSettings
from tests.device.button_helpers import PressCollector


class PipeInputDevice:
    """Behaves like ``evdev.InputDevice`` for reading: a readable fd, ``read()`` of pending events."""

    def __init__(self, name: str = "USB Button", keys: tuple[int, ...] = (ecodes.BTN_0,)) -> None:
        self.name = name
        self.path = "/dev/input/event-test"
        self._r, self._w = os.pipe()
        self.fd = self._r
        self._pending: list[InputEvent] = []
        self._keys = list(keys)
        self.grabbed = False
        self.closed = False
        self.fail_next_read = False

    def push(self, *events: InputEvent) -> None:
        self._pending.extend(events)
        os.write(self._w, b"e")

    def read(self) -> list[InputEvent]:
        os.read(self._r, 4096)
        if self.fail_next_read:
            raise OSError(19, "No such device")
        events, self._pending = self._pending, []
        return events

    def capabilities(self) -> dict[int, list[int]]:
        return {ecodes.EV_KEY: self._keys}

    def active_keys(self) -> list[int]:
        return []

    def grab(self) -> None:
        self.grabbed = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._r)
            os.close(self._w)


def key(code: int, value: int) -> InputEvent:
    now = time.time()
    return InputEvent(int(now), int(now % 1 * 1e6), ecodes.EV_KEY, code, value)


def syn() -> InputEvent:
    return InputEvent(0, 0, ecodes.EV_SYN, ecodes.SYN_REPORT, 0)


def _settings(**kw: Any) -> ButtonSettings:
    return ButtonSettings(backend="evdev", **kw)


async def test_handle_event_key_down_up_is_a_tap_from_button() -> None:
    button = EvdevButton(_settings(debounce_ms=10, long_press_ms=2000), device=PipeInputDevice())
    got = PressCollector()
    button.start(got.loop, got)
    try:
        button.handle_event(key(ecodes.BTN_0, 1))
        button.handle_event(syn())
        await got.settle(0.1)
        button.handle_event(key(ecodes.BTN_0, 0))
        presses = await got.wait_for(1)
    finally:
        button.close()
    assert [(p.kind, p.source) for p in presses] == [("tap", "button")]


async def test_other_keys_and_autorepeat_are_ignored_and_hold_is_long() -> None:
    button = EvdevButton(_settings(debounce_ms=10, long_press_ms=300), device=PipeInputDevice())
    got = PressCollector()
    button.start(got.loop, got)
    try:
        button.handle_event(key(ecodes.BTN_1, 1))
        button.handle_event(key(ecodes.BTN_1, 0))
        button.handle_event(key(ecodes.BTN_0, 1))
        for _ in range(5):
            button.handle_event(key(ecodes.BTN_0, 2))  # auto-repeat while held
        presses = await got.wait_for(1)
        button.handle_event(key(ecodes.BTN_0, 0))
        await got.settle(0.2)
    finally:
        button.close()
    assert [p.kind for p in presses] == ["long"]


async def test_touchscreen_tap_through_the_reader_thread_is_from_screen() -> None:
    device = PipeInputDevice("Touchscreen", keys=(ecodes.BTN_TOUCH,))
    button = EvdevButton(_settings(evdev_key="BTN_TOUCH", debounce_ms=0, evdev_grab=True), device=device)
    got = PressCollector()
    button.start(got.loop, got)
    try:
        device.push(key(ecodes.BTN_TOUCH, 1), syn())
        await got.settle(0.1)
        device.push(key(ecodes.BTN_TOUCH, 0), syn())
        presses = await got.wait_for(1)
    finally:
        button.close()
    assert [(p.kind, p.source) for p in presses] == [("tap", "screen")]
    assert device.grabbed and device.closed


async def test_bounced_key_is_one_tap() -> None:
    device = PipeInputDevice()
    button = EvdevButton(_settings(debounce_ms=200, long_press_ms=3000), device=device)
    got = PressCollector()
    button.start(got.loop, got)
    try:
        device.push(*[key(ecodes.BTN_0, v) for v in (1, 0, 1, 0, 1)])
        await got.settle(0.4)
        device.push(key(ecodes.BTN_0, 0), key(ecodes.BTN_0, 1), key(ecodes.BTN_0, 0))
        presses = await got.wait_for(1)
        await got.settle(0.4)
    finally:
        button.close()
    assert [p.kind for p in presses] == ["tap"]


async def test_device_failure_stops_reading_without_crashing() -> None:
    device = PipeInputDevice()
    button = EvdevButton(_settings(), device=device)
    got = PressCollector()
    button.start(got.loop, got)
    device.fail_next_read = True
    device.push(key(ecodes.BTN_0, 1))
    await got.settle(0.2)
    button.close()
    assert got.presses == []


def test_key_names_and_numbers_resolve() -> None:
    assert resolve_key("BTN_TOUCH") == ecodes.BTN_TOUCH
    assert resolve_key("key_space") == ecodes.KEY_SPACE
    assert resolve_key("256") == 256
    with pytest.raises(ButtonUnavailable, match="BTN_NOPE"):
        resolve_key("BTN_NOPE")


def test_missing_device_path_is_a_clear_error() -> None:
    with pytest.raises(ButtonUnavailable, match="/dev/input/event99"):
        make_button(_settings(evdev_device="/dev/input/event99"))


def test_missing_device_name_lists_what_exists() -> None:
    with pytest.raises(ButtonUnavailable, match="no input device named 'Big Red Button'; readable devices"):
        make_button(_settings(evdev_device="Big Red Button"))
