"""The systemd units and sysusers file: required keys, and ``systemd-analyze verify`` where possible."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.device.unit_files import SYSTEMD_DIR, parse_unit, verify_root

SERVICE = SYSTEMD_DIR / "robot-face.service"
KIOSK = SYSTEMD_DIR / "robot-face-kiosk.service"
SYSUSERS = SYSTEMD_DIR / "robot-face.sysusers"
LAUNCHER = SYSTEMD_DIR / "robot-face-kiosk"
HAVE_ANALYZE = shutil.which("systemd-analyze") is not None


def _one(section: dict[str, list[str]], key: str) -> str:
    values = section.get(key, [])
    assert len(values) == 1, f"{key}: expected exactly one value, got {values}"
    return values[0]


def test_service_is_notify_with_watchdog_and_restart_back_off() -> None:
    unit = parse_unit(SERVICE)
    svc = unit["Service"]
    assert _one(svc, "Type") == "notify"
    assert _one(svc, "NotifyAccess") == "main"
    assert _one(svc, "WatchdogSec") == "30s"
    assert _one(svc, "Restart") == "on-failure"
    assert _one(svc, "RestartSec") == "5s"
    assert _one(svc, "RestartPreventExitStatus") == "2"  # device.cli: ConfigError exits 2
    assert int(_one(unit["Unit"], "StartLimitBurst")) >= 3
    assert _one(unit["Unit"], "StartLimitIntervalSec")
    assert _one(svc, "ExecStart") == (
        "/opt/robot-face/venv/bin/robot-face run --config /etc/robot-face/config.toml "
        "--state-dir /var/lib/robot-face"
    )
    assert "multi-user.target" in unit["Install"]["WantedBy"]


def test_service_user_groups_and_state() -> None:
    svc = parse_unit(SERVICE)["Service"]
    assert _one(svc, "User") == "robot-face"
    groups = set(_one(svc, "SupplementaryGroups").split())
    assert {"audio", "gpio", "video", "input"} <= groups
    assert _one(svc, "StateDirectory") == "robot-face"
    assert _one(svc, "ReadWritePaths") == "/var/lib/robot-face"
    assert _one(svc, "LoadCredential") == "mqtt-password:/etc/robot-face/mqtt-password"


def test_service_hardening() -> None:
    svc = parse_unit(SERVICE)["Service"]
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "RestrictSUIDSGID": "yes",
        "DevicePolicy": "closed",
        "CapabilityBoundingSet": "",
    }.items():
        assert _one(svc, key) == value, key
    assert set(_one(svc, "RestrictAddressFamilies").split()) == {
        "AF_UNIX",
        "AF_INET",
        "AF_INET6",
        "AF_NETLINK",
    }
    allowed = {v.split()[0] for v in svc["DeviceAllow"]}
    assert {"char-alsa", "char-gpiochip", "char-input"} <= allowed


def test_kiosk_unit_runs_the_launcher_on_tty1_after_the_service() -> None:
    unit = parse_unit(KIOSK)
    svc = unit["Service"]
    assert _one(svc, "ExecStart") == "/opt/robot-face/bin/robot-face-kiosk"
    assert _one(svc, "TTYPath") == "/dev/tty1"
    assert _one(svc, "PAMName") == "login"
    assert "ROBOT_FACE_URL=http://127.0.0.1:8765/" in svc["Environment"]
    assert "robot-face.service" in " ".join(unit["Unit"]["After"])
    assert "getty@tty1.service" in unit["Unit"]["Conflicts"]


def test_sysusers_declares_the_user_and_its_groups() -> None:
    lines = [ln.split() for ln in SYSUSERS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[0][:2] == ["u", "robot-face"]
    members = {ln[2] for ln in lines if ln[0] == "m" and ln[1] == "robot-face"}
    assert {"audio", "gpio", "video", "input"} <= members


@pytest.mark.skipif(shutil.which("systemd-sysusers") is None, reason="systemd-sysusers not installed")
def test_sysusers_creates_the_user_in_a_throwaway_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    proc = subprocess.run(
        ["systemd-sysusers", f"--root={tmp_path}", str(SYSUSERS)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    passwd = (tmp_path / "etc/passwd").read_text()
    assert "robot-face:x:" in passwd and ":/var/lib/robot-face:/usr/sbin/nologin" in passwd
    group = {ln.split(":")[0]: ln.split(":")[3] for ln in (tmp_path / "etc/group").read_text().splitlines()}
    for g in ("audio", "gpio", "video", "input"):
        assert "robot-face" in group[g].split(","), g


@pytest.mark.skipif(not HAVE_ANALYZE, reason="systemd-analyze not installed on this machine")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    units = tmp_path / "etc/systemd/system"
    units.mkdir(parents=True)
    for unit in (SERVICE, KIOSK):
        shutil.copy(unit, units / unit.name)
    proc = verify_root(
        tmp_path, ["/opt/robot-face/venv/bin/robot-face", "/opt/robot-face/bin/robot-face-kiosk"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.strip() == "", proc.stderr  # no unknown keys, no bad values


@pytest.mark.skipif(not HAVE_ANALYZE, reason="systemd-analyze not installed on this machine")
def test_systemd_analyze_catches_a_broken_unit(tmp_path: Path) -> None:
    """The verify helper really fails on a bad unit (so the test above can fail)."""
    units = tmp_path / "etc/systemd/system"
    units.mkdir(parents=True)
    (units / "broken.service").write_text(SERVICE.read_text().replace("Type=notify", "Type=notifyy"))
    proc = verify_root(tmp_path, ["/opt/robot-face/venv/bin/robot-face"])
    assert "notifyy" in proc.stderr


def _fake_tools(bin_dir: Path, log: Path, curl_rc: int = 0) -> None:
    bin_dir.mkdir()
    for name, body in {
        "chromium": "exit 0",
        "cage": f'echo "cage $*" >> {log}',
        "curl": f'echo "curl $*" >> {log}; exit {curl_rc}',
        "sleep": "exit 0",
    }.items():
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)


def test_kiosk_launcher_waits_for_the_page_then_runs_chromium_in_cage(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _fake_tools(tmp_path / "bin", log)
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "ROBOT_FACE_URL": "http://127.0.0.1:9999/",
    }
    proc = subprocess.run([str(LAUNCHER)], env=env, capture_output=True, text=True, timeout=20, check=False)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert calls[0].startswith("curl ") and calls[0].endswith("http://127.0.0.1:9999/")
    cage = calls[1]
    assert cage.startswith(f"cage -d -s -- {tmp_path / 'bin' / 'chromium'} --kiosk")
    assert "--app=http://127.0.0.1:9999/" in cage
    assert f"--user-data-dir={tmp_path / 'home'}/chromium" in cage


def test_kiosk_launcher_gives_up_when_the_page_never_answers(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _fake_tools(tmp_path / "bin", log, curl_rc=7)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([str(LAUNCHER)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert "did not answer" in proc.stderr
    assert not any(ln.startswith("cage") for ln in log.read_text().splitlines())


def test_kiosk_launcher_names_a_missing_browser(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "sh").symlink_to("/bin/sh")
    proc = subprocess.run(
        ["/bin/sh", str(LAUNCHER)], env={"PATH": str(empty)}, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1 and "chromium is not installed" in proc.stderr
    assert os.access(LAUNCHER, os.X_OK)
