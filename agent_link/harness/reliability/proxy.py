"""A TCP proxy that can stall: a network partition without a clean disconnect.

While stalled it stops forwarding bytes in both directions and closes nothing, like a cable pulled
somewhere between device and broker: neither side sees a FIN or RST, only silence (the broker's
keepalive expiry and the client's missing PINGRESP are what notice). ``resume()`` drops the
connections that were frozen (their TCP state is long dead on a real network) and forwards new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

_LOGGER = logging.getLogger(__name__)


class StallingProxy:
    """``127.0.0.1:<port>`` → ``target``; ``stall()`` freezes the path, ``resume()`` restores it."""

    def __init__(self, target_host: str, target_port: int, listen_port: int = 0) -> None:
        self.target = (target_host, target_port)
        self._listen_port = listen_port
        self.port = 0
        """The port the proxy listens on (after :meth:`start`)."""
        self._server: asyncio.Server | None = None
        self._open = asyncio.Event()
        self._open.set()
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0
        """Connections accepted so far."""
        self.stalls = 0
        """How many times the path was stalled."""

    @property
    def stalled(self) -> bool:
        """True while nothing is forwarded."""
        return not self._open.is_set()

    async def start(self) -> None:
        """Listen on 127.0.0.1."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self._listen_port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def stall(self) -> None:
        """Stop forwarding bytes (connections stay open; new ones are accepted but go nowhere)."""
        if not self.stalled:
            self.stalls += 1
        self._open.clear()
        _LOGGER.info("proxy :%d stalled", self.port)

    def resume(self) -> None:
        """Drop the frozen connections and forward again."""
        for client, upstream in list(self._links):
            for writer in (client, upstream):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
        self._links.clear()
        self._open.set()
        _LOGGER.info("proxy :%d resumed", self.port)

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        self.resume()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await self._open.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self._links.add(pair)
        tasks = [
            asyncio.create_task(self._pump(reader, up_writer)),
            asyncio.create_task(self._pump(up_reader, writer)),
        ]
        self._tasks.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not self.stalled:  # a frozen path closes nothing; resume() aborts it
                for w in (writer, up_writer):
                    w.transport.abort()
            for task in tasks:
                task.cancel()
            self._tasks.difference_update(tasks)
            self._links.discard(pair)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                if self.stalled:
                    await self._wait_forever_or_resume()
                return
            if self.stalled:
                await self._wait_forever_or_resume()
                return  # bytes read during a stall are lost with the connection
            writer.write(data)
            await writer.drain()

    async def _wait_forever_or_resume(self) -> None:
        await self._open.wait()
