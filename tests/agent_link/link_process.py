"""Run an MqttLink in its own process (for kill -9 tests). Prints CONNECTED / MSG lines on stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.event_messages import TapBody
from agent_link.protocol.messages import StatusMessage


async def _main(args: argparse.Namespace) -> None:
    settings = LinkSettings(
        broker=f"mqtt://127.0.0.1:{args.port}",
        keepalive_s=args.keepalive,
        reconnect_min_s=0.1,
        reconnect_max_s=0.5,
    )
    outbox = Outbox(args.outbox, args.device, args.boot)

    def on_message(kind: str, payload: bytes, ts: float) -> None:
        if args.crash_on_command and kind == "command":
            os._exit(3)  # die while handling it, before it could be acknowledged
        print(f"MSG {kind} {payload.decode(errors='replace')}", flush=True)

    def on_connection(connected: bool, detail: str) -> None:
        print("CONNECTED" if connected else "DISCONNECTED", flush=True)

    link = MqttLink(settings, args.device, args.boot, outbox, on_message, on_connection)
    link.set_status(StatusMessage(online=True, boot=args.boot, state="asleep"))
    for _ in range(args.events):
        outbox.append(TapBody(source="sim", ts=1764441600.0))
    print("APPENDED", flush=True)
    await link.run()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--boot", type=int, required=True)
    parser.add_argument("--outbox", required=True)
    parser.add_argument("--events", type=int, default=0)
    parser.add_argument("--crash-on-command", action="store_true")
    parser.add_argument("--keepalive", type=int, default=5)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
