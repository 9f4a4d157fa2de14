"""GPIO backend with gpiozero's MockFactory driving the pin like a real contact would."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from gpiozero.pins.mock import MockFactory

from device.buttons.choice import ButtonUnavailable, GpioButton, make_button
from device.buttons.settings import ButtonSettings
from tests.device.button_helpers import PressCollector

PIN = 17


@pytest.fixture
def factory() -> Iterator[MockFactory]:
    f = MockFactory()
    yield f
    f.close()


def _button(factory: MockFactory, **kw: object) -> GpioButton:
    settings = ButtonSettings(backend="gpio", gpio_pin=PIN, **kw)  # type: ignore[arg-type]
    return GpioButton(settings, pin_factory=factory)


async def test_press_and_release_is_one_tap_on_the_loop_thread(factory: MockFactory) -> None:
    button = _button(factory, debounce_ms=20, long_press_ms=2000)
    got = PressCollector()
    button.start(got.loop, got)
    pin = factory.pin(PIN)
    before = time.time()
    try:
        pin.drive_low()  # pull-up: pressed pulls the pin to ground
        await got.settle(0.15)
        assert got.presses == []  # a tap is known only on release
        pin.drive_high()
        presses = await got.wait_for(1)
    finally:
        button.close()
    assert [(p.kind, p.source) for p in presses] == [("tap", "button")]
    assert before - 0.1 <= presses[0].ts <= time.time()
    assert got.threads == {threading.get_ident()}


async def test_bounced_press_is_one_tap(factory: MockFactory) -> None:
    button = _button(factory, debounce_ms=200, long_press_ms=3000)
    got = PressCollector()
    button.start(got.loop, got)
    pin = factory.pin(PIN)
    try:
        for _ in range(4):  # contact chatter, microseconds apart
            pin.drive_low()
            pin.drive_high()
        pin.drive_low()
        await got.settle(0.5)
        pin.drive_high()
        pin.drive_low()
        pin.drive_high()  # release chatter
        presses = await got.wait_for(1)
        await got.settle(0.5)
    finally:
        button.close()
    assert [p.kind for p in presses] == ["tap"]


async def test_held_is_a_long_press_emitted_while_held(factory: MockFactory) -> None:
    button = _button(factory, debounce_ms=20, long_press_ms=300)
    got = PressCollector()
    button.start(got.loop, got)
    pin = factory.pin(PIN)
    try:
        pin.drive_low()
        presses = await got.wait_for(1)  # arrives without releasing
        assert [p.kind for p in presses] == ["long"]
        pin.drive_high()
        await got.settle(0.3)
    finally:
        button.close()
    assert [p.kind for p in got.presses] == ["long"]


@pytest.mark.parametrize(
    "wiring",
    [
        {"active_high": True},  # an external pull-down: pressed is high
        {"pull_up": False},  # the internal pull-down: pressed is high
    ],
    ids=["active-high-external-pull-down", "internal-pull-down"],
)
async def test_a_button_wired_to_pull_down_is_pressed_when_high(
    factory: MockFactory, wiring: dict[str, bool]
) -> None:
    button = _button(factory, debounce_ms=10, long_press_ms=2000, **wiring)
    got = PressCollector()
    button.start(got.loop, got)
    pin = factory.pin(PIN)
    try:
        pin.drive_high()
        await got.settle(0.1)
        pin.drive_low()
        presses = await got.wait_for(1)
    finally:
        button.close()
    assert [p.kind for p in presses] == ["tap"]


def test_close_releases_the_pin_so_it_can_be_claimed_again(factory: MockFactory) -> None:
    _button(factory).close()
    again = _button(factory)
    again.close()
    again.close()  # idempotent


def test_pin_in_use_is_a_clear_error(factory: MockFactory) -> None:
    first = _button(factory)
    try:
        with pytest.raises(ButtonUnavailable, match="GPIO pin 17"):
            _button(factory)
    finally:
        first.close()


def test_gpio_without_a_pi_is_a_clear_error_not_a_mock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with gpiozero told to use a mock by environment, selecting gpio never gives a mock."""
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    with pytest.raises(ButtonUnavailable, match="lgpio"):
        make_button(ButtonSettings(backend="gpio"))


@pytest.mark.parametrize("name", ["rpigpio", "pigpio", "native"])
def test_every_factory_fails_clearly_off_a_pi(name: str) -> None:
    with pytest.raises(ButtonUnavailable, match=name):
        make_button(ButtonSettings(backend="gpio", gpio_factory=name))
