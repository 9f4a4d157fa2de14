"""``robot-face button-test``."""

from __future__ import annotations

import os
import sys

import pytest

from device.cli import main


def test_button_test_with_no_button_says_there_is_nothing_to_test(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "none"]) == 2  # returns at once, does not wait for Ctrl-C
    out = capsys.readouterr().out
    assert "none configured" in out and "--backend gpio|evdev|keyboard" in out


def test_button_test_with_the_keyboard_runs_and_stops(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, terminal = os.openpty()  # stdin is a terminal, as when run by hand
    monkeypatch.setattr(sys, "stdin", os.fdopen(terminal, "r"))
    try:
        assert main(["button-test", "--backend", "keyboard", "--seconds", "0.1"]) == 0
    finally:
        sys.stdin.close()
        os.close(master)
    assert "backend keyboard" in capsys.readouterr().out


def test_button_test_gpio_off_a_pi_explains(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "gpio", "--gpio-pin", "22", "--seconds", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "✘ button (gpio)" in out and "lgpio" in out


def test_button_test_bad_override_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "gpio", "--gpio-pin", "99"]) == 2
    assert "button.gpio_pin" in capsys.readouterr().out
