"""Durable, ordered event outbox: events are written to disk before they are published."""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


READ_ONLY_CODES = (8, 10, 14)
"""SQLite primary result codes of a storage that stopped taking writes: SQLITE_READONLY, SQLITE_IOERR,
SQLITE_CANTOPEN (what a filesystem the kernel remounted read-only after an error gives)."""
RECOVERY_INTERVAL_S = 2.0
"""While the storage is read-only, how often a write tries the database again (seconds)."""


def _read_only(path: Path, boot: int) -> tuple[sqlite3.Connection, list[Any], int] | None:
    """The database opened read-only, its events and the last ``seq`` of ``boot``; None if unreadable."""
    for query in ("mode=ro", "immutable=1"):  # immutable: no -shm can be made beside a WAL file
        try:
            db = sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True, check_same_thread=False)
        except sqlite3.Error as err:
            _LOGGER.debug("outbox %s not readable with %s: %s", path, query, err)
            continue
        try:
            rows = db.execute("SELECT key, id, seq, payload FROM events ORDER BY key").fetchall()
            found = db.execute("SELECT last_seq FROM boot_seq WHERE boot = ?", (boot,)).fetchone()
        except sqlite3.Error as err:
            _LOGGER.debug("outbox %s not readable with %s: %s", path, query, err)
            db.close()
            continue
        return db, rows, int(found[0]) if found else 0
    return None


def _opening_fault(err: BaseException, path: Path) -> bool:
    """Opening the database failed because its storage takes no writes (not a corrupt file, not a
    directory in its place)."""
    if path.is_dir():
        return False
    if isinstance(err, sqlite3.Error):
        return is_storage_fault(err)
    return isinstance(err, OSError) and err.errno in (errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM)


def is_storage_fault(err: sqlite3.Error) -> bool:
    """The database cannot be written at all (read-only or failing storage), not a full disk."""
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in READ_ONLY_CODES
    text = str(err).lower()
    return "readonly" in text or "read-only" in text or "disk i/o error" in text


@dataclass
class _Held:
    """An event kept in memory while the database cannot be written (``stored``: it is on disk)."""

    key: int
    event_id: str
    seq: int
    payload: bytes
    stored: bool


