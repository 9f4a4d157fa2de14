"""The open utterances and replies on disk (``device.persistence.OpenIds``), one record per kind."""

from __future__ import annotations

from device.persistence import StateDir


class OpenRecords:
    """Opens and closes ids as the core's actions say; ``load`` reads what the last boot left open."""

    def __init__(self, state_dir: StateDir) -> None:
        self._ids = {kind: state_dir.open_ids(kind) for kind in ("utterances", "replies")}

    def load(self, kind: str) -> tuple[str, ...]:
        """The ids of ``kind`` the previous boot left open."""
        return tuple(self._ids[kind].load())

    def open(self, kind: str, id: str) -> None:
        """Record ``id`` open."""
        self._ids[kind].open(id)

    def close(self, kind: str, id: str) -> None:
        """Record ``id`` closed."""
        self._ids[kind].close(id)
