"""The orchestrator's inbox: control goes ahead of data, every input stamped with its arrival.

Two lanes. Control (``device.core.inputs.is_control``: a tap, ``stop``, ``sleep``, ``sleep_allowed``) is
stepped before any data (say chunks, audio events, typed text, timers, playback events...) queued ahead
of it, so a stop or a tap does not wait behind a backlog. Each put gets an arrival number; a control
item also leaves a ``Reached`` marker in the data lane, at its place in arrival order. The core judges
each data item by what was in force when it arrived (``device.core.early``), so the contract's outcomes
are those of arrival order. All methods are called on the event loop.
"""

from __future__ import annotations

import asyncio
from collections import deque

from device.core.inputs import DeviceInput, Reached, Stamped, is_control


class _End:
    """The loop ends here, after everything put before it."""


class Inbox:
    """Control lane ahead of data lane. ``control_first=False``: one lane in arrival order, each marker
    right behind its control item (the plain FIFO, kept only for ``robot-face bench control`` to measure
    against)."""

    def __init__(self, *, control_first: bool = True) -> None:
        self.control_first = control_first
        self._control: deque[Stamped] = deque()
        self._data: deque[Stamped | Reached | _End] = deque()
        self._arrivals = 0
        self._ready = asyncio.Event()

    def put(self, event: DeviceInput) -> int:
        """Queue an input; a control item goes ahead of the data queued so far: how many items it
        overtakes (0 for data, and in the plain FIFO)."""
        self._arrivals += 1
        stamped = Stamped(self._arrivals, event)
        ahead = 0
        if not is_control(event):
            self._data.append(stamped)
        elif self.control_first:
            ahead = len(self._data)
            self._control.append(stamped)
            self._data.append(Reached(self._arrivals, event.ts))
        else:
            self._data.extend((stamped, Reached(self._arrivals, event.ts)))
        self._ready.set()
        return ahead

    def end(self) -> None:
        """Let ``get`` return None once everything put before has been returned."""
        self._data.append(_End())
        self._ready.set()

    def get_nowait(self) -> Stamped | Reached | None:
        """The oldest control item, else the oldest data item; None at the end. Raises ``IndexError``
        when empty."""
        if self._control:
            return self._control.popleft()
        item = self._data.popleft()
        return None if isinstance(item, _End) else item

    async def get(self) -> Stamped | Reached | None:
        """Wait for the next input (``get_nowait``'s order); None once ``end`` is reached."""
        while not (self._control or self._data):
            self._ready.clear()
            await self._ready.wait()
        return self.get_nowait()

    def qsize(self) -> int:
        """How many items wait (markers included)."""
        return len(self._control) + len(self._data)

    def empty(self) -> bool:
        """Nothing waits."""
        return not (self._control or self._data)
