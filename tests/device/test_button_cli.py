"""``robot-face button-test``."""

from __future__ import annotations

import pytest

from device.cli import main


def test_button_test_with_no_button_runs_and_stops(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "none", "--seconds", "0.1"]) == 0
    assert "backend none" in capsys.readouterr().out


def test_button_test_gpio_off_a_pi_explains(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "gpio", "--gpio-pin", "22", "--seconds", "0.1"]) == 1
    out = capsys.readouterr().out
    assert "✘ button (gpio)" in out and "lgpio" in out


def test_button_test_bad_override_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["button-test", "--backend", "gpio", "--gpio-pin", "99"]) == 2
    assert "button.gpio_pin" in capsys.readouterr().out
