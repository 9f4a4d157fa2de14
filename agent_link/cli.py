"""``robot-face schema`` (regenerate the protocol docs) and ``robot-face bench outbox``."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
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
    b.add_argument(
        "--commit-ms",
        type=float,
        default=0.0,
        help="hold each of the writer's commits this much longer, as a slow SD card does (default 0)",
    )
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
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        box = Outbox(Path(tmp) / "outbox.db", "bench", 1)
        if args.commit_ms > 0:
            delay = args.commit_ms / 1000
            box._db.set_trace_callback(lambda sql: time.sleep(delay) if sql == "COMMIT" else None)
        own = _pending_under_commits(box, box.pending)
        locked = _pending_under_commits(box, box._pending_locked)
        box.close()
    slower = f", each commit held {args.commit_ms:g} ms longer" if args.commit_ms > 0 else ""
    print(
        f"pending() while a writer commits batches of 10 back to back{slower} (the link lists on the loop):"
    )
    print(f"  {'':28}{'median ms':>10}{'p99 ms':>9}{'max ms':>9}")
    for name, waits in (("own reader (the link's)", own), ("under the writer's lock", locked)):
        p99 = statistics.quantiles(waits, n=100)[98]
        print(f"  {name:28}{statistics.median(waits):>10.2f}{p99:>9.2f}{max(waits):>9.2f}")
    return 0


def _pending_under_commits(box: Outbox, pending: Callable[[], object], reads: int = 300) -> list[float]:
    """Milliseconds each of ``reads`` calls of ``pending`` took while another thread kept committing
    (fsync'd batches of 10, acknowledged again so the table stays small)."""
    body = TranscriptBody(utterance="u-1", text="what is the weather like", confidence=0.9,
                          language="en", source="voice", audio_ms=1800, decode_ms=400, ts=0.0)  # fmt: skip
    done = threading.Event()

    def writer() -> None:
        while not done.is_set():
            box.append_all([body] * 10)
            for key, _ in box._pending_locked(100)[:-10]:
                box.ack(key)

    thread = threading.Thread(target=writer, name="bench: outbox writer")
    thread.start()
    waits = []
    try:
        for _ in range(reads):
            start = time.perf_counter()
            pending()
            waits.append((time.perf_counter() - start) * 1000)
            time.sleep(0.002)
    finally:
        done.set()
        thread.join()
    return waits
