"""Browser face: an aiohttp server that serves the face page and pushes frames over a WebSocket.

Server -> page: ``{"type": "hello", "text_box": bool}`` once, then ``{"type": "frame", "params": {...},
"ops": [...]}`` per frame (``ops`` are ``geometry.DrawOp.to_list()`` in face units).
Page -> server: ``{"type": "tap"}`` (a click/touch on the face) and ``{"type": "text", "text": "..."}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

from aiohttp import WSMsgType, web

from .geometry import face_ops
from .params import FaceParams
from .settings import FaceSettings

_LOGGER = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
"""Where face.html / face.js live."""
MAX_TEXT = 2000
"""Longest typed text accepted from the page, in characters."""


def frame_message(params: FaceParams) -> str:
    """The JSON frame message for ``params``."""
    return json.dumps(
        {"type": "frame", "params": params.to_dict(), "ops": [op.to_list() for op in face_ops(params)]},
        separators=(",", ":"),
    )


class FaceWebServer:
    """Serves the face page on ``settings.browser_host:browser_port`` and streams frames to it."""

    def __init__(
        self,
        settings: FaceSettings,
        on_tap: Callable[[str], None],
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._on_tap = on_tap
        self._on_text = on_text
        self._runner: web.AppRunner | None = None
        self._port = settings.browser_port
        self._latest: FaceParams | None = None
        self._latest_json: str | None = None
        self._version = 0
        self._changed = asyncio.Event()
        self._clients: set[web.WebSocketResponse] = set()
        self.on_watched: Callable[[], None] = lambda: None
        """Called when the first page connects (``FaceController.wake``: back to the full rate now)."""

    @property
    def url(self) -> str:
        """The page's address (valid after ``start``; the real port when 0 was configured)."""
        return f"http://{self._settings.browser_host}:{self._port}/"

    @property
    def watched(self) -> bool:
        """Renderer protocol: whether a page is connected (with none, frames go nowhere)."""
        return bool(self._clients)

    @property
    def client_count(self) -> int:
        """Pages connected right now."""
        return len(self._clients)

    async def start(self) -> None:
        """Start serving; raises OSError with the address if the port is taken."""
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/ws", self._websocket)
        app.router.add_static("/static/", STATIC_DIR)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._settings.browser_host, self._settings.browser_port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise OSError(
                exc.errno, f"face page cannot listen on {self._settings.browser_host}:{self._port}: {exc}"
            ) from exc
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self._port = server.sockets[0].getsockname()[1]
        _LOGGER.info("face page at %s", self.url)

    async def stop(self) -> None:
        """Close every page connection and stop serving."""
        for ws in list(self._clients):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def render(self, params: FaceParams) -> None:
        """Push ``params`` to every connected page (latest frame wins; never blocks)."""
        self._latest = params
        self._latest_json = None
        self._version += 1
        self._changed.set()

    def close(self) -> None:
        """Renderer protocol: nothing to do synchronously (use ``await stop()``)."""

    def _message(self) -> str | None:
        if self._latest is None:
            return None
        if self._latest_json is None:
            self._latest_json = frame_message(self._latest)
        return self._latest_json

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC_DIR / "face.html")

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=10.0, max_msg_size=64 * 1024)
        await ws.prepare(request)
        self._clients.add(ws)
        _LOGGER.info("face page connected (%d open)", len(self._clients))
        if len(self._clients) == 1:
            self.on_watched()
        sender = asyncio.create_task(self._send_frames(ws))
        try:
            await ws.send_str(json.dumps({"type": "hello", "text_box": self._settings.browser_text_box}))
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._handle(msg.data)
                elif msg.type == WSMsgType.ERROR:
                    _LOGGER.warning("face page connection error: %s", ws.exception())
        finally:
            sender.cancel()
            self._clients.discard(ws)
            _LOGGER.info("face page disconnected (%d open)", len(self._clients))
        return ws

    async def _send_frames(self, ws: web.WebSocketResponse) -> None:
        sent = -1
        try:
            while not ws.closed:
                if sent == self._version:
                    self._changed.clear()
                    await self._changed.wait()
                    continue
                sent = self._version
                text = self._message()
                if text is not None:
                    await ws.send_str(text)
        except (ConnectionError, RuntimeError) as exc:
            _LOGGER.debug("face page send stopped: %s", exc)

    def _handle(self, data: str) -> None:
        try:
            msg = json.loads(data)
        except ValueError:
            _LOGGER.warning("face page sent invalid JSON: %.80r", data)
            return
        kind = msg.get("type") if isinstance(msg, dict) else None
        try:
            if kind == "tap":
                self._on_tap("screen")
            elif kind == "text" and self._on_text is not None:
                text = str(msg.get("text", "")).strip()[:MAX_TEXT]
                if text:
                    self._on_text(text)
            else:
                _LOGGER.warning("face page sent unknown message %.80r", data)
        except Exception:
            _LOGGER.exception("face page callback failed for %s", kind)
