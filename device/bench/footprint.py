"""``robot-face bench footprint``: where the resident memory goes, part by part and for the daemon.

Part by part: two fresh child processes (``device.bench.parts``) load the runtime's parts in the
daemon's order, one the way the daemon does now and one the way it did before (onnxruntime's
memory arena, ``onnx`` in process, glibc's malloc defaults); each step's RSS and USS increase is
printed side by side. Then the whole daemon (``robot-face run --simulate`` against a private
mosquitto): resident memory after start and after the demo's scripted conversation, for this tree
and, with ``--baseline-tree DIR`` (e.g. a checkout of main), for that one in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from device.memory import TRIM_INTERVAL_S, TUNING_ENV, open_fds, process_memory, thread_count

if TYPE_CHECKING:
    from agent_link.harness.demo import DemoResult
    from agent_link.harness.reliability.daemon import DaemonProcess

SETTLE_S = TRIM_INTERVAL_S + 1.0
"""Seconds the daemon idles after "Ready" and after the conversation before its figures are read:
its malloc trimming (``device.memory``) has run once since, so what it freed last is not counted
(as the part-by-part child waits before its last step)."""
IDLE_S = 30.0
"""Seconds the awake, idle daemon's CPU time is measured over (20 s runs differed by ±1.5 points)."""
FLOOR_HZ = 100.0
"""Rate of the bare sleep loop whose CPU is this machine's wake-up floor (the output callback's)."""
_DAEMON_CONFIG: dict[str, dict[str, Any]] = {
    "device": {"sim_speaker": "null", "watchdog": False},
    "face": {"browser_port": 0},
}
"""The daemon's configuration before ``--set``: no speaker, no watchdog, any free browser port."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Step:
    """One cumulative figure of a child: after ``name``, RSS and USS in MiB."""

    name: str
    rss: float
    uss: float


def part_steps(mode: str, env: dict[str, str] | None = None, timeout: float = 600.0) -> list[Step]:
    """Run ``device.bench.parts MODE`` in a fresh interpreter; its steps."""
    done = subprocess.run(
        [sys.executable, "-m", "device.bench.parts", mode],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench_parts {mode} failed:\n{done.stderr[-2000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [Step(r["step"], r["rss"], r["uss"]) for r in rows if "step" in r]


def parts_table(before: list[Step], after: list[Step]) -> str:
    """Each step's increase (and the totals) before and after, side by side."""
    head = f"{'part (loaded in this order)':<44} {'before: +RSS  +USS':>20} {'now: +RSS  +USS':>20}"
    lines = [head, "-" * len(head)]
    prev_b = prev_a = Step("", 0.0, 0.0)
    for b, a in zip(before, after, strict=True):
        lines.append(
            f"{a.name:<44} {b.rss - prev_b.rss:>12.0f} {b.uss - prev_b.uss:>6.0f} "
            f"{a.rss - prev_a.rss:>13.0f} {a.uss - prev_a.uss:>6.0f}"
        )
        prev_b, prev_a = b, a
    lines.append("-" * len(head))
    lines.append(
        f"{'total (MiB)':<44} {before[-1].rss:>12.0f} {before[-1].uss:>6.0f} "
        f"{after[-1].rss:>13.0f} {after[-1].uss:>6.0f}"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class DaemonFigures:
    """The daemon's resident memory after start and after a conversation (MiB), fds and threads."""

    label: str
    start_rss: float
    start_uss: float
    talk_rss: float
    talk_uss: float
    idle_cpu_percent: float
    turns: int
    fds: int
    threads: int
    problems: tuple[str, ...]


def _start_with_env(daemon: DaemonProcess, tree: str | None, extra_env: dict[str, str]) -> None:
    """Start ``daemon`` with ``PYTHONPATH=tree`` (if given) and ``extra_env``, then restore ours."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", *extra_env)}
    if tree:
        os.environ["PYTHONPATH"] = tree  # absolute: run_bench made it so
    os.environ.update(extra_env)
    try:
        daemon.start()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


async def _idle_cpu_percent(pid: int) -> float:
    """The process's CPU time over the next ``IDLE_S`` seconds, as a share of one core (%)."""
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(IDLE_S)
    return (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0) * 100


async def _wake_idle_and_talk(broker_url: str, pid: int) -> tuple[float, DemoResult]:
    """Wake the daemon, measure its idle CPU (%), then hold the demo's conversation with it."""
    from agent_link.harness.client import AgentHarness
    from agent_link.harness.demo import run_demo
    from agent_link.harness.user_voice import UserVoice

    voice = await asyncio.to_thread(UserVoice.load)
    async with AgentHarness(broker_url, device_id="footprint") as harness:
        await harness.sim_tap()
        await harness.wait_for("wake", 15)
        await asyncio.sleep(3.0)  # the wake-up animation
        idle = await _idle_cpu_percent(pid)
        result = await run_demo(harness, voice, log=lambda _line: None)
    return idle, result


async def daemon_figures(
    label: str,
    workdir: Path,
    tree: str | None,
    extra_env: dict[str, str],
    face: str,
    settings: dict[str, dict[str, Any]] | None = None,
) -> DaemonFigures:
    """Start a private broker and the daemon (code from ``tree`` if given), read its memory after
    start and after the demo's conversation."""
    from agent_link.harness.broker import Mosquitto
    from agent_link.harness.reliability.daemon import DaemonProcess, merge_config

    broker = Mosquitto(workdir / "broker")
    broker.start()
    config = merge_config(_DAEMON_CONFIG, settings)
    daemon = DaemonProcess(broker.url, "footprint", workdir / "device", config=config)
    daemon.argv = _with_face(daemon.argv, face)  # type: ignore[method-assign]
    _start_with_env(daemon, tree, extra_env)
    try:
        await daemon.wait_ready(timeout=180)
        await asyncio.sleep(SETTLE_S)
        pid = daemon.pid
        assert pid is not None
        start = process_memory(pid)
        idle, result = await _wake_idle_and_talk(broker.url, pid)
        await asyncio.sleep(SETTLE_S)
        talk = process_memory(pid)
        return DaemonFigures(
            label,
            start.rss,
            start.uss,
            talk.rss,
            talk.uss,
            idle,
            len(result.turns),
            open_fds(pid),
            thread_count(pid),
            tuple(result.problems),
        )
    finally:
        daemon.stop()
        broker.stop()


def wakeup_floor_percent(hz: float = FLOOR_HZ, seconds: float = 3.0) -> float:
    """CPU share of one core (%) that a bare Python thread waking ``hz`` times a second costs here:
    the price of a wake-up, which differs several times between machines (a virtual machine's timers
    cost more). The idle daemon wakes ~165 times a second (10 ms output blocks, 30 ms microphone
    blocks, the face's 30 fps), so its idle figure is read beside this one."""
    period = 1.0 / hz
    c0, t0 = time.thread_time(), time.monotonic()
    deadline = t0
    while time.monotonic() - t0 < seconds:
        deadline += period
        delay = deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    return (time.thread_time() - c0) / (time.monotonic() - t0) * 100.0


def _with_face(argv: Any, face: str) -> Any:
    """``DaemonProcess.argv`` with ``--face FACE`` (no ``--face`` at all: the configured renderer)."""

    def patched() -> list[str]:
        args: list[str] = argv()
        i = args.index("--face")
        return [*args[:i], "--face", face, *args[i + 2 :]] if face else [*args[:i], *args[i + 2 :]]

    return patched


def daemon_table(rows: list[DaemonFigures]) -> str:
    """The daemons' figures, one line each."""
    head = (
        f"{'daemon (robot-face run --simulate)':<40} {'after start RSS/USS':>20} "
        f"{'after the demo RSS/USS':>24} {'idle awake CPU':>15} {'turns':>6} {'fds':>5} {'threads':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.label:<40} {r.start_rss:>12.0f} {r.start_uss:>6.0f} MiB {r.talk_rss:>14.0f} "
            f"{r.talk_uss:>6.0f} MiB {r.idle_cpu_percent:>13.1f} % {r.turns:>6d} {r.fds:>5d} {r.threads:>8d}"
        )
        lines += [f"    problem: {p}" for p in r.problems]
    return "\n".join(lines)


def parse_sets(items: list[str]) -> dict[str, dict[str, Any]]:
    """``--set section.key=value`` items as config tables (values as TOML, else strings)."""
    from device.cli import _toml_literal

    tables: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot:
            raise ValueError(f"--set: expected SECTION.KEY=VALUE, got {item!r}")
        tables.setdefault(section, {})[name] = _toml_literal(raw.strip())
    return tables


async def _daemons(args: Any) -> list[DaemonFigures]:
    rows = []
    sets = parse_sets(args.set)
    with tempfile.TemporaryDirectory(prefix="robot-face-footprint-") as tmp:
        if args.baseline_tree:
            rows.append(
                await daemon_figures(
                    f"baseline ({Path(args.baseline_tree).name})",
                    Path(tmp) / "baseline",
                    args.baseline_tree,
                    {},
                    args.face,
                    sets,
                )
            )
        rows.append(await daemon_figures("this tree", Path(tmp) / "now", None, {}, args.face, sets))
        if args.untuned:
            rows.append(
                await daemon_figures(
                    f"this tree, {TUNING_ENV}=0",
                    Path(tmp) / "untuned",
                    None,
                    {TUNING_ENV: "0"},
                    args.face,
                    sets,
                )
            )
    return rows


def run_bench(args: Any) -> int:
    """``robot-face bench footprint``."""
    t0 = time.monotonic()
    if args.baseline_tree:
        args.baseline_tree = os.path.abspath(args.baseline_tree)
    if not args.daemon_only:
        before = part_steps("baseline")
        after = part_steps("lean")
        print(
            "Resident memory each part adds (MiB; RSS counts shared library pages, USS only this process's)"
        )
        print(parts_table(before, after))
        print()
    if not args.parts_only:
        rows = asyncio.run(_daemons(args))
        print(daemon_table(rows))
        print(
            f"this machine's wake-up floor: a bare {FLOOR_HZ:.0f} Hz Python sleep loop costs "
            f"{wakeup_floor_percent():.1f} % of one core (the idle daemon wakes ~165 times a second)"
        )
        print(
            "goals: after start <= 300 MiB RSS, after the demo's conversation <= 320 MiB RSS, "
            "idle awake <= 5 % of one core"
        )
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0
