"""CLI: ``robot-face face snapshot|docs|serve|terminal`` and ``robot-face bench face``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .state import EMOTIONS, FaceState

if TYPE_CHECKING:
    from .controller import FaceController

_LOGGER = logging.getLogger(__name__)

DOC_SHOTS: tuple[tuple[str, str, str, str | None], ...] = (
    ("asleep", "asleep", "neutral", None),
    ("idle", "idle", "neutral", None),
    ("listening", "listening", "neutral", None),
    ("thinking", "thinking", "neutral", None),
    ("speaking", "speaking", "neutral", "aa"),
    ("offline", "offline", "neutral", None),
    ("error", "error", "neutral", None),
    *((f"expression-{e}", "speaking" if e != "thinking" else "idle", e, None) for e in EMOTIONS),
)
"""(file stem, state, expression, viseme) of each screenshot written by ``face docs``."""


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add the ``face`` subcommand and ``bench face``."""
    face = sub.add_parser("face", help="preview the face, write snapshots")
    fsub = face.add_subparsers(dest="face_command", required=True)

    snap = fsub.add_parser("snapshot", help="write a PNG of a state or expression")
    snap.add_argument("--state", default="idle", help="a state or an emotion name (default idle)")
    snap.add_argument("--expression", default=None, help=f"one of {', '.join(EMOTIONS)}")
    snap.add_argument("--viseme", default=None, help="mouth shape (aa ee oo mbp fv l s rest)")
    snap.add_argument("--size", default="480x320", help="WIDTHxHEIGHT in pixels (default 480x320)")
    snap.add_argument("--out", required=True, help="PNG file to write")
    snap.set_defaults(func=_snapshot)

    docs = fsub.add_parser("docs", help="write screenshots of every state and expression")
    docs.add_argument("--out", default="docs/img", help="folder (default docs/img)")
    docs.add_argument("--size", default="480x320", help="WIDTHxHEIGHT (default 480x320)")
    docs.set_defaults(func=_docs)

    serve = fsub.add_parser("serve", help="serve the browser face and tour every state")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--text-box", action="store_true", help="show the typed-text box")
    serve.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0 = never)")
    serve.set_defaults(func=_serve)

    term = fsub.add_parser("terminal", help="draw the face in this terminal and tour every state")
    term.add_argument("--width", type=int, default=48, help="width in character cells (default 48)")
    term.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0 = never)")
    term.set_defaults(func=_terminal)

    b = bench.add_parser("face", help="face model cost and renderer fps / CPU at 30 fps")
    b.add_argument("--seconds", type=float, default=3.0, help="paced run per renderer (default 3)")
    b.add_argument(
        "--renderers", default="terminal,pygame,browser", help="comma list (default terminal,pygame,browser)"
    )
    b.set_defaults(func=_bench)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--size must be WIDTHxHEIGHT, got {text!r}") from None
    if w < 8 or h < 8 or w > 8000 or h > 8000:
        raise SystemExit(f"--size out of range: {text!r}")
    return w, h


def _snapshot(args: argparse.Namespace) -> int:
    from .renderers.png import render_png
    from .snapshot import still_params

    state, expression = args.state.lower(), (args.expression or "neutral").lower()
    if state in EMOTIONS and state not in {s.value for s in FaceState}:
        state, expression = "idle", state
    if state not in {s.value for s in FaceState}:
        print(
            f"unknown state {args.state!r}; states: {', '.join(s.value for s in FaceState)}; "
            f"emotions: {', '.join(EMOTIONS)}"
        )
        return 2
    try:
        params = still_params(state, expression, viseme=args.viseme)
    except ValueError as exc:
        print(exc)
        return 2
    path = render_png(params, args.out, _size(args.size))
    print(f"wrote {path} ({state}, {expression})")
    return 0


def _docs(args: argparse.Namespace) -> int:
    from .renderers.png import render_png
    from .snapshot import still_params

    size = _size(args.size)
    for stem, state, expression, viseme in DOC_SHOTS:
        path = render_png(
            still_params(state, expression, viseme=viseme), Path(args.out) / f"face-{stem}.png", size
        )
        print(f"wrote {path}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .controller import FaceController
    from .settings import FaceSettings
    from .web import FaceWebServer

    settings = replace(
        FaceSettings(), browser_host=args.host, browser_port=args.port, browser_text_box=args.text_box
    )

    async def main() -> None:
        server = FaceWebServer(
            settings,
            on_tap=lambda source: print(f"tap ({source})"),
            on_text=lambda text: print(f"typed: {text}"),
        )
        await server.start()
        print(f"face page at {server.url} (Ctrl-C to stop)")
        controller = FaceController(settings, [server])
        server.on_watched = controller.wake
        try:
            await _tour(controller, args.seconds)
        finally:
            await server.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


async def _tour(controller: FaceController, seconds: float) -> None:
    """Animate every state and expression for ``seconds`` (0: until cancelled)."""
    from .demo import tour

    tasks = [asyncio.create_task(controller.run()), asyncio.create_task(tour(controller))]
    try:
        if seconds > 0:
            await asyncio.sleep(seconds)
        else:
            await asyncio.Event().wait()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _terminal(args: argparse.Namespace) -> int:
    from .controller import FaceController
    from .renderers.terminal import TerminalRenderer
    from .settings import FaceSettings

    async def main() -> None:
        controller = FaceController(FaceSettings(), [TerminalRenderer(width=args.width)])
        await _tour(controller, args.seconds)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    which = tuple(w.strip() for w in args.renderers.split(",") if w.strip())
    return run_bench(args.seconds, which)
