"""``robot-face bench footprint`` and ``robot-face bench soak``: the daemon's memory and endurance."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``bench footprint`` and ``bench soak``."""
    b = bench.add_parser("footprint", help="resident memory of each part and of the whole daemon")
    b.add_argument(
        "--baseline-tree",
        metavar="DIR",
        help="also run the daemon from this source tree (e.g. a checkout of main) for the before figures",
    )
    b.add_argument("--untuned", action="store_true", help="also run this tree's daemon without malloc tuning")
    b.add_argument("--face", default="", help="face renderer of the daemon (default: the configured one)")
    b.add_argument(
        "--set",
        metavar="SECTION.KEY=VALUE",
        action="append",
        default=[],
        help="a config key for every daemon run, e.g. --set hearing.stt_cross_check_model=off",
    )
    b.add_argument("--parts-only", action="store_true", help="only the part-by-part table")
    b.add_argument("--daemon-only", action="store_true", help="only the whole daemon")
    b.set_defaults(func=_footprint)
    s = bench.add_parser("soak", help="N spoken turns with the real daemon: memory, fds, threads, latency")
    s.add_argument("--turns", type=int, default=1000, help="spoken turns (default 1000, about 1-2 hours)")
    s.add_argument(
        "--every", type=int, default=0, help="a row every K turns (default 100, N/10 for short runs)"
    )
    s.add_argument("--workdir", help="keep the broker, state and daemon log here (default: a temporary dir)")
    s.add_argument(
        "--set",
        metavar="SECTION.KEY=VALUE",
        action="append",
        default=[],
        help="a config key for the daemon, e.g. --set hearing.stt_cross_check_model=off",
    )
    s.set_defaults(func=_soak)


def _footprint(args: argparse.Namespace) -> int:
    from device.bench.footprint import run_bench

    return run_bench(args)


def _soak(args: argparse.Namespace) -> int:
    from device.bench.soak import run_bench

    return run_bench(args)
