"""``robot-face schema``: (re)generate docs/asyncapi.yaml and docs/schemas/*.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_link.schema import stale_docs, write_docs

DEFAULT_DOCS = Path(__file__).resolve().parent.parent / "docs"


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add the ``schema`` subcommand."""
    p = sub.add_parser("schema", help="generate the AsyncAPI document and JSON Schemas of protocol v1")
    p.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="docs directory (default: the repo's)")
    p.add_argument("--check", action="store_true", help="only check they are up to date (exit 1 if not)")
    p.set_defaults(func=_schema)


def _schema(args: argparse.Namespace) -> int:
    docs: Path = args.docs
    if args.check:
        stale = stale_docs(docs)
        for rel in stale:
            print(f"out of date: {docs / rel} (run: robot-face schema)", file=sys.stderr)
        return 1 if stale else 0
    for path in write_docs(docs):
        print(f"wrote {path}")
    return 0
