"""``robot-face doctor --deep``'s echo check: a fake PortAudio whose microphone hears its speaker
through the simulated room (the hardware stand-in), WebRTC's real canceller behind it."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from audio.edges.sim_room import SimRoomSettings
from device.config import load_config
from device.doctor import audio_checks as doctor_audio
from device.doctor import checks as doctor_checks
from device.doctor.audio_checks import EchoTest, check_echo, echo_verdict
from tests.audio.test_echo_check import room_echo

TEST = EchoTest(volume=0.8, weak_db=30.0, duck_db=-18.0, duck_weak_db=-30.0)


class RoomPortAudio:
    """The sounddevice calls the deep checks make, answering like a USB headset at 16 kHz whose
    microphone hears what ``playrec`` plays through ``room`` (None: only the room's noise; a
    ``np.ndarray``: that sound instead, another program's)."""

    def __init__(self, room: SimRoomSettings | np.ndarray | None, fail: Exception | None = None) -> None:
        self.room, self.fail, self.played = room, fail, 0

    class default:
        device = (0, 0)

    def query_devices(self, index: int | None = None) -> Any:
        device = {
            "name": "USB Headset",
            "max_input_channels": 1,
            "max_output_channels": 2,
            "default_samplerate": 16000.0,
        }
        return [device] if index is None else device

    def rec(self, frames: int, samplerate: int, channels: int, device: int, dtype: str) -> np.ndarray:
        return np.random.default_rng(3).normal(0.0, 10 ** (-60 / 20), (frames, channels)).astype(np.float32)

    def playrec(
        self, data: np.ndarray, samplerate: int, channels: int, device: tuple[int, int]
    ) -> np.ndarray:
        if self.fail is not None:
            raise self.fail
        self.played += 1
        far = data.reshape(-1)
        if isinstance(self.room, SimRoomSettings):
            heard = room_echo(far, samplerate, self.room)[: len(far)]
        elif isinstance(self.room, np.ndarray):
            heard = self.room[: len(far)]
        else:
            heard = np.random.default_rng(4).normal(0.0, 10 ** (-60 / 20), len(far)).astype(np.float32)
        return heard.reshape(-1, channels)

    def wait(self) -> None:
        pass


def _lag(detail: str) -> float:
    found = re.search(r"heard (\d+) ms after it is played", detail)
    assert found, detail
    return float(found.group(1))


def test_a_room_the_canceller_handles_is_ok_with_its_lag(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = RoomPortAudio(SimRoomSettings(delay_ms=60.0))
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: fake)
    result = check_echo(0, 0, TEST)
    assert result.status == "ok", result
    assert abs(_lag(result.detail) - 60.0) <= 2.0
    removal = float(re.search(r"removes (\d+) dB", result.detail).group(1))  # type: ignore[union-attr]
    assert removal >= 30.0 and "duck the reply by -18 dB" in result.detail
    assert fake.played == 1


def test_a_bluetooth_speakers_late_echo_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: RoomPortAudio(SimRoomSettings(delay_ms=800.0)))
    result = check_echo(0, 0, TEST)
    assert result.status == "warn" and "does not match what the robot plays within 500 ms" in result.detail
    assert "after it is played" not in result.detail  # no lag claimed where nothing matched
    assert "wired speaker" in result.fix


def test_the_verdicts_of_weak_and_broken_cancellers() -> None:
    from audio.hearing.echo_check import EchoMeasurement

    weak = echo_verdict(EchoMeasurement(40.0, 0.8, 30.0, 7.5), TEST)
    assert weak.status == "warn" and "removes 8 dB" in weak.detail and "heard 40 ms after" in weak.detail
    assert "weak" in weak.detail and "-30 dB" in weak.detail and "hearing.weak_canceller_db" in weak.detail
    assert 'hearing.echo_cancellation = "system"' in weak.fix
    broken = echo_verdict(EchoMeasurement(40.0, 0.8, 30.0, 1.0), TEST)
    assert broken.status == "warn" and "not cancelling" in broken.detail and "half duplex" in broken.detail
    strong = echo_verdict(EchoMeasurement(40.0, 0.8, 30.0, 30.0), TEST)  # the rule's own bound
    assert strong.status == "ok"


def test_a_probe_not_heard_and_a_busy_device_are_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: RoomPortAudio(None))
    quiet = check_echo(0, 0, TEST)
    assert quiet.status == "warn" and "did not hear the test sound" in quiet.detail
    busy = RoomPortAudio(None, fail=OSError("Device unavailable [PaErrorCode -9985]"))
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: busy)
    failed = check_echo(0, 0, TEST)
    assert failed.status == "warn" and "Device unavailable" in failed.detail and "fuser" in failed.fix


def test_the_verdict_without_enough_echo_to_judge() -> None:
    from audio.hearing.echo_check import EchoMeasurement

    result = echo_verdict(EchoMeasurement(40.0, 0.8, 20.0, None), TEST)
    assert result.status == "warn" and "too little" in result.detail


def test_the_deep_checks_measure_the_echo_only_with_webrtc_and_a_speaker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = RoomPortAudio(SimRoomSettings())
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: fake)
    webrtc = load_config(
        None, {"hearing.echo_cancellation": "webrtc", "hearing.duck_db": -20.0, "speaking.volume": 0.5}
    )
    test = doctor_checks._echo_test(webrtc)
    assert test == EchoTest(0.5, webrtc.hearing.weak_canceller_db, -20.0, webrtc.hearing.duck_weak_db)
    assert doctor_checks._echo_test(load_config(None, {"hearing.echo_cancellation": "off"})) is None
    names = [r.name for r in doctor_checks._audio_device_checks(None, None, True, False, True, test)]
    assert names[-2:] == ["microphone level", "echo on this hardware"] and fake.played == 2
    shallow = doctor_checks._audio_device_checks(None, None, False, False, True, test)
    assert "echo on this hardware" not in [r.name for r in shallow]
    no_speaker = doctor_checks._audio_device_checks(None, None, True, False, False, test)
    assert "echo on this hardware" not in [r.name for r in no_speaker]
