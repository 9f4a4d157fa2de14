"""``robot-face``: a thin command line over the runtime and the tools of each part."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence

from device import __version__

_LOGGER = logging.getLogger(__name__)

PART_COMMANDS = (
    "audio.tools.cli_hearing",
    "audio.tools.cli_speaking",
    "audio.tools.bench_duplex",
    "face.cli",
    "device.cli_hw",
    "agent_link.cli",
    "agent_link.harness.cli",
    "agent_link.harness.demo_launcher",
    "agent_link.harness.fleet.cli",
    "device.shell.fleet_cli",
    "device.bench.control",
    "device.bench.cli",
)
"""Modules with ``register(sub, bench)`` adding their subcommands."""


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The configuration file and the overrides tests and operators rely on."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration file (every key: robot-face config, or systemd/config.example.toml)",
    )
    parser.add_argument("--broker", metavar="URL", help="MQTT broker, mqtt://host:port or mqtts://host:port")
    parser.add_argument("--device-id", metavar="ID", help="device id (MQTT client id and topic part)")
    parser.add_argument("--state-dir", metavar="DIR", help="directory for all persistent state")
    parser.add_argument(
        "--simulate",
        action="store_true",
        default=None,
        help="no hardware: sim/tap, sim/text, sim/audio over MQTT; speaker to WAV files",
    )
    parser.add_argument("--face", metavar="RENDERER", help="face renderer: terminal, browser, pygame or none")
    parser.add_argument("--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR")
    parser.add_argument(
        "--set",
        metavar="SECTION.KEY=VALUE",
        action="append",
        default=[],
        help="override any config key, e.g. --set button.backend=keyboard (VALUE as TOML, else a string)",
    )


def config_from_args(args: argparse.Namespace) -> object:
    """Load the configuration with the command-line overrides (raises ConfigError)."""
    from device.config import ConfigError, load_config

    overrides: dict[str, object] = {
        "broker": args.broker,
        "device_id": args.device_id,
        "state_dir": args.state_dir,
        "simulate": args.simulate,
        "face.renderer": getattr(args, "face", None),
        "device.log_level": getattr(args, "log_level", None),
    }
    for item in getattr(args, "set", []):
        key, sep, raw = item.partition("=")
        if not sep or "." not in key:
            raise ConfigError("--set", f"expected SECTION.KEY=VALUE, got {item!r}")
        overrides[key.strip()] = _toml_literal(raw.strip())
    return load_config(args.config, overrides)


def _toml_literal(raw: str) -> object:
    """Parse a TOML value (``3``, ``true``, ``"x"``, ``[..]``); anything else is a plain string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _run(args: argparse.Namespace) -> int:
    from agent_link.link.settings import LinkConfigError
    from device.config import Config, ConfigError
    from device.memory import tune_malloc
    from device.persistence import StateDirUnusable
    from device.shell.runtime import Runtime

    tune_malloc()  # before the models and threads: freed buffers go back to the system
    config = config_from_args(args)
    assert isinstance(config, Config)
    try:  # files only a config change (or provisioning) fixes: exit 2, systemd does not restart
        config.mqtt.check_files()
    except LinkConfigError as err:
        raise ConfigError(f"mqtt.{err.key}" if err.key else "mqtt", str(err)) from None
    logging.getLogger().setLevel(config.device.log_level.upper())
    try:
        runtime = Runtime(config)
    except StateDirUnusable as err:
        raise ConfigError("device.state_dir", str(err)) from None
    return asyncio.run(runtime.run())


def _config(args: argparse.Namespace) -> int:
    from device.config import reference_toml

    if args.check:
        config_from_args(args)
        print("configuration OK")
        return 0
    print(reference_toml())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The full command tree."""
    parser = argparse.ArgumentParser(
        prog="robot-face", description="On-device runtime of the robot companion: ears, voice and face."
    )
    parser.add_argument("--version", action="version", version=f"robot-face {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="run the device daemon")
    add_config_arguments(run)
    run.set_defaults(func=_run)
    cfg = sub.add_parser("config", help="print the reference configuration (every key, unit, default)")
    add_config_arguments(cfg)
    cfg.add_argument("--check", action="store_true", help="validate the configuration and exit")
    cfg.set_defaults(func=_config)
    bench_parser = sub.add_parser("bench", help="benchmarks that print figures")
    bench = bench_parser.add_subparsers(dest="bench", metavar="WHAT")
    for name in PART_COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                raise
            continue
        module.register(sub, bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``robot-face`` console script; returns the exit code."""
    from device.config import ConfigError

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    from device.native_threads import limit_blas_threads

    limit_blas_threads()  # every command runs as the daemon does: numpy's BLAS on one thread
    try:
        return int(func(args) or 0)
    except ConfigError as err:
        print(f"robot-face: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
