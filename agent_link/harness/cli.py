"""``robot-face harness ...``: console, scenarios, conformance suite, stand-in companion, demo; and
``robot-face bench link``."""

from __future__ import annotations

import argparse
import asyncio
import logging

from agent_link.protocol.topics import DEFAULT_DEVICE_ID

_LOGGER = logging.getLogger(__name__)


def _connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", default="mqtt://127.0.0.1:1883", help="broker URL (mqtt:// or mqtts://)")
    parser.add_argument(
        "--device-id", default=DEFAULT_DEVICE_ID, help=f"device id (default: {DEFAULT_DEVICE_ID})"
    )
    parser.add_argument("--root", default="robotface", help="topic root (default: robotface)")
    parser.add_argument("--ca-file", help="CA certificate for mqtts://")


def _harness(args: argparse.Namespace) -> object:
    from agent_link.harness.client import AgentHarness

    return AgentHarness(args.broker, root=args.root, device_id=args.device_id, ca_file=args.ca_file)


def _list(args: argparse.Namespace) -> int:
    from agent_link.harness.scenarios import load_scenarios

    registry = load_scenarios()
    suites = sorted({s for sc in registry.values() for s in sc.suites})
    print(f"suites: {', '.join(suites)}")
    for sc in registry.values():
        flag = " (restarts the device)" if sc.restarts else ""
        print(f"  {sc.name:<32} {sc.description}{flag}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from agent_link.harness.client import AgentHarness
    from agent_link.harness.runner import run_named, shell_restart
    from agent_link.harness.scenarios import select
    from agent_link.harness.user_voice import UserVoice

    try:
        select(args.scenarios)
    except KeyError as err:
        print(f"robot-face harness run: {err.args[0]}")
        return 2

    async def main() -> int:
        voice = None if args.no_voice else await asyncio.to_thread(UserVoice.load)
        harness = _harness(args)
        assert isinstance(harness, AgentHarness)
        async with harness as h:
            results = await run_named(
                args.scenarios,
                h,
                restart_device=shell_restart(args.restart_cmd) if args.restart_cmd else None,
                voice=voice,
                timeout=args.timeout,
                skip_restarts=args.skip_restarts,
                manual_tap=args.manual_tap,
            )
        return 0 if results and all(r.ok for r in results) else 1

    try:
        return asyncio.run(main())
    except ConnectionError as err:
        print(f"robot-face harness run: {err}")
        return 2


def _console(args: argparse.Namespace) -> int:
    from agent_link.harness.console import run_console

    try:
        return asyncio.run(run_console(args.broker, args.root, args.device_id, ca_file=args.ca_file))
    except ConnectionError as err:
        print(f"robot-face harness console: {err}")
        return 2


def _companion(args: argparse.Namespace) -> int:
    from agent_link.harness.companion import run_companion
    from agent_link.harness.companion_settings import CompanionSettings

    settings = CompanionSettings(
        sleep_after_silence_s=args.sleep_after,
        min_confidence=args.min_confidence,
        sleep_by_command=args.sleep_by_command,
    )
    try:
        return asyncio.run(
            run_companion(
                args.broker, args.root, args.device_id, settings, ca_file=args.ca_file, llm=not args.no_llm
            )
        )
    except ConnectionError as err:
        print(f"robot-face harness companion: {err}")
        return 2


def _demo(args: argparse.Namespace) -> int:
    from agent_link.harness.client import AgentHarness
    from agent_link.harness.demo import run_demo

    async def main() -> int:
        harness = _harness(args)
        assert isinstance(harness, AgentHarness)
        async with harness as h:
            result = await run_demo(h)
        return 0 if result.ok else 1

    try:
        return asyncio.run(main())
    except ConnectionError as err:
        print(f"robot-face harness demo: {err}")
        return 2


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``robot-face harness {list,run,console,companion,demo}`` and ``robot-face bench link``."""
    b = bench.add_parser(
        "link", help="command → event round trip through the MQTT link vs a bare paho client"
    )
    b.add_argument("--rounds", type=int, default=200, help="round trips per device (default 200)")
    b.set_defaults(func=_bench_link)
    harness = sub.add_parser("harness", help="play the agent's side: console, scenarios, companion, demo")
    hsub = harness.add_subparsers(dest="harness_command", metavar="WHAT", required=True)

    p = hsub.add_parser("list", help="list scenarios and suites")
    p.set_defaults(func=_list)

    p = hsub.add_parser("run", help="run scenarios or suites (e.g. conformance) and print a pass/fail report")
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario or suite names")
    _connection_args(p)
    p.add_argument("--timeout", type=float, default=20.0, help="default wait per expectation, seconds")
    p.add_argument("--restart-cmd", help="shell command that restarts the device (restart scenario)")
    p.add_argument("--skip-restarts", action="store_true", help="skip scenarios that restart the device")
    p.add_argument("--no-voice", action="store_true", help="do not load Piper; voice scenarios skip")
    p.add_argument(
        "--manual-tap", action="store_true", help="real device: ask the person to tap (no sim/tap)"
    )
    p.set_defaults(func=_run)

    p = hsub.add_parser("console", help="interactive agent console: type replies, /stop, /sleep, /tap ...")
    _connection_args(p)
    p.set_defaults(func=_console)

    p = hsub.add_parser("companion", help="stand-in companion agent (greets, offers activities, sleeps)")
    _connection_args(p)
    p.add_argument(
        "--sleep-after", type=float, default=45.0, help="seconds of silence before sleep (0 = never)"
    )
    p.add_argument("--min-confidence", type=float, default=0.4, help="below this a transcript is not heard")
    p.add_argument(
        "--sleep-by-command", action="store_true", help="goodbye + sleep command instead of [sleep]"
    )
    p.add_argument("--no-llm", action="store_true", help="rule replies even if OPENAI_API_KEY is set")
    p.set_defaults(func=_companion)

    p = hsub.add_parser("demo", help="drive a whole spoken conversation (no microphone) and print a summary")
    _connection_args(p)
    p.set_defaults(func=_demo)


def _bench_link(args: argparse.Namespace) -> int:
    from agent_link.harness.bench_link import run  # starts mosquitto: imported only here

    run(args.rounds)
    return 0
