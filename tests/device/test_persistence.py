"""The state directory: boot counter and settings survive restarts, corrupt files do not crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from device.core.state import Settings
from device.persistence import StateDir


def test_boot_counter_increments(tmp_path: Path) -> None:
    assert [StateDir(tmp_path).next_boot() for _ in range(3)] == [1, 2, 3]


def test_a_corrupt_boot_counter_never_goes_back_to_earlier_boots(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    assert [state.next_boot() for _ in range(3)] == [1, 2, 3]
    (tmp_path / "boot").write_text("\x00garbage")
    boot = state.next_boot()  # ids {device}-{boot}-{seq} of boots 1-3 must not come back
    assert boot > 1_000_000_000
    assert state.next_boot() == boot + 1


def test_settings_round_trip(tmp_path: Path) -> None:
    StateDir(tmp_path).save_settings(
        Settings(sleep_allowed=False, language="de", voice="/v.onnx", volume=0.2)
    )
    assert StateDir(tmp_path).load_settings(Settings()) == Settings(False, "de", "/v.onnx", 0.2)


def test_missing_or_corrupt_settings_fall_back(tmp_path: Path) -> None:
    defaults = Settings(volume=0.5)
    assert StateDir(tmp_path).load_settings(defaults) == defaults
    (tmp_path / "settings.json").write_text("{not json")
    assert StateDir(tmp_path).load_settings(defaults) == defaults


def test_open_ids_survive_a_restart_until_closed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    replies = StateDir(tmp_path).open_ids("replies")
    assert replies.load() == []
    replies.open("r1")
    replies.open("r2")
    replies.close("r1")
    again = StateDir(tmp_path).open_ids("replies")  # the next boot
    assert again.load() == ["r2"] and "r2" in again
    again.close("r2")
    assert StateDir(tmp_path).open_ids("replies").load() == []
    assert StateDir(tmp_path).open_ids("utterances").load() == []  # one file per kind
    (tmp_path / "open-replies.json").write_text("{not json")
    assert StateDir(tmp_path).open_ids("replies").load() == []
    assert "unreadable" in caplog.text
