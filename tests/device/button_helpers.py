"""Helpers for button backend tests: collect presses delivered to the asyncio loop."""

from __future__ import annotations

import asyncio

from device.buttons.press import ButtonPress


class PressCollector:
    """A callback that records presses on the loop thread and lets a test await them."""

    def __init__(self) -> None:
        self.presses: list[ButtonPress] = []
        self._event = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        self.threads: set[int] = set()

    def __call__(self, press: ButtonPress) -> None:
        import threading

        self.threads.add(threading.get_ident())
        self.presses.append(press)
        self._event.set()

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[ButtonPress]:
        """Wait until ``count`` presses arrived (or time out), return them all."""
        async with asyncio.timeout(timeout):
            while len(self.presses) < count:
                self._event.clear()
                await self._event.wait()
        return self.presses

    async def settle(self, seconds: float) -> list[ButtonPress]:
        """Let ``seconds`` pass, then return everything received."""
        await asyncio.sleep(seconds)
        return self.presses
