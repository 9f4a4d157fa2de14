"""``robot-face sim-fleet N`` and ``robot-face bench reliability``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from agent_link.harness.broker import Mosquitto

_LOGGER = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``bench reliability`` (``sim-fleet`` is the device side's: ``device.shell.fleet_cli``)."""
    b = bench.add_parser("reliability", help="fault injection against the real daemon; prints lost: 0")
    b.add_argument("--kills", type=int, default=12, help="kill -9 cycles (default 12)")
    b.add_argument("--outages", type=int, default=6, help="broker stop/kill cycles (default 6)")
    b.add_argument("--partitions", type=int, default=2, help="stalled-network cycles (default 2)")
    b.add_argument("--fuzz", type=int, default=10_000, help="fuzzed inputs (default 10000)")
    b.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    b.add_argument("--workdir", type=Path, help="keep logs and state here (default: a temporary directory)")
    b.set_defaults(func=_bench_reliability)


def topic_level(text: str) -> str:
    """A device-id prefix: it becomes part of MQTT topics, so no '/', '+' or '#'."""
    if not text or any(c in text for c in "/+#"):
        raise argparse.ArgumentTypeError(f"{text!r} must be non-empty, without '/', '+' or '#'")
    return text


@contextlib.contextmanager
def workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="robot-face-", dir=base) as tmp:
        yield Path(tmp)


@contextlib.contextmanager
def private_broker(workdir: Path, quiet: bool = True) -> Iterator[Mosquitto]:
    """A mosquitto for the run (no per-message log, TCP_NODELAY, no connection limit)."""
    extra = "set_tcp_nodelay true\nmax_connections -1\nmax_queued_messages 10000\n"
    broker = Mosquitto(workdir / "mosquitto", extra_config=extra)
    if quiet:
        broker.config_path.write_text(
            broker.config_path.read_text().replace("log_type all", "log_type error")
        )
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


def process_cpu_s(broker: Mosquitto | None) -> float:
    """CPU seconds (user + system) used so far by the private broker's process, 0 if unknown."""
    proc = getattr(broker, "_proc", None)
    if proc is None:
        return 0.0
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bench_reliability(args: argparse.Namespace) -> int:
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    with workdir(args.workdir) as work:
        report = asyncio.run(_reliability(args, work))
    print(report.summary())
    return 0 if report.lost == 0 and not report.violations else 1


async def _speech() -> bytes:
    from agent_link.harness.user_voice import UserVoice

    voice = await asyncio.to_thread(UserVoice.load)
    return await asyncio.to_thread(voice.wav, "Tell me a story about the sea and the ships that sail on it.")


@contextlib.asynccontextmanager
async def _session(
    broker: Mosquitto,
    daemon_url: str,
    work: Path,
    name: str,
    seed: int,
    config: dict[str, dict[str, Any]] | None = None,
) -> AsyncIterator[Any]:
    from agent_link.harness.client import AgentHarness
    from agent_link.harness.reliability.daemon import DaemonProcess
    from agent_link.harness.reliability.suite import FaultRunner

    daemon = DaemonProcess(daemon_url, f"bench-{name}", work / name, config=config)
    try:
        async with AgentHarness(broker.url, device_id=daemon.device_id) as harness:
            await harness.set_agent_online(True)
            yield FaultRunner(broker, daemon, harness, seed=seed)
    finally:
        daemon.kill()


async def _reliability(args: argparse.Namespace, work: Path) -> Any:
    from agent_link.harness.reliability.proxy import StallingProxy
    from agent_link.harness.reliability.suite import KILL_MOMENTS, FaultRunner, ReliabilityReport

    total = ReliabilityReport()
    speech = await _speech()
    with private_broker(work, quiet=False) as broker:
        async with _session(broker, broker.url, work, "kills", args.seed) as runner:
            assert isinstance(runner, FaultRunner)
            runner.report, runner.speech_wav = total, speech
            await runner.start_daemon()
            for i in range(args.kills):
                moment = KILL_MOMENTS[i % len(KILL_MOMENTS)]
                print(f"kill -9 #{i + 1} ({moment})", flush=True)
                await runner.kill_cycle(moment)
            for i in range(args.outages):
                print(f"broker outage #{i + 1}", flush=True)
                await runner.broker_outage(kill=i % 2 == 1, down_s=0.5 + i % 3)
            await runner.verify(allow_open=True)
            opened = runner.open_utterances()
            if opened:
                print(f"note: {len(opened)} utterance(s) left open by killed boots (known daemon bug)")
        if args.partitions:
            proxy = StallingProxy(broker.host, broker.port)
            await proxy.start()
            try:
                url = f"mqtt://127.0.0.1:{proxy.port}"
                cfg = {"mqtt": {"keepalive_s": 2, "connect_timeout_s": 2.0}}
                async with _session(broker, url, work, "partition", args.seed, cfg) as runner:
                    assert isinstance(runner, FaultRunner)
                    runner.report = total
                    await runner.start_daemon()
                    for i in range(args.partitions):
                        print(f"network partition #{i + 1}", flush=True)
                        await runner.partition(proxy)
                    await runner.verify()
            finally:
                await proxy.close()
        if args.fuzz:
            async with _session(broker, broker.url, work, "fuzz", args.seed) as runner:
                assert isinstance(runner, FaultRunner)
                runner.report = total
                await runner.start_daemon()
                print(f"fuzzing {args.fuzz} inputs", flush=True)
                await runner.fuzz(args.fuzz, seed=args.seed)
                await runner.verify()
    return total
