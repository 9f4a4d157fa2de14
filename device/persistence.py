"""The state directory: boot counter and session settings, written atomically.

The outbox and the remembered command ids live beside these (SQLite, owned by ``agent_link``).

A state directory that stops taking writes (the kernel remounts a failing SD card read-only) does not
stop the daemon: what could not be written is kept in memory (the last content of each file) and
written by ``retry`` once the directory can be written again; ``fault`` says why meanwhile. A
daemon that starts on such a directory runs the same way (its boot number then comes from the clock,
so a restart before the repair cannot reuse the event ids of this boot).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from device.core.state import Settings

_LOGGER = logging.getLogger(__name__)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a crash leaves the old or the new file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class StateDirUnusable(OSError):
    """The state directory cannot be created or written (the message says which and why)."""


STORAGE_FAULTS = frozenset({errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM, errno.ENOSPC})
"""Errors of a directory that exists but cannot be written now (a read-only remount, a failing card,
a full disk): the daemon runs on, keeping what it could not write in memory."""


class StateDir:
    """Files under the device's state directory.

    Raises :class:`StateDirUnusable` when the directory cannot be made at all (a file in its place,
    a parent that cannot be entered): a configuration mistake. A directory that exists (or sits on a
    read-only filesystem) but cannot be written is a storage fault: ``fault`` says why.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        self.fault: str | None = None
        """Why some file could not be written (None: everything is on disk)."""
        self._unsaved: dict[Path, bytes] = {}
        """The last content of each file whose write failed, written by ``retry``."""
        self._lock = threading.Lock()
        self._existed = self.root.is_dir()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            self._existed = True
        except OSError as err:
            if not _is_storage_fault(err, self.root):
                raise StateDirUnusable(f"{self.root} cannot be used: {err.strerror or err}") from err
            self.fault = f"state directory {self.root} cannot be written: {err.strerror or err}"
            _LOGGER.error(
                "%s. Running on: settings, the boot counter and open records are kept in memory and "
                "written once it can be written again",
                self.fault,
            )

    @property
    def outbox_path(self) -> Path:
        """SQLite outbox of events not yet acknowledged by the broker."""
        return self.root / "outbox.sqlite3"

    @property
    def command_ids_path(self) -> Path:
        """SQLite store of command ids already executed."""
        return self.root / "command-ids.sqlite3"

    @property
    def speech_dir(self) -> Path:
        """Where simulated speaker output (WAV files) goes."""
        return self.root / "speech"

    def next_boot(self) -> int:
        """Increment and persist the boot counter; return the new value (1 on first start)."""
        path = self.root / "boot"
        try:
            boot = int(path.read_text().strip()) + 1
        except FileNotFoundError:
            boot = 1
        except ValueError:
            # Starting again at 1 would reuse event ids ({device}-{boot}-{seq}) the agent has seen and
            # drops as duplicates; the unix time is above any count reached by restarts.
            boot = max(1, int(time.time()))
            _LOGGER.error(
                "Boot counter %s is corrupt; continuing from %d (the current unix time)", path, boot
            )
        except OSError as err:  # unreadable (a failing card): as corrupt
            boot = max(1, int(time.time()))
            _LOGGER.error("Boot counter %s unreadable (%s); continuing from %d", path, err, boot)
        if self.fault is None and self.write(path, f"{boot}\n".encode()):
            return boot
        # Not on disk before a restart, this number would come again (and with it the event ids).
        boot = max(boot, int(time.time()))
        _LOGGER.error("Boot %d (at least the unix time): the boot counter cannot be written", boot)
        self.write(path, f"{boot}\n".encode())
        return boot

    def load_settings(self, defaults: Settings) -> Settings:
        """Settings saved by ``save_settings``, or ``defaults`` when none (or unreadable)."""
        path = self.root / "settings.json"
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return defaults
        except (OSError, ValueError) as err:
            _LOGGER.error("Saved settings %s unreadable (%s); using defaults", path, err)
            return defaults
        values = asdict(defaults)
        for key in values:
            if key in raw:
                values[key] = raw[key]
        try:
            return Settings(
                sleep_allowed=bool(values["sleep_allowed"]),
                language=str(values["language"]),
                voice=None if values["voice"] in (None, "") else str(values["voice"]),
                volume=float(values["volume"]),
            )
        except (TypeError, ValueError) as err:
            _LOGGER.error("Saved settings %s invalid (%s); using defaults", path, err)
            return defaults

    def open_ids(self, kind: str) -> OpenIds:
        """The record of ``kind`` ("utterances", "replies") opened and not yet closed."""
        return OpenIds(self.root / f"open-{kind}.json", self.write)

    def save_settings(self, settings: Settings) -> None:
        """Persist the session settings atomically (kept in memory while they cannot be written)."""
        self.write(self.root / "settings.json", json.dumps(asdict(settings), indent=1).encode())

    def write(self, path: Path, data: bytes) -> bool:
        """``atomic_write``; if it fails, keep ``data`` to be written by ``retry`` (a later write of
        the same file replaces it) and log it. True when it is on disk."""
        with self._lock:
            try:
                self._atomic_write(path, data)
            except OSError as err:
                self._unsaved[path] = data
                if self.fault is None:
                    self.fault = f"{path} cannot be written: {err.strerror or err}"
                    _LOGGER.error("%s (kept in memory, written once it can be written)", self.fault)
                return False
            self._unsaved.pop(path, None)
            if self.fault is not None and not self._unsaved:
                self._recovered()
            return True

    def retry(self) -> bool:
        """Write what could not be written; True when nothing is left in memory."""
        with self._lock:
            if self.fault is None:
                return True
            for path, data in list(self._unsaved.items()):
                try:
                    self._atomic_write(path, data)
                except OSError as err:
                    _LOGGER.debug("%s still cannot be written: %s", path, err)
                    return False
                del self._unsaved[path]
            self._recovered()
            return True

    def _atomic_write(self, path: Path, data: bytes) -> None:
        """``atomic_write``, but a state directory that was there at start and is gone now (its
        filesystem unmounted) is not made again on what lies beneath: the write fails."""
        if self._existed and not self.root.is_dir():
            raise FileNotFoundError(errno.ENOENT, "the state directory is gone (unmounted?)", str(self.root))
        atomic_write(path, data)

    def _recovered(self) -> None:
        _LOGGER.warning(
            "State directory %s can be written again (what was kept in memory is on disk)", self.root
        )
        self.fault = None

    @property
    def unsaved(self) -> list[Path]:
        """Files whose last content is only in memory."""
        with self._lock:
            return sorted(self._unsaved)


