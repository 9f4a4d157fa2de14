"""Durable, ordered event outbox: events are written to disk before they are published."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from pathlib import Path

from agent_link.protocol.event_messages import Event, EventBody

_LOGGER = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    boot INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    payload BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS boot_seq (
    boot INTEGER PRIMARY KEY,
    last_seq INTEGER NOT NULL
);
"""


class OutboxError(RuntimeError):
    """The outbox could not read or write its database (disk full, I/O error, corrupt file)."""


class Outbox:
    """Events waiting for the broker's acknowledgement, in SQLite (WAL, synchronous=FULL).

    ``append`` assigns ``seq`` (1, 2, 3, ... within this ``boot``; it continues if the outbox is
    reopened with the same boot) and a stable id ``{device}-{boot}-{seq}``, validates the event and
    commits it to disk before returning. ``pending`` lists unacknowledged events of every boot,
    oldest first; ``ack`` deletes one. At most ``max_events`` are kept: beyond that the oldest are
    dropped (and logged), so a long outage cannot fill the disk.
    """

    def __init__(self, path: str | Path, device_id: str, boot: int, max_events: int = 100_000) -> None:
        self.path = Path(path)
        self.device_id = device_id
        self.boot = boot
        self.max_events = max_events
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT last_seq FROM boot_seq WHERE boot = ?", (boot,)).fetchone()
            (count,) = self._db.execute("SELECT COUNT(*) FROM events").fetchone()
        except (sqlite3.Error, OSError) as err:
            raise OutboxError(f"cannot open outbox {self.path}: {err}") from err
        self._last_seq = int(row[0]) if row else 0
        self._count = int(count)

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last appended event of this boot (0 if none)."""
        return self._last_seq

    def append(self, body: EventBody) -> Event:
        """Put ``body`` in its envelope (numbered), durably store it; return the event.

        Raises :class:`OutboxError` if it cannot be stored (then the ``seq`` is not consumed).
        """
        with self._lock:
            seq = self._last_seq + 1
            event = body.to_event(id=f"{self.device_id}-{self.boot}-{seq}", boot=self.boot, seq=seq)
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.execute(
                        "INSERT INTO events (id, boot, seq, payload) VALUES (?, ?, ?, ?)",
                        (event.id, self.boot, seq, event.encode()),
                    )
                    self._db.execute(
                        "INSERT OR REPLACE INTO boot_seq (boot, last_seq) VALUES (?, ?)", (self.boot, seq)
                    )
                    dropped = self._trim(self._count + 1)
                    self._db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as err:
                raise OutboxError(f"cannot store {event.type} event in outbox {self.path}: {err}") from err
            self._last_seq = seq
            self._count += 1 - dropped
        if dropped:
            _LOGGER.warning("Outbox full (%d events): dropped the %d oldest", self.max_events, dropped)
        return event

    def _trim(self, count: int) -> int:
        excess = count - self.max_events
        if excess <= 0:
            return 0
        self._db.execute(
            "DELETE FROM events WHERE key IN (SELECT key FROM events ORDER BY key LIMIT ?)", (excess,)
        )
        return excess

    def pending(self, limit: int = 100) -> list[tuple[int, bytes]]:
        """Up to ``limit`` unacknowledged ``(key, payload)`` pairs, oldest first (all boots)."""
        with self._lock:
            try:
                rows = self._db.execute(
                    "SELECT key, payload FROM events ORDER BY key LIMIT ?", (limit,)
                ).fetchall()
            except sqlite3.Error as err:
                raise OutboxError(f"cannot read outbox {self.path}: {err}") from err
        return [(int(key), bytes(payload)) for key, payload in rows]

    def ack(self, key: int) -> None:
        """The broker acknowledged event ``key``: delete it."""
        with self._lock:
            try:
                deleted = self._db.execute("DELETE FROM events WHERE key = ?", (key,)).rowcount
            except sqlite3.Error as err:
                raise OutboxError(f"cannot delete event {key} from outbox {self.path}: {err}") from err
            self._count -= max(deleted, 0)

    def __len__(self) -> int:
        """Events not yet acknowledged."""
        return self._count

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
