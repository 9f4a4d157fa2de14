"""``robot-face doctor`` on this machine: real broker, real models, whatever audio exists here."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from device.buttons.settings import ButtonSettings
from device.cli import main
from device.doctor import audio_checks as doctor_audio
from device.doctor.checks import (
    check_broker,
    check_button,
    check_clock,
    check_cross_check_model,
    check_speech_check_model,
    check_state_dir,
    check_stt_model,
    check_voice,
    run_checks,
)
from device.doctor.result import CheckResult, exit_code, render
from tests.broker import Mosquitto


def _portaudio_devices() -> int:
    import sounddevice

    return len(sounddevice.query_devices())


# ---- audio -----------------------------------------------------------------------------------------
@pytest.mark.skipif(_portaudio_devices() > 0, reason="this machine has audio devices")
def test_no_microphone_here_is_reported_clearly() -> None:
    mic, index = doctor_audio.check_audio_device("input", None, "hearing.input_device")
    assert index is None
    assert mic.status == "fail"
    assert mic.name == "microphone"
    assert "no input device found" in mic.detail
    assert "arecord -l" in mic.fix


class FakePortAudio:
    """The two sounddevice calls the check makes, answering like a Pi with a USB headset."""

    class default:
        device = (1, 0)

    @staticmethod
    def query_devices() -> list[dict[str, Any]]:
        return [
            {
                "name": "bcm2835 Headphones",
                "max_input_channels": 0,
                "max_output_channels": 2,
                "default_samplerate": 44100.0,
            },
            {
                "name": "USB PnP Sound Device: Audio",
                "max_input_channels": 1,
                "max_output_channels": 2,
                "default_samplerate": 48000.0,
            },
        ]


def test_named_devices_are_found_or_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_audio, "_sounddevice", lambda: FakePortAudio)
    mic, index = doctor_audio.check_audio_device("input", None, "hearing.input_device")
    assert (mic.status, index) == ("ok", 1)
    assert "USB PnP" in mic.detail
    speaker, index = doctor_audio.check_audio_device("output", "headphones", "speaking.output_device")
    assert (speaker.status, index) == ("ok", 0)
    missing, index = doctor_audio.check_audio_device("input", "ReSpeaker", "hearing.input_device")
    assert index is None and missing.status == "fail"
    assert "1: USB PnP Sound Device: Audio" in missing.detail
    assert "bcm2835" not in missing.detail  # not an input
    assert "hearing.input_device" in missing.fix


def test_portaudio_failure_is_a_failed_check(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise OSError("PortAudio library not found")

    monkeypatch.setattr(doctor_audio, "_sounddevice", broken)
    result, _ = doctor_audio.check_audio_device("output", None, "speaking.output_device")
    assert result.status == "fail" and "libportaudio2" in result.fix


# ---- state directory ---------------------------------------------------------------------------------
def test_state_dir_created_and_writable(tmp_path: Path) -> None:
    result = check_state_dir(str(tmp_path / "state" / "robot-face"))
    assert result.status == "ok"
    assert (tmp_path / "state" / "robot-face").is_dir()
    assert list((tmp_path / "state" / "robot-face").iterdir()) == []


def test_state_dir_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = check_state_dir(str(blocker / "state"))
    assert result.status == "fail"
    assert "not writable" in result.detail and "install -d" in result.fix


# ---- models ------------------------------------------------------------------------------------------
def test_packaged_models_present() -> None:
    assert check_stt_model("", deep=False).status == "ok"
    assert check_voice("", deep=False).status == "ok"
    assert check_speech_check_model(deep=False).status == "ok"
    assert check_cross_check_model("", deep=False).status == "ok"


def test_cross_check_model_runs_or_says_how_to_fix(tmp_path: Path) -> None:
    deep = check_cross_check_model("", deep=True)
    assert deep.status == "ok" and "loads and runs" in deep.detail
    missing = check_cross_check_model(str(tmp_path), deep=False)
    assert missing.status == "fail" and "encoder_model.onnx" in missing.detail
    assert "audio.fetch_models" in missing.fix
    off = check_cross_check_model("off", deep=True)
    assert off.status == "ok" and off.detail.startswith("off")


def test_speech_check_model_runs_or_says_how_to_fix(tmp_path: Path) -> None:
    deep = check_speech_check_model(deep=True)
    assert deep.status == "ok" and "runs (" in deep.detail
    missing = check_speech_check_model(deep=False, assets=tmp_path)
    assert (
        missing.status == "fail"
        and "silero_vad_v6.onnx" in missing.detail
        and "faster-whisper" in missing.fix
    )


def test_deep_loads_the_packaged_models() -> None:
    stt = check_stt_model("", deep=True)
    voice = check_voice("", deep=True)
    assert stt.status == "ok" and "loads in" in stt.detail
    assert voice.status == "ok" and "loads in" in voice.detail


def test_broken_models_fail_with_a_fix(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    stt = check_stt_model(str(tmp_path), deep=False)
    assert stt.status == "fail" and "model.bin" in stt.detail and "hearing.stt_model" in stt.fix
    (tmp_path / "model.bin").write_bytes(b"not a model")
    assert check_stt_model(str(tmp_path), deep=True).status == "fail"
    assert check_stt_model("base.en", deep=False).status == "warn"
    onnx = tmp_path / "voice.onnx"
    assert check_voice(str(onnx), deep=False).status == "fail"
    onnx.write_bytes(b"x")
    voice = check_voice(str(onnx), deep=False)
    assert voice.status == "fail" and "voice.onnx.json" in voice.detail and "speaking.voice" in voice.fix


# ---- broker ------------------------------------------------------------------------------------------
def test_broker_reachable_anonymously(mosquitto: Mosquitto) -> None:
    result = check_broker(mosquitto.url, None, None, timeout_s=5)
    assert result.status == "ok", result
    assert f"127.0.0.1:{mosquitto.port}" in result.detail


def test_broker_unreachable() -> None:
    from tests.broker import free_port

    result = check_broker(f"mqtt://127.0.0.1:{free_port()}", None, None, timeout_s=2)
    assert result.status == "fail" and "cannot reach" in result.detail


@pytest.fixture
def secured_broker(tmp_path: Path) -> Any:
    passwd = tmp_path / "passwd"
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(passwd), "robot", "s3cret"], check=True)
    passwd.chmod(0o600)
    broker = Mosquitto(tmp_path / "secured", extra_config=f"password_file {passwd}\n")
    broker.config_path.write_text(
        broker.config_path.read_text().replace("allow_anonymous true", "allow_anonymous false")
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


def test_broker_credentials_checked(secured_broker: Mosquitto, tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text("s3cret\n")
    bad = tmp_path / "bad"
    bad.write_text("wrong\n")
    assert check_broker(secured_broker.url, "robot", str(good), timeout_s=5).status == "ok"
    refused = check_broker(secured_broker.url, "robot", str(bad), timeout_s=5)
    assert refused.status == "fail" and "refused" in refused.detail and "password_file" in refused.fix
    assert check_broker(secured_broker.url, None, None, timeout_s=5).status == "fail"
    unreadable = check_broker(secured_broker.url, "robot", str(tmp_path / "nope"), timeout_s=5)
    assert unreadable.status == "fail" and "cannot read" in unreadable.detail


# ---- clock -------------------------------------------------------------------------------------------
def _fake_timedatectl(bin_dir: Path, answer: str, rc: int = 0) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "timedatectl"
    tool.write_text(f"#!/bin/sh\necho '{answer}'\nexit {rc}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize(("answer", "rc", "status"), [("yes", 0, "ok"), ("no", 0, "warn"), ("", 1, "note")])
def test_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, rc: int, status: str) -> None:
    _fake_timedatectl(tmp_path / "bin", answer, rc)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert check_clock().status == status


def test_clock_on_this_machine_does_not_crash() -> None:
    assert check_clock().status in ("ok", "warn", "note")


# ---- button ------------------------------------------------------------------------------------------
def test_button_checks() -> None:
    assert check_button(ButtonSettings()).status == "warn"
    assert check_button(ButtonSettings(), simulate=True).status == "note"
    assert check_button(ButtonSettings(backend="keyboard")).status == "warn"
    gpio = check_button(ButtonSettings(backend="gpio"))
    assert gpio.status == "fail" and "lgpio" in gpio.detail
    evdev = check_button(ButtonSettings(backend="evdev", evdev_device="/dev/input/event42"))
    assert evdev.status == "fail" and "/dev/input/event42" in evdev.detail


# ---- whole run, rendering, CLI -------------------------------------------------------------------------
def test_run_checks_returns_every_check(mosquitto: Mosquitto, tmp_path: Path) -> None:
    results = run_checks(
        state_dir=str(tmp_path),
        broker_url=mosquitto.url,
        username=None,
        password_file=None,
        input_device=None,
        output_device=None,
        button=ButtonSettings(),
        deep=False,
    )
    names = [r.name for r in results]
    assert names == [
        "state directory",
        "microphone",
        "speaker",
        "speech-to-text model",
        "speech check model (Silero VAD)",
        "cross-check model (Moonshine)",
        "voice",
        "broker",
        "clock",
        "button (none)",
    ]


def test_render_and_exit_code() -> None:
    results = [
        CheckResult("a", "ok", "fine"),
        CheckResult("b", "warn", "meh", "do x"),
        CheckResult("c", "note", "unknown here"),
    ]
    text = render(results)
    assert "✔ a: fine" in text and "! b: meh\n    fix: do x" in text and "– c: unknown here" in text
    assert exit_code(results) == 0
    results.append(CheckResult("d", "fail", "missing", "install d"))
    assert "✘ d: missing\n    fix: install d" in render(results)
    assert "1 problem(s)" in render(results)
    assert exit_code(results) == 1


def test_cli_simulated_device_passes(
    mosquitto: Mosquitto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["doctor", "--simulate", "--broker", mosquitto.url, "--state-dir", str(tmp_path / "s"), "--json"]
    )
    results = json.loads(capsys.readouterr().out)
    assert code == 0, results
    by_name = {r["name"]: r for r in results}
    assert by_name["microphone"]["status"] == "note"
    assert by_name["broker"]["status"] == "ok"
    assert by_name["button (none)"]["status"] == "note"


@pytest.mark.skipif(_portaudio_devices() > 0, reason="this machine has audio devices")
def test_cli_real_device_without_microphone_fails(
    mosquitto: Mosquitto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[device]\nstate_dir = "{tmp_path / "s"}"\n[mqtt]\nbroker = "{mosquitto.url}"\n'
        '[button]\nbackend = "gpio"\ngpio_pin = 27\n'
    )
    code = main(["doctor", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 1
    assert "✘ microphone: no input device found" in out
    assert "✘ button (gpio):" in out
    assert "✔ broker: connected" in out


def test_cli_bad_config_is_a_failed_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[button]\nbackend = "magic"\n')
    assert main(["doctor", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "✘ configuration:" in out and "button.backend" in out
