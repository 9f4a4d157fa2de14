"""Watches the state directory's health: tells the core when it stops taking writes and when it
takes them again, and retries what was kept in memory meanwhile (the outbox, the command ids, the
settings, the boot counter, the open records)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from device.core.inputs import DeviceInput, StorageProblem

_LOGGER = logging.getLogger(__name__)

WATCH_INTERVAL_S = 1.0
"""How often the stores are asked whether they can write (each retries at its own pace), in seconds."""


class Store(Protocol):
    """A store that keeps what it cannot write in memory: ``fault`` says why, ``retry`` writes it."""

    @property
    def fault(self) -> str | None: ...

    def retry(self) -> bool: ...


class StorageWatch:
    """``run`` puts a ``StorageProblem`` each time the stores go from all writable to not, and back."""

    def __init__(
        self, stores: list[Store], put: Callable[[DeviceInput], None], interval_s: float = WATCH_INTERVAL_S
    ) -> None:
        self.stores = stores
        self.put = put
        self.interval_s = interval_s
        self.fault: str | None = None
        """The fault last told to the core (None: everything is written)."""

    def check(self) -> str | None:
        """Retry the stores that cannot write (blocking disk I/O: off the loop); the first fault left."""
        faults = []
        for store in self.stores:
            if store.fault is not None:
                store.retry()
            if store.fault is not None:
                faults.append(store.fault)
        return faults[0] if faults else None

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            fault = await asyncio.to_thread(self.check)
            if (fault is None) != (self.fault is None):
                detail = fault if fault is not None else f"written again after: {self.fault}"
                self.put(StorageProblem(fault is None, detail, time.time()))
            self.fault = fault
            await asyncio.sleep(self.interval_s)
