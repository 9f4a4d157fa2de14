"""The doctor's memory check: per-part needs of a configuration against MemAvailable."""

from __future__ import annotations

from pathlib import Path

from device.config import load_config
from device.doctor.checks import check_config
from device.doctor.memory_check import MOONSHINE_MB, check_memory, memory_needs, read_meminfo


def _meminfo(available_mb: int, total_mb: int = 1024) -> dict[str, int]:
    return {"MemTotal": total_mb * 1024, "MemFree": 10 * 1024, "MemAvailable": available_mb * 1024}


def test_needs_count_only_the_parts_the_configuration_loads() -> None:
    full = {p.name: p.mb for p in memory_needs(load_config(None, {}))}
    small = {p.name: p.mb for p in memory_needs(load_config(None, {"hearing.stt_cross_check_model": "off"}))}
    remote = {p.name: p.mb for p in memory_needs(load_config(None, {"hearing.stt_provider": "openai"}))}
    assert full["moonshine"] == MOONSHINE_MB and "moonshine" not in small
    assert sum(full.values()) - sum(small.values()) == MOONSHINE_MB
    assert "whisper" not in remote and "silero" not in remote
    # Scaled from the shipped model files: Whisper and the voice weigh more than their files.
    assert full["whisper"] > 72 and full["voice"] > 60


def test_memory_warns_below_the_need_and_names_the_small_profile() -> None:
    config = load_config(None, {})
    need = sum(p.mb for p in memory_needs(config))
    low = check_memory(config, lambda: _meminfo(need - 1))
    assert low.status == "warn"
    assert f"needs ~{need} MiB" in low.detail and f"{need - 1} MiB available" in low.detail
    assert "stt_cross_check_model" in low.fix and "docs/deploy.md" in low.fix
    assert check_memory(config, lambda: _meminfo(need)).status == "ok"
    # The small profile fits where the default does not.
    small = load_config(None, {"hearing.stt_cross_check_model": "off"})
    assert check_memory(small, lambda: _meminfo(need - 1)).status == "ok"


def test_memory_reads_proc_meminfo_format_and_notes_what_it_cannot_read(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:         948304 kB\nMemFree:          102400 kB\nMemAvailable:     204800 kB\n"
    )
    assert read_meminfo(meminfo)["MemAvailable"] == 204800
    config = load_config(None, {})
    result = check_memory(config, lambda: read_meminfo(meminfo))
    assert result.status == "warn" and "200 MiB available of 926 MiB" in result.detail
    broken = check_memory(config, lambda: read_meminfo(tmp_path / "missing"))
    assert broken.status == "note"
    assert check_memory(config, lambda: {"MemTotal": 1}).status == "note"


def test_doctor_lists_the_memory_check(tmp_path: Path) -> None:
    config = load_config(None, {"state_dir": str(tmp_path), "simulate": True, "broker": "mqtt://127.0.0.1:9"})
    names = [r.name for r in check_config(config)]
    assert names[-1] == "memory"


def test_the_small_memory_profile_is_valid_and_needs_less() -> None:
    profile = Path(__file__).resolve().parents[2] / "systemd" / "config.small-memory.toml"
    small = load_config(str(profile), {})
    assert small.hearing.stt_cross_check_model == "off"
    need_small = sum(p.mb for p in memory_needs(small))
    need_default = sum(p.mb for p in memory_needs(load_config(None, {})))
    assert need_small <= need_default - MOONSHINE_MB
    assert need_small < 400  # fits the ~400 MiB a 512 MB board has free
