"""MQTT topic names of protocol v1 for one device."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DEVICE_ID = "robot-1"
"""The device id when none is configured (``device.id``); the harness talks to it unless told otherwise."""


def _check_level(name: str, value: str) -> None:
    if not value or any(ch in value for ch in "/+#\0"):
        raise ValueError(f"{name} {value!r} must be a non-empty MQTT topic level without '/', '+', '#'")


@dataclass(frozen=True)
class Topics:
    """Topics under ``{root}`` for device ``{device}``."""

    root: str = "robotface"
    """Topic root (default ``robotface``); may contain '/' to nest, but no wildcards."""
    device: str = "robot"
    """Device id (also the MQTT client id)."""

    def __post_init__(self) -> None:
        for level in self.root.split("/"):
            _check_level("topic root level", level)
        _check_level("device id", self.device)

    @property
    def base(self) -> str:
        """``{root}/{device}``."""
        return f"{self.root}/{self.device}"

    @property
    def status(self) -> str:
        """Retained device status (birth / death / state); also the Last Will topic."""
        return f"{self.base}/status"

    @property
    def event(self) -> str:
        """Ordered device → agent event stream."""
        return f"{self.base}/event"

    @property
    def command(self) -> str:
        """Ordered agent → device command stream."""
        return f"{self.base}/command"

    @property
    def agent_status(self) -> str:
        """Retained ``{"online": bool}`` of the agent."""
        return f"{self.root}/agent/status"

    @property
    def sim_tap(self) -> str:
        """Simulated tap (simulation only)."""
        return f"{self.base}/sim/tap"

    @property
    def sim_text(self) -> str:
        """Simulated typed text (simulation only)."""
        return f"{self.base}/sim/text"

    @property
    def sim_audio(self) -> str:
        """Simulated microphone audio, a WAV file (simulation only)."""
        return f"{self.base}/sim/audio"

    def kind_of(self, topic: str) -> str | None:
        """The ``on_message`` kind of a subscribed topic, or ``None`` if it is not one of ours."""
        return {
            self.command: "command",
            self.agent_status: "agent_status",
            self.sim_tap: "sim_tap",
            self.sim_text: "sim_text",
            self.sim_audio: "sim_audio",
        }.get(topic)
