"""The real daemon process under systemd's eyes: readiness, watchdog, SIGTERM, bad config."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from tests.broker import Mosquitto

DAEMON = [sys.executable, "-m", "device", "run", "--simulate", "--face", "none"]


def _retained_status(broker: Mosquitto, device: str, timeout: float = 5.0) -> dict[str, object]:
    got: list[dict[str, object]] = []
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id=f"probe-{time.time_ns()}", protocol=mqtt.MQTTv5
    )
    client.on_message = lambda c, u, m: got.append(json.loads(m.payload))
    client.connect("127.0.0.1", broker.port)
    client.subscribe(f"robotface/{device}/status", qos=1)
    client.loop_start()
    deadline = time.monotonic() + timeout
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    client.loop_stop()
    client.disconnect()
    assert got, "no retained status"
    return got[-1]


def _recv_until(sock: socket.socket, wanted: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            data = sock.recv(4096).decode()
        except TimeoutError:
            break
        seen.extend(data.splitlines())
        if any(line.startswith(wanted) for line in seen):
            return seen
    raise AssertionError(f"{wanted} not received; got {seen}")


def test_notify_ready_watchdog_and_sigterm(mosquitto: Mosquitto, tmp_path: Path) -> None:
    notify_path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(notify_path))
    env = dict(os.environ, NOTIFY_SOCKET=str(notify_path), WATCHDOG_USEC="1000000")
    proc = subprocess.Popen(
        [*DAEMON, "--broker", mosquitto.url, "--device-id", "sd1", "--state-dir", str(tmp_path / "state")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        seen = _recv_until(sock, "READY=1", timeout=90)
        assert _retained_status(mosquitto, "sd1")["online"] is True
        seen += _recv_until(sock, "WATCHDOG=1", timeout=3)
        # a second ping proves it keeps feeding while healthy
        seen += _recv_until(sock, "WATCHDOG=1", timeout=3)
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = proc.wait(timeout=10)
        took = time.monotonic() - started
        seen += _recv_until(sock, "STOPPING=1", timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
        output = proc.communicate()[0]
        sock.close()
    assert code == 0, output
    assert took < 8.0, f"SIGTERM took {took:.1f} s"
    status = _retained_status(mosquitto, "sd1")
    assert status["online"] is False and status["boot"] == 1
    assert "Stopped" in output


def test_bad_config_names_the_key_and_exits_2(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[hearing]\nend_silence_ms = 'long'\n")
    proc = subprocess.run(
        [*DAEMON, "--config", str(cfg), "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "hearing.end_silence_ms" in proc.stderr and "integer" in proc.stderr


def test_bad_broker_url_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*DAEMON, "--broker", "http://x", "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "mqtt.broker" in proc.stderr


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        pytest.param(
            "[hearing]\nstt_model = '{tmp}/no-model'\n",
            "hearing.stt_model: no CTranslate2 Whisper model at",
            id="whisper",
        ),
        pytest.param(
            "[hearing]\nturn_model = '{tmp}/no-turn.onnx'\n",
            "hearing.turn_model: end-of-turn model",
            id="turn-model",
        ),
        pytest.param(
            "[speaking]\nvoice = '{tmp}/no-voice.onnx'\n",
            "speaking.voice: voice model not found:",
            id="voice",
        ),
    ],
)
def test_a_model_that_cannot_be_loaded_stops_the_start_with_why_and_exit_2(
    mosquitto: Mosquitto, tmp_path: Path, setting: str, why: str
) -> None:
    """Fixing it takes a config change: the daemon says which setting and why (no traceback), tells
    systemd, leaves the broker an offline status and exits 2 (``RestartPreventExitStatus=2``)."""
    notify_path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(notify_path))
    cfg = tmp_path / "c.toml"
    cfg.write_text(setting.format(tmp=tmp_path))
    state = tmp_path / "state"
    device = "sd-" + why.split(".")[0]
    try:
        proc = subprocess.run(
            [
                *DAEMON,
                "--config",
                str(cfg),
                "--broker",
                mosquitto.url,
                "--device-id",
                device,
                "--state-dir",
                str(state),
            ],
            env=dict(os.environ, NOTIFY_SOCKET=str(notify_path)),
            capture_output=True,
            text=True,
            timeout=90,
        )
        notes = _recv_until(sock, "STOPPING=1", timeout=1)
    finally:
        sock.close()
    assert proc.returncode == 2, proc.stderr
    assert f"Cannot start: {why}" in proc.stderr
    assert "Traceback" not in proc.stderr
    key = why.split(":")[0]
    assert any(f"STATUS=cannot start: {key}" in line for line in notes)
    assert _retained_status(mosquitto, device)["online"] is False


def test_a_missing_tls_file_names_the_key_and_exits_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[mqtt]\nbroker = 'mqtts://127.0.0.1:8883'\nca_file = '{tmp_path / 'ca.pem'}'\n")
    proc = subprocess.run(
        [*DAEMON, "--config", str(cfg), "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "config: mqtt.ca_file: ca_file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_state_dir_that_cannot_be_used_names_the_key_and_exits_2(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the directory should be")
    proc = subprocess.run(
        [*DAEMON, "--broker", "mqtt://127.0.0.1:1", "--state-dir", str(blocker)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"config: device.state_dir: {blocker} cannot be used" in proc.stderr
    assert "Traceback" not in proc.stderr
