"""``robot-face bench soak --turns N``: the real daemon in simulation, N spoken turns, figures as it goes.

A private mosquitto, ``robot-face run --simulate`` and the stand-in companion; the user is played by
the demo's driver over and over: a tap wakes the device, the demo's lines are spoken (synthesised
once, then replayed) through the real VAD, Whisper and Moonshine, the companion answers, runs the
memory game (``sleep_allowed`` false, a stray ``sleep`` ignored), says goodbye with ``[sleep]``;
every third round the agent also stops its first reply while it plays. Every ``--every`` turns
(default 100, or a tenth of N for short runs) one row: the daemon's resident memory (RSS/USS), open
file descriptors, threads, events in the outbox, and end of speech → transcript latency over those
turns. The growth after the first row and the trend of the latency close the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_link.harness.client import AgentHarness, HarnessTimeout
from agent_link.harness.demo import SCRIPT, DemoDriver, DemoResult, UserLine
from agent_link.harness.user_voice import UserVoice
from device.memory import open_fds, process_memory, thread_count

if TYPE_CHECKING:
    from agent_link.harness.reliability.daemon import DaemonProcess

STOP_EVERY = 3
"""Every this many rounds, the agent stops its first reply while it plays."""


class CachedVoice(UserVoice):
    """A ``UserVoice`` that synthesises each line once (a soak replays the same lines)."""

    def __init__(self, voice: UserVoice) -> None:
        super().__init__(voice._voice)
        self._clear: dict[str, bytes] = {}
        self._mumbled: dict[str, bytes] = {}

    def wav(self, text: str, gain: float = 0.8, lead_s: float = 0.3, tail_s: float = 0.2) -> bytes:
        """The clear line, synthesised on first use."""
        if text not in self._clear:
            self._clear[text] = super().wav(text, gain, lead_s, tail_s)
        return self._clear[text]

    def mumble_wav(self, text: str, gain: float = 0.05, noise: float = 0.02, seed: int = 7) -> bytes:
        """The mumbled line, synthesised on first use."""
        if text not in self._mumbled:
            self._mumbled[text] = super().mumble_wav(text, gain, noise, seed)
        return self._mumbled[text]


class SoakDriver(DemoDriver):
    """The demo driver for one round; ``stop_first_reply`` makes the agent stop its first answer."""

    def __init__(self, harness: AgentHarness, voice: UserVoice, stop_first_reply: bool) -> None:
        super().__init__(harness, voice, log=lambda _line: None)
        self.stop_first_reply = stop_first_reply
        self.stops = 0
        """Replies stopped while playing (``playback_finished`` with ``interrupted: true``)."""

    async def _turn(self, line: UserLine, wait_quiet: bool = True) -> None:
        stopper = None
        if self.stop_first_reply and line is SCRIPT[0]:
            self.stop_first_reply = False
            stopper = asyncio.create_task(self._stop_next_reply(len(self.agent.replies)))
        try:
            await super()._turn(line, wait_quiet)
        finally:
            if stopper is not None:
                with contextlib.suppress(HarnessTimeout, TimeoutError):
                    await asyncio.wait_for(stopper, 30)

    async def _stop_next_reply(self, before: int) -> None:
        """Once the reply after the first ``before`` starts playing, send ``stop``."""
        say = await self._poll(
            lambda: self.agent.replies[before].say if len(self.agent.replies) > before else None
        )
        await self._poll(lambda: self._event("playback_started", say))
        await self.h.stop()
        finished = await self._poll(lambda: self._event("playback_finished", say))
        if getattr(finished, "interrupted", False):
            self.stops += 1

    def _event(self, kind: str, say: str) -> Any:
        return next(
            (e for e in reversed(self.h.events) if e.type == kind and getattr(e, "say", None) == say), None
        )

    @staticmethod
    async def _poll(get: Any, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while (value := get()) is None:
            if time.monotonic() > deadline:
                raise HarnessTimeout("soak: expected event did not come")
            await asyncio.sleep(0.05)
        return value


@dataclass
class SoakRow:
    """The daemon's figures after ``turns`` spoken turns."""

    turns: int
    rss: float
    uss: float
    fds: int
    threads: int
    outbox: int
    latency_median_ms: float | None
    latency_max_ms: float | None
    seconds: float


