"""scripts/install-pi.sh into a throwaway root: the layout, idempotency, dry run, unit verification."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.device.unit_files import REPO, verify_root

SCRIPT = REPO / "scripts" / "install-pi.sh"


def install(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every path under root with its mode and content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (path.stat().st_mode & 0o7777, digest)
    return out


def test_lays_out_the_files(tmp_path: Path) -> None:
    proc = install(tmp_path, "--kiosk")
    tree = snapshot(tmp_path)
    assert tree["etc/systemd/system/robot-face.service"][0] == 0o644
    assert tree["etc/systemd/system/robot-face-kiosk.service"][0] == 0o644
    assert tree["opt/robot-face/bin/robot-face-kiosk"][0] == 0o755
    assert tree["usr/lib/sysusers.d/robot-face.conf"][0] == 0o644
    assert tree["etc/robot-face/config.toml"][0] == 0o640
    assert tree["etc/robot-face/mqtt-password"][0] == 0o600
    assert tree["var/lib/robot-face"] == (0o750, "dir")
    assert (tmp_path / "etc/systemd/system/robot-face.service").read_bytes() == (
        REPO / "systemd/robot-face.service"
    ).read_bytes()
    # nothing outside the root was touched: system steps are only echoed
    skipped = [line for line in proc.stdout.splitlines() if "(skipped) $ " in line]
    for step in (
        "apt-get install",
        "systemd-sysusers",
        "pip install",
        "systemctl enable robot-face.service",
        "systemctl enable robot-face-kiosk.service",
        "chown robot-face:robot-face",
    ):
        assert any(step in line for line in skipped), step
    assert "cage chromium" in proc.stdout


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    install(tmp_path)
    first = snapshot(tmp_path)
    proc = install(tmp_path)
    assert snapshot(tmp_path) == first
    assert "installed" not in proc.stdout and "created" not in proc.stdout
    assert "unchanged" in proc.stdout and "kept existing" in proc.stdout


def test_config_and_password_are_kept_units_are_upgraded(tmp_path: Path) -> None:
    install(tmp_path)
    config = tmp_path / "etc/robot-face/config.toml"
    config.write_text('[mqtt]\nbroker = "mqtt://example:1883"\n')
    password = tmp_path / "etc/robot-face/mqtt-password"
    password.write_text("s3cret\n")
    unit = tmp_path / "etc/systemd/system/robot-face.service"
    unit.write_text("stale\n")
    proc = install(tmp_path)
    assert config.read_text() == '[mqtt]\nbroker = "mqtt://example:1883"\n'
    assert password.read_text() == "s3cret\n"
    assert unit.read_bytes() == (REPO / "systemd/robot-face.service").read_bytes()
    assert f"installed {unit}" in proc.stdout


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    proc = install(root, "--dry-run", "--kiosk")
    assert not root.exists()
    assert "(dry-run) install" in proc.stdout and "(dry-run) mkdir" in proc.stdout


def test_unknown_option_is_an_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--root", str(tmp_path), "--bogus"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "unknown option --bogus" in proc.stderr


def test_not_a_repository_is_an_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--root", str(tmp_path / "r"), "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "is not the robot-face repository" in proc.stderr


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed on this machine"
)
def test_installed_units_verify(tmp_path: Path) -> None:
    install(tmp_path, "--kiosk")
    proc = verify_root(tmp_path, ["/opt/robot-face/venv/bin/robot-face"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ""


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed on this machine")
def test_shellcheck() -> None:
    proc = subprocess.run(
        ["shellcheck", str(SCRIPT), str(REPO / "systemd/robot-face-kiosk")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
