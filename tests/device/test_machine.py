"""The boot line's machine summary, from /proc files of a Pi and of a PC."""

from __future__ import annotations

from pathlib import Path

from device.machine import machine_summary

PI_CPUINFO = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid

Hardware\t: BCM2835
Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""
PC_CPUINFO = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse avx2\n"


def _proc(tmp_path: Path, cpuinfo: str, meminfo: str | None) -> Path:
    tmp_path.mkdir()
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    if meminfo is not None:
        (tmp_path / "meminfo").write_text(meminfo)
    return tmp_path


def test_a_pi_is_named_by_its_model_and_a_pc_by_its_cpu(tmp_path: Path) -> None:
    pi = machine_summary(_proc(tmp_path / "pi", PI_CPUINFO, "MemTotal:        944104 kB\n"))
    assert "Raspberry Pi 4 Model B" in pi and pi.endswith("921 MiB")
    pc = machine_summary(_proc(tmp_path / "pc", PC_CPUINFO, None))
    assert "Intel(R) Xeon(R) Processor" in pc and "cores" in pc and "MiB" not in pc


def test_unreadable_proc_files_leave_the_cpu_unknown(tmp_path: Path) -> None:
    assert "unknown CPU" in machine_summary(tmp_path / "missing")