def _is_storage_fault(err: OSError, root: Path) -> bool:
    """``err`` (making or probing ``root``) is the storage failing, not a path that cannot be a
    directory: a read-only or failing filesystem, or a directory that exists and refuses writes."""
    if err.errno in (errno.EROFS, errno.EIO):
        return True
    return err.errno in STORAGE_FAULTS and root.is_dir()


class OpenIds:
    """Ids opened and not yet closed (utterances, replies), on disk so a restart can close them.

    ``open()`` is written before the opening event is stored and ``close()`` after the closing one,
    so a kill in between leaves the id recorded (closed again after the restart, never left open).
    A write that fails is logged and the daemon goes on (``write`` keeps it for a retry).
    """

    def __init__(self, path: Path, write: Callable[[Path, bytes], object] | None = None) -> None:
        self.path = path
        self.ids: set[str] = set()
        self._write = write

    def __contains__(self, item: object) -> bool:
        return item in self.ids

    def load(self) -> list[str]:
        """The ids the last boot left open (they stay recorded until closed)."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = []
        except (OSError, ValueError) as err:
            _LOGGER.error("Record %s unreadable (%s); ignoring it", self.path, err)
            data = []
        leftovers = sorted(str(i) for i in data) if isinstance(data, list) else []
        self.ids = set(leftovers)
        return leftovers

    def open(self, item: str) -> None:
        """Record ``item`` as open."""
        if item not in self.ids:
            self.ids.add(item)
            self._save()

    def close(self, item: str) -> None:
        """Record ``item`` as closed."""
        if item in self.ids:
            self.ids.discard(item)
            self._save()

    def _save(self) -> None:
        data = json.dumps(sorted(self.ids)).encode()
        if self._write is not None:
            self._write(self.path, data)
            return
        try:
            atomic_write(self.path, data)
        except OSError as err:
            _LOGGER.error("Could not record open ids in %s: %s", self.path, err)
