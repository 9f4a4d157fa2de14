"""The state directory: boot counter and session settings, written atomically.

The outbox and the remembered command ids live beside these (SQLite, owned by ``agent_link``).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
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


class StateDir:
    """Files under the device's state directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            raise StateDirUnusable(f"{self.root} cannot be used: {err.strerror or err}") from err

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
        atomic_write(path, f"{boot}\n".encode())
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
        return OpenIds(self.root / f"open-{kind}.json")

    def save_settings(self, settings: Settings) -> None:
        """Persist the session settings atomically."""
        atomic_write(self.root / "settings.json", json.dumps(asdict(settings), indent=1).encode())


class OpenIds:
    """Ids opened and not yet closed (utterances, replies), on disk so a restart can close them.

    ``open()`` is written before the opening event is stored and ``close()`` after the closing one,
    so a kill in between leaves the id recorded (closed again after the restart, never left open).
    A write that fails is logged and the daemon goes on.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: set[str] = set()

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
        try:
            atomic_write(self.path, json.dumps(sorted(self.ids)).encode())
        except OSError as err:
            _LOGGER.error("Could not record open ids in %s: %s", self.path, err)
