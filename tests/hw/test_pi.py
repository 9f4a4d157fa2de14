"""On a real Raspberry Pi: pin factory, GPIO loopback presses, input devices, audio, the installed service."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from device.buttons.choice import GpioButton, make_button
from device.buttons.gpio_button import make_pin_factory
from device.buttons.press import ButtonPress
from device.buttons.settings import ButtonSettings
from device.doctor.audio_checks import check_audio_device
from device.doctor.checks import check_button, check_clock

REPO = Path(__file__).resolve().parents[2]


def test_lgpio_pin_factory_starts() -> None:
    factory = make_pin_factory("lgpio")
    factory.close()


async def test_gpio_loopback_tap_and_long_press() -> None:
    wiring = os.environ.get("ROBOT_FACE_HW_LOOPBACK")
    if not wiring:
        pytest.skip("set ROBOT_FACE_HW_LOOPBACK=OUT:IN with pin OUT jumpered to pin IN (BCM)")
    out_pin, in_pin = (int(p) for p in wiring.split(":"))
    from gpiozero import DigitalOutputDevice

    factory = make_pin_factory("lgpio")
    driver = DigitalOutputDevice(out_pin, initial_value=True, pin_factory=factory)  # idle high (pull-up side)
    settings = ButtonSettings(backend="gpio", gpio_pin=in_pin, debounce_ms=20, long_press_ms=500)
    button = GpioButton(settings, pin_factory=factory)
    presses: list[ButtonPress] = []
    got = asyncio.Event()

    def on_press(press: ButtonPress) -> None:
        presses.append(press)
        got.set()

    button.start(asyncio.get_running_loop(), on_press)
    try:
        driver.off()  # pressed: low
        await asyncio.sleep(0.1)
        driver.on()
        await asyncio.wait_for(got.wait(), 2)
        got.clear()
        driver.off()
        await asyncio.wait_for(got.wait(), 2)
        driver.on()
        await asyncio.sleep(0.1)
    finally:
        button.close()
        driver.close()
        factory.close()
    assert [p.kind for p in presses] == ["tap", "long"]


def test_configured_evdev_device_opens() -> None:
    path = os.environ.get("ROBOT_FACE_HW_EVDEV")
    if not path:
        pytest.skip("set ROBOT_FACE_HW_EVDEV=/dev/input/eventN (and ROBOT_FACE_HW_EVDEV_KEY)")
    key = os.environ.get("ROBOT_FACE_HW_EVDEV_KEY", "BTN_0")
    button = make_button(ButtonSettings(backend="evdev", evdev_device=path, evdev_key=key))
    button.close()
    assert check_button(ButtonSettings(backend="evdev", evdev_device=path, evdev_key=key)).status == "ok"


def test_microphone_and_speaker_present() -> None:
    mic, _ = check_audio_device("input", os.environ.get("ROBOT_FACE_HW_MIC"), "hearing.input_device")
    speaker, _ = check_audio_device(
        "output", os.environ.get("ROBOT_FACE_HW_SPEAKER"), "speaking.output_device"
    )
    assert mic.status == "ok", mic
    assert speaker.status == "ok", speaker


@pytest.mark.needs_systemd
def test_clock_is_known() -> None:
    assert check_clock().status in ("ok", "warn")


@pytest.mark.needs_systemd
@pytest.mark.skipif(shutil.which("systemd-run") is None, reason="systemd-run not installed")
def test_real_systemd_accepts_ready_and_watchdog(tmp_path: Path) -> None:
    """A transient Type=notify unit that becomes active only if our READY=1 reached systemd."""
    script = tmp_path / "notify_probe.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from device.shell.notify import SystemdNotifier\n"
        "n = SystemdNotifier()\n"
        "assert n.watchdog_interval() == 4.0, n.watchdog_interval()\n"
        "n.status('probing'); n.ready('probe ready')\n"
        "for _ in range(6):\n"
        "    n.watchdog(); time.sleep(1)\n"
        "n.stopping()\n"
    )
    unit = f"robot-face-notify-probe-{os.getpid()}-{int(time.time())}"
    proc = subprocess.run(
        [
            "systemd-run",
            "--wait",
            "--collect",
            f"--unit={unit}",
            "-p",
            "Type=notify",
            "-p",
            "WatchdogSec=4s",
            "-p",
            "TimeoutStartSec=10s",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.needs_systemd
def test_installed_service_matches_the_repository() -> None:
    installed = Path("/etc/systemd/system/robot-face.service")
    if not installed.exists():
        pytest.skip("robot-face.service is not installed (scripts/install-pi.sh)")
    assert installed.read_bytes() == (REPO / "systemd/robot-face.service").read_bytes()
    show = subprocess.run(
        ["systemctl", "show", "robot-face.service", "-p", "Type", "-p", "WatchdogUSec", "-p", "User"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Type=notify" in show and "User=robot-face" in show and "WatchdogUSec=30s" in show
