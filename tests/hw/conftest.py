"""Real-hardware suite: runs only on a Raspberry Pi (or, for systemd tests, a systemd-booted host).

Optional wiring/environment for the fully automatic checks:
- ``ROBOT_FACE_HW_LOOPBACK=OUT:IN``: BCM pin OUT jumpered to pin IN (e.g. ``27:17``); the test drives OUT
  and expects presses from a GpioButton on IN.
- ``ROBOT_FACE_HW_EVDEV=/dev/input/eventN`` (and ``ROBOT_FACE_HW_EVDEV_KEY``, default BTN_0): an input
  device that must open with that key.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pi_model() -> str | None:
    """The Raspberry Pi model string, or None when not on a Pi."""
    try:
        model = Path("/proc/device-tree/model").read_bytes().rstrip(b"\0").decode(errors="replace")
    except OSError:
        return None
    return model if "Raspberry Pi" in model else None


def systemd_booted() -> bool:
    """True when systemd is PID 1 (sd_booted)."""
    return Path("/run/systemd/system").is_dir()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark everything here ``hw``; skip Pi tests elsewhere with the reason."""
    model = pi_model()
    for item in items:
        if "tests/hw/" not in str(item.fspath).replace("\\", "/"):
            continue
        item.add_marker(pytest.mark.hw)
        if item.get_closest_marker("needs_systemd"):
            if not systemd_booted():
                item.add_marker(pytest.mark.skip(reason="needs a host booted with systemd (PID 1)"))
        elif model is None:
            item.add_marker(
                pytest.mark.skip(reason="real Raspberry Pi hardware only (/proc/device-tree/model)")
            )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker used here."""
    config.addinivalue_line("markers", "needs_systemd: needs systemd as PID 1 (not necessarily a Pi)")
