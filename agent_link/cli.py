"""``robot-face schema`` (regenerate the protocol docs) and ``robot-face bench outbox``."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from agent_link.link.outbox import Outbox
from agent_link.protocol.event_messages import TranscriptBody
from agent_link.protocol.messages import decode_command

DEFAULT_DOCS = Path(__file__).resolve().parent.parent / "docs"


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add the ``schema`` subcommand and the ``outbox`` benchmark."""
    p = sub.add_parser("schema", help="generate the AsyncAPI document and JSON Schemas of protocol v1")
    p.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="docs directory (default: the repo's)")
    p.add_argument("--check", action="store_true", help="only check they are up to date (exit 1 if not)")
    p.set_defaults(func=_schema)
    b = bench.add_parser("outbox", help="durable outbox append/ack and command decode speed")
    b.add_argument("--events", type=int, default=500, help="events to append (default 500)")
    b.add_argument("--dir", type=Path, default=None, help="directory for the database (default: a temp dir)")
    b.set_defaults(func=_bench_outbox)


def _schema(args: argparse.Namespace) -> int:
    from agent_link.protocol.schema import stale_docs, write_docs  # needs PyYAML: imported only here

    docs: Path = args.docs
    if args.check:
        stale = stale_docs(docs)
        for rel in stale:
            print(f"out of date: {docs / rel} (run: robot-face schema)", file=sys.stderr)
        return 1 if stale else 0
    for path in write_docs(docs):
        print(f"wrote {path}")
    return 0


def _bench_outbox(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        box = Outbox(Path(tmp) / "outbox.db", "bench", 1)
        start = time.perf_counter()
        for _ in range(args.events):
            box.append(TranscriptBody(utterance="u-1", text="what is the weather like", confidence=0.9,
                       language="en", source="voice", audio_ms=1800, decode_ms=400, ts=time.time()))  # fmt: skip
        appended = time.perf_counter() - start
        start = time.perf_counter()
        while batch := box.pending(50):
            for key, _ in batch:
                box.ack(key)
        acked = time.perf_counter() - start
        box.close()
    payload = (
        b'{"v":1,"type":"say","id":"c-1","say":"r-1","text":"Hello there, nice to see you.","final":true}'
    )
    n = 20_000
    start = time.perf_counter()
    for _ in range(n):
        decode_command(payload)
    decoded = time.perf_counter() - start
    print(f"outbox append (fsync'd): {appended / args.events * 1000:.2f} ms/event ({args.events} events)")
    print(f"outbox pending+ack:      {acked / args.events * 1000:.2f} ms/event")
    print(f"decode_command:          {decoded / n * 1e6:.1f} µs/command")
    return 0
