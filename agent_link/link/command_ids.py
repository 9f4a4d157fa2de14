"""Remembered command ids, so a duplicate command is executed once, also across restarts."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

REOPEN_INTERVAL_S = 5.0
"""After a write failed (a read-only state directory), how often the database is opened again (s)."""


class CommandIdStore:
    """The last ``capacity`` command ids, in memory and in SQLite (oldest evicted first).

    A database error is logged and the store keeps working from memory (the daemon keeps serving):
    the ids remembered meanwhile are written once the database can be written again (``fault`` says
    why until then; ``retry`` tries again). A database that cannot be opened for writing at start
    (a read-only state directory) is read read-only, so the ids of earlier boots still count.
    """

    def __init__(self, path: str | Path, capacity: int = 10_000) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.path = Path(path)
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._unsaved: list[str] = []
        """Ids remembered while the database could not be written, saved once it can again."""
        self.fault: str | None = None
        """Why the ids cannot be written now (None: they are on disk)."""
        self._retry_at = 0.0
        self._existed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = self._connect()
            rows = db.execute("SELECT id FROM ids ORDER BY n DESC LIMIT ?", (capacity,)).fetchall()
            self._db = db
            self._existed = True
        except (sqlite3.Error, OSError) as err:
            self._existed = self.path.exists()
            self.fault = f"command id store {self.path} cannot be written: {err}"
            self._retry_at = time.monotonic() + REOPEN_INTERVAL_S
            rows = _read_only(self.path, capacity)
            _LOGGER.error(
                "Command id store %s unusable (%s): %d ids read, new ones remembered in memory and "
                "saved once it can be written",
                self.path,
                err,
                len(rows),
            )
        for (command_id,) in reversed(rows):
            self._ids[command_id] = None

    def _connect(self) -> sqlite3.Connection:
        """The database, made if it was not there at start; one that was is not made anew (on what
        lies beneath an unmounted filesystem, say): then it fails until the file is back."""
        if self._existed:
            uri = f"{self.path.absolute().as_uri()}?mode=rw"
            db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        else:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE IF NOT EXISTS ids (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE)")
        return db

    def _save_unsaved(self) -> None:
        """After failed writes: open the database again (at most every ``REOPEN_INTERVAL_S``) and
        write the ids remembered meanwhile (under the lock)."""
        now = time.monotonic()
        if now < self._retry_at:
            return
        self._retry_at = now + REOPEN_INTERVAL_S
        try:
            db = self._connect()
            db.executemany("INSERT OR IGNORE INTO ids (id) VALUES (?)", [(i,) for i in self._unsaved])
        except sqlite3.Error as err:
            _LOGGER.debug("command id store %s still cannot be written: %s", self.path, err)
            return
        if self._db is not None:
            self._db.close()
        self._db = db
        _LOGGER.warning(
            "Command id store %s can be written again (%d ids saved)", self.path, len(self._unsaved)
        )
        self._unsaved = []
        self.fault = None

    def retry(self) -> bool:
        """While the ids cannot be written, try again (at most every ``REOPEN_INTERVAL_S``); True when
        they are on disk."""
        with self._lock:
            if self.fault is not None:
                self._save_unsaved()
            return self.fault is None

    def seen(self, command_id: str) -> bool:
        """True if ``command_id`` was remembered (and not yet evicted)."""
        with self._lock:
            return command_id in self._ids

    def remember(self, command_id: str) -> None:
        """Remember ``command_id``; evict the oldest beyond ``capacity``."""
        with self._lock:
            if command_id in self._ids:
                return
            self._ids[command_id] = None
            while len(self._ids) > self.capacity:
                self._ids.popitem(last=False)
            if self.fault is not None:  # writes failed before: remember this one too, try the disk again
                self._unsaved = [*self._unsaved[-self.capacity + 1 :], command_id]
                self._save_unsaved()
                return
            if self._db is None:  # closed
                return
            try:
                self._db.execute("INSERT OR IGNORE INTO ids (id) VALUES (?)", (command_id,))
                cur = self._db.execute("SELECT MAX(n) FROM ids").fetchone()
                if cur and cur[0] is not None and cur[0] % 100 == 0:
                    self._db.execute("DELETE FROM ids WHERE n <= ?", (int(cur[0]) - self.capacity,))
            except sqlite3.Error as err:
                _LOGGER.error(
                    "Cannot persist command id %r in %s: %s (kept in memory, saved once it can be written)",
                    command_id,
                    self.path,
                    err,
                )
                self._unsaved = [command_id]
                self.fault = f"command id store {self.path} cannot be written: {err}"
                self._retry_at = time.monotonic() + REOPEN_INTERVAL_S

    def remember_all(self, command_ids: Sequence[str]) -> None:
        """:meth:`remember` each of ``command_ids`` in one transaction: one commit (one fsync) for
        commands that arrived together. Durable when it returns, unless the database cannot be
        written (then they are kept like an id whose write failed)."""
        with self._lock:
            db = None if self.fault is not None else self._db
            if db is not None:
                try:
                    db.execute("BEGIN IMMEDIATE")
                except sqlite3.Error:
                    db = None  # each remember() then writes (or fails) on its own
        for command_id in command_ids:
            self.remember(command_id)
        if db is None:
            return
        with self._lock:
            try:
                db.execute("COMMIT")
            except sqlite3.Error as err:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                _LOGGER.error(
                    "Cannot persist command ids %s in %s: %s (kept in memory, saved once it can be written)",
                    ", ".join(repr(i) for i in command_ids),
                    self.path,
                    err,
                )
                self._unsaved = [*self._unsaved, *command_ids][-self.capacity :]
                self.fault = f"command id store {self.path} cannot be written: {err}"
                self._retry_at = time.monotonic() + REOPEN_INTERVAL_S

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _read_only(path: Path, capacity: int) -> list[tuple[str]]:
    """The newest ids of a database that cannot be opened for writing ([] if it cannot be read)."""
    for query in ("mode=ro", "immutable=1"):  # immutable: no -shm can be made beside a WAL file
        try:
            with contextlib.closing(sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True)) as db:
                rows = db.execute("SELECT id FROM ids ORDER BY n DESC LIMIT ?", (capacity,)).fetchall()
        except sqlite3.Error as err:
            _LOGGER.debug("command id store %s not readable with %s: %s", path, query, err)
            continue
        return [(str(r[0]),) for r in rows]
    return []