class Outbox:
    """Events waiting for the broker's acknowledgement, in SQLite (WAL, synchronous=FULL).

    ``append`` assigns ``seq`` (1, 2, 3, ... within this ``boot``; it continues if the outbox is
    reopened with the same boot) and a stable id ``{device}-{boot}-{seq}``, validates the event and
    commits it to disk before returning (``append_all``: a batch in one commit). ``pending`` lists unacknowledged events of every boot,
    oldest first; ``ack`` deletes one. At most ``max_events`` are kept: beyond that the oldest are
    dropped (and logged), so a long outage cannot fill the disk.
    """

    def __init__(self, path: str | Path, device_id: str, boot: int, max_events: int = 100_000) -> None:
        self.path = Path(path)
        self.device_id = device_id
        self.boot = boot
        self.max_events = max_events
        self._lock = threading.Lock()
        # pending() reads through a connection of its own, never waiting for a commit (the link
        # calls it on the event loop): WAL gives it the last committed snapshot, and a commit with
        # synchronous=FULL is visible to other connections only once it is on disk.
        self._read_lock = threading.Lock()
        self._reader: sqlite3.Connection | None = None
        self._reader_of = -1
        self._generation = 0
        """Bumped whenever ``_db`` is replaced (a recovery): a reader of an older one is reopened."""
        # Storage faults (the state directory turned read-only): events are served from memory.
        self.fault: str | None = None
        """Why the database cannot be written now (None: it can)."""
        self._held: list[_Held] = []
        self._acked_on_disk: list[int] = []
        self._next_memory_key = -1
        self._renamed: dict[int, int] = {}
        self._last_try = 0.0
        self._existed = self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT last_seq FROM boot_seq WHERE boot = ?", (boot,)).fetchone()
            (count,) = self._db.execute("SELECT COUNT(*) FROM events").fetchone()
        except (sqlite3.Error, OSError) as err:
            if not _opening_fault(err, self.path):
                raise OutboxError(f"cannot open outbox {self.path}: {err}") from err
            self._open_read_only(err)
            return
        self._existed = True
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
        return self.append_all([body])[0]

    def append_all(self, bodies: Sequence[EventBody]) -> list[Event]:
        """:meth:`append` each of ``bodies``, numbered in order, stored in one transaction (group
        commit: one fsync for the batch); return the events.

        All or nothing: :class:`OutboxError` if they cannot be stored (then no ``seq`` is consumed).
        While the storage takes no writes they are kept in memory, like a single event.
        :meth:`pending` reads through its own connection and sees the batch once it is on disk (the
        commit), without waiting for it.
        """
        with self._lock:
            first = self._last_seq + 1
            events = [
                body.to_event(id=f"{self.device_id}-{self.boot}-{seq}", boot=self.boot, seq=seq)
                for seq, body in enumerate(bodies, start=first)
            ]
            if not events:
                return events
            if self.fault is not None and not self._recover():
                return [self._hold(event) for event in events]
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT INTO events (id, boot, seq, payload) VALUES (?, ?, ?, ?)",
                        [(e.id, self.boot, e.seq, e.encode()) for e in events],
                    )
                    self._db.execute(
                        "INSERT OR REPLACE INTO boot_seq (boot, last_seq) VALUES (?, ?)",
                        (self.boot, events[-1].seq),
                    )
                    dropped = self._trim(self._count + len(events))
                    self._db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as err:
                if is_storage_fault(err):
                    self._enter_fault(err)
                    return [self._hold(event) for event in events]
                what = events[0].type if len(events) == 1 else f"{len(events)} events"
                raise OutboxError(f"cannot store {what} in outbox {self.path}: {err}") from err
            self._last_seq = events[-1].seq
            self._count += len(events) - dropped
        if dropped:
            _LOGGER.warning("Outbox full (%d events): dropped the %d oldest", self.max_events, dropped)
        return events

    def _trim(self, count: int) -> int:
        excess = count - self.max_events
        if excess <= 0:
            return 0
        self._db.execute(
            "DELETE FROM events WHERE key IN (SELECT key FROM events ORDER BY key LIMIT ?)", (excess,)
        )
        return excess

    def pending(self, limit: int = 100) -> list[tuple[int, bytes]]:
        """Up to ``limit`` unacknowledged ``(key, payload)`` pairs, oldest first (all boots).

        Only what is on disk: a batch being committed meanwhile is not seen until its commit is
        (read from a connection of its own, without waiting for the writer's lock: the fsync of a
        slow SD card must not hold up the event loop). While the storage takes no writes (or the
        read fails) it is read under the lock, with the events kept in memory."""
        if self.fault is None:
            with self._read_lock:
                rows = self._read(limit)
            if rows is not None:
                return rows
        return self._pending_locked(limit)

    def _read(self, limit: int) -> list[tuple[int, bytes]] | None:
        """The oldest ``limit`` committed events through the reader (None: it cannot read now)."""
        generation = self._generation
        try:
            if self._reader is None or self._reader_of != generation:
                self._close_reader()
                uri = f"{self.path.absolute().as_uri()}?mode=ro"
                self._reader = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
                self._reader_of = generation
            rows = self._reader.execute("SELECT key, payload FROM events ORDER BY key LIMIT ?", (limit,))
            found = rows.fetchall()
        except sqlite3.Error as err:
            _LOGGER.debug("outbox %s: the reader failed (%s); reading under the lock", self.path, err)
            self._close_reader()
            return None
        if self.fault is not None or self._generation != generation:
            return None  # the storage failed or recovered meanwhile: the locked read knows which
        return [(int(key), bytes(payload)) for key, payload in found]

    def _close_reader(self) -> None:
        if self._reader is not None:
            with contextlib.suppress(sqlite3.Error):
                self._reader.close()
            self._reader = None

    def _pending_locked(self, limit: int = 100) -> list[tuple[int, bytes]]:
        """:meth:`pending` under the writer's lock (waits for a commit in progress)."""
        with self._lock:
            if self.fault is not None and not self._recover():
                return [(h.key, h.payload) for h in self._held[:limit]]
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
            key = self._renamed.pop(key, key)
            if self.fault is not None:
                self._ack_held(key)
                return
            try:
                deleted = self._db.execute("DELETE FROM events WHERE key = ?", (key,)).rowcount
            except sqlite3.Error as err:
                if is_storage_fault(err):
                    self._enter_fault(err)
                    self._ack_held(key)
                    return
                raise OutboxError(f"cannot delete event {key} from outbox {self.path}: {err}") from err
            self._count -= max(deleted, 0)

    # ---- storage faults ------------------------------------------------------------------------------
    def _open_read_only(self, err: BaseException) -> None:
        """The database cannot be opened for writing (a read-only state directory at start): serve
        the events it holds from memory (those it cannot give wait on disk for the recovery) and
        keep this boot's new ones in memory until it can be written."""
        self.fault = f"outbox {self.path} cannot be written: {err}"
        self._last_try = time.monotonic()
        found = _read_only(self.path, self.boot)
        self._db, rows, last = found or (sqlite3.connect(":memory:", check_same_thread=False), [], 0)
        self._held = [_Held(int(k), str(i), int(q), bytes(p), True) for k, i, q, p in rows]
        self._last_seq, self._count = last, len(self._held)
        _LOGGER.error(
            "State directory read-only? %s. Events are kept in memory (%d pending from before) and "
            "published; they are written to disk once it can be written (a restart before that loses them)",
            self.fault,
            len(self._held),
        )

    def _reconnect(self) -> sqlite3.Connection:
        """The database opened again for writing; one that existed is not made anew (on what lies
        beneath an unmounted filesystem, say): then it fails until the file is back."""
        if not self._existed:
            return sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        uri = f"{self.path.absolute().as_uri()}?mode=rw"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)

    def retry(self) -> bool:
        """While the database cannot be written, try it again (at most every ``RECOVERY_INTERVAL_S``);
        True when the outbox is on disk."""
        with self._lock:
            return self.fault is None or self._recover()

    def _enter_fault(self, err: sqlite3.Error) -> None:
        """The database stopped taking writes: from now on events are kept (and served) in memory,
        starting with those already on disk, until a write succeeds again."""
        self.fault = f"outbox {self.path} cannot be written: {err}"
        self._last_try = time.monotonic()
        try:
            rows = self._db.execute("SELECT key, id, seq, payload FROM events ORDER BY key").fetchall()
        except sqlite3.Error as read_err:  # unreadable too: those events wait on disk for the recovery
            _LOGGER.error("Outbox %s unreadable as well (%s)", self.path, read_err)
            rows = []
        self._held = [_Held(int(k), str(i), int(q), bytes(p), True) for k, i, q, p in rows]
        _LOGGER.error(
            "State directory read-only? %s. Events are kept in memory (%d pending) and published; "
            "they are written to disk again once it can be written (a restart before that loses them)",
            self.fault,
            len(self._held),
        )

    def _hold(self, event: Event) -> Event:
        """Keep ``event`` in memory (under the lock)."""
        key = self._next_memory_key
        self._next_memory_key -= 1
        self._held.append(_Held(key, event.id, event.seq, event.encode(), False))
        if len(self._held) > self.max_events:
            dropped = self._held.pop(0)
            _LOGGER.warning(
                "Outbox full in memory (%d events): dropped %s", self.max_events, dropped.event_id
            )
        self._last_seq = event.seq
        self._count = len(self._held)
        return event

    def _ack_held(self, key: int) -> None:
        for i, held in enumerate(self._held):
            if held.key == key:
                del self._held[i]
                if held.stored:
                    self._acked_on_disk.append(key)
                break
        self._count = len(self._held)

    def _recover(self) -> bool:
        """Try the database again (at most every ``RECOVERY_INTERVAL_S``): reopen it, delete what was
        acknowledged meanwhile, write what was held; True when the outbox is back on disk."""
        now = time.monotonic()
        if now - self._last_try < RECOVERY_INTERVAL_S:
            return False
        self._last_try = now
        try:
            db = self._reconnect()
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)  # absent when the daemon started on a read-only directory
            db.execute("BEGIN IMMEDIATE")
            db.executemany("DELETE FROM events WHERE key = ?", [(k,) for k in self._acked_on_disk])
            renamed: dict[int, int] = {}
            for held in self._held:
                if not held.stored:
                    cur = db.execute(
                        "INSERT OR IGNORE INTO events (id, boot, seq, payload) VALUES (?, ?, ?, ?)",
                        (held.event_id, self.boot, held.seq, held.payload),
                    )
                    renamed[held.key] = int(cur.lastrowid or 0)
            db.execute(
                "INSERT OR REPLACE INTO boot_seq (boot, last_seq) VALUES (?, ?)", (self.boot, self._last_seq)
            )
            db.execute("COMMIT")
            (count,) = db.execute("SELECT COUNT(*) FROM events").fetchone()
        except (sqlite3.Error, OSError) as err:
            with contextlib.suppress(Exception):
                db.close()
            _LOGGER.debug("outbox %s still cannot be written: %s", self.path, err)
            return False
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._db = db
        self._generation += 1
        self._renamed.update(renamed)
        _LOGGER.warning(
            "Outbox %s can be written again: %d events kept in memory are on disk again",
            self.path,
            len(renamed),
        )
        self.fault = None
        self._held, self._acked_on_disk = [], []
        self._count = int(count)
        return True

    def __len__(self) -> int:
        """Events not yet acknowledged."""
        return self._count

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
        with self._read_lock:
            self._close_reader()
