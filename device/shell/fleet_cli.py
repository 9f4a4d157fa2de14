"""``robot-face sim-fleet``: many simulated devices (the device side) against a broker, driven by the
fleet agent (``agent_link.harness.fleet``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging

from agent_link.harness.fleet import fleet
from agent_link.harness.fleet.cli import private_broker, process_cpu_s, topic_level, workdir
from device.shell.fleet_device import SimDevice


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``sim-fleet``."""
    p = sub.add_parser("sim-fleet", help="run N lightweight simulated devices against a broker and measure")
    p.add_argument("count", type=int, nargs="+", help="number of devices (several values: one run each)")
    p.add_argument("--broker", metavar="URL", help="broker URL (default: start a private mosquitto)")
    p.add_argument("--conversations", type=int, default=1, help="conversations per device (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON line per run")
    p.add_argument(
        "--prefix",
        type=topic_level,
        default="sim",
        help="device ids are PREFIX<N>-00000...; give each sim-fleet on one broker its own (default sim)",
    )
    p.set_defaults(func=_sim_fleet)


def _sim_fleet(args: argparse.Namespace) -> int:
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    failed = False
    with workdir(None) as work, contextlib.ExitStack() as stack:
        broker = None if args.broker else stack.enter_context(private_broker(work))
        url = args.broker or (broker.url if broker else "")
        for n in args.count:
            cpu0 = process_cpu_s(broker)
            report = asyncio.run(
                fleet.run_fleet(
                    url,
                    n,
                    work / f"state-{n}",
                    args.conversations,
                    prefix=f"{args.prefix}{n}",
                    make_device=SimDevice,
                )
            )
            broker_cpu = process_cpu_s(broker) - cpu0
            if args.json:
                print(json.dumps({**report.as_dict(), "broker_cpu_s": broker_cpu}))
            else:
                print(f"---- sim-fleet {n} devices ({url})")
                print(report.summary())
                if broker is not None:
                    print(f"broker CPU (whole run incl. connects): {broker_cpu:.2f} s")
            failed |= bool(report.failed or report.violations)
    return 1 if failed else 0