@dataclass
class SoakResult:
    """Every row, and what went wrong on the way."""

    rows: list[SoakRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    rounds: int = 0
    stops: int = 0


def outbox_rows(path: Path) -> int:
    """Events in the daemon's outbox (read-only; -1 when it cannot be read)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)) as db:
            return int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    except sqlite3.Error:
        return -1


def sample(pid: int, outbox: Path, turns: int, latencies: list[float], t0: float) -> SoakRow:
    """One row of figures for the daemon ``pid``."""
    mem = process_memory(pid)
    return SoakRow(
        turns,
        mem.rss,
        mem.uss,
        open_fds(pid),
        thread_count(pid),
        outbox_rows(outbox),
        statistics.median(latencies) if latencies else None,
        max(latencies) if latencies else None,
        time.monotonic() - t0,
    )


def table(result: SoakResult) -> str:
    """The rows, then growth and latency trend."""
    head = (
        f"{'turns':>6} {'RSS MiB':>8} {'USS MiB':>8} {'fds':>5} {'threads':>8} {'outbox':>7} "
        f"{'eos→transcript median/max ms':>29} {'elapsed s':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in result.rows:
        lat = (
            f"{r.latency_median_ms:.0f} / {r.latency_max_ms:.0f}"
            if r.latency_median_ms is not None and r.latency_max_ms is not None
            else "-"
        )
        lines.append(
            f"{r.turns:>6d} {r.rss:>8.1f} {r.uss:>8.1f} {r.fds:>5d} {r.threads:>8d} {r.outbox:>7d} "
            f"{lat:>29} {r.seconds:>10.0f}"
        )
    lines.append(summary(result))
    return "\n".join(lines)


def summary(result: SoakResult) -> str:
    """Growth after the first row, fd/thread range, latency trend (last row's median vs the first's)."""
    rows = [r for r in result.rows if r.turns > 0]
    if len(rows) < 2:
        return "(too few rows for a trend)"
    first, last = rows[0], rows[-1]
    lats = [r.latency_median_ms for r in rows if r.latency_median_ms is not None]
    trend = f"{lats[-1] - lats[0]:+.0f} ms" if len(lats) >= 2 else "-"
    text = (
        f"after turn {first.turns}: RSS {last.rss - first.rss:+.1f} MiB, USS {last.uss - first.uss:+.1f} MiB "
        f"over {last.turns - first.turns} turns; fds {min(r.fds for r in rows)}-{max(r.fds for r in rows)}, "
        f"threads {min(r.threads for r in rows)}-{max(r.threads for r in rows)}; latency median "
        f"{trend} (last window vs first); {result.rounds} rounds, {result.stops} replies stopped"
    )
    if result.problems:
        text += f"\nproblems ({len(result.problems)}): " + "; ".join(result.problems[:10])
    return text


def _add_row(result: SoakResult, row: SoakRow, show: Any) -> None:
    """Keep ``row`` and ``show`` its line."""
    result.rows.append(row)
    show(table_line(row))


def _add_round(result: SoakResult, driver: SoakDriver, round_result: DemoResult) -> None:
    """Count a finished round: its stopped replies and its problems."""
    result.rounds += 1
    result.stops += driver.stops
    result.problems += [f"round {result.rounds}: {p}" for p in round_result.problems]


async def _run_rounds(
    daemon: DaemonProcess,
    pid: int,
    voice: UserVoice,
    turns: int,
    every: int,
    result: SoakResult,
    show: Any,
) -> None:
    """Demo rounds until ``turns`` turns were spoken or the daemon died, a row every ``every`` turns."""
    outbox = daemon.state_dir / "outbox.sqlite3"
    t0 = time.monotonic()
    done = 0
    window: list[float] = []
    _add_row(result, sample(pid, outbox, 0, [], t0), show)
    async with AgentHarness(daemon.broker_url, device_id="soak") as harness:
        while done < turns:
            driver = SoakDriver(harness, voice, stop_first_reply=result.rounds % STOP_EVERY == 1)
            round_result: DemoResult = await driver.run()
            _add_round(result, driver, round_result)
            for turn in round_result.turns:
                done += 1
                if turn.end_to_transcript_ms is not None:
                    window.append(turn.end_to_transcript_ms)
                if done % every == 0 or done == turns:
                    _add_row(result, sample(pid, outbox, done, window, t0), show)
                    window = []
                if done >= turns:
                    break
            if not daemon.running:
                result.problems.append("the daemon died")
                break


async def soak(
    turns: int,
    every: int,
    workdir: Path,
    config: dict[str, dict[str, Any]] | None = None,
    show: Any = print,
) -> SoakResult:
    """Run the soak; ``show`` gets each row's line as it is measured."""
    from agent_link.harness.broker import Mosquitto
    from agent_link.harness.reliability.daemon import DaemonProcess, merge_config

    broker = Mosquitto(workdir / "broker")
    broker.start()
    settings = merge_config({"device": {"sim_speaker": "null", "watchdog": False}}, config)
    daemon = DaemonProcess(broker.url, "soak", workdir / "device", config=settings)
    result = SoakResult()
    try:
        daemon.start()
        await daemon.wait_ready(timeout=180)
        pid = daemon.pid
        assert pid is not None
        voice = CachedVoice(await asyncio.to_thread(UserVoice.load))
        await _run_rounds(daemon, pid, voice, turns, every, result, show)
        errors = daemon.errors()
        if errors:
            result.problems.append(f"{len(errors)} ERROR lines in the daemon log, first: {errors[0][:200]}")
    finally:
        daemon.stop()
        broker.stop()
    return result


def table_line(row: SoakRow) -> str:
    """One row as the table prints it (for progress while the soak runs)."""
    lat = (
        f"{row.latency_median_ms:.0f} / {row.latency_max_ms:.0f}"
        if row.latency_median_ms is not None
        else "-"
    )
    return (
        f"{row.turns:>6d} {row.rss:>8.1f} {row.uss:>8.1f} {row.fds:>5d} {row.threads:>8d} {row.outbox:>7d} "
        f"{lat:>29} {row.seconds:>10.0f}"
    )


def run_bench(args: Any) -> int:
    """``robot-face bench soak``: 0 when the run had no problem."""
    from device.bench.footprint import parse_sets

    every = args.every or (100 if args.turns >= 500 else max(1, args.turns // 10))
    with tempfile.TemporaryDirectory(prefix="robot-face-soak-") as tmp:
        print(
            f"soak: {args.turns} turns, a row every {every} (the daemon's figures; noisy on a busy machine)"
        )
        result = asyncio.run(
            soak(
                args.turns,
                every,
                Path(args.workdir or tmp),
                parse_sets(args.set),
                show=lambda line: print(line, flush=True),
            )
        )
    print()
    print(table(result))
    return 1 if result.problems else 0
