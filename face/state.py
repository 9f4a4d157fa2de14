"""Face states and the canonical emotion names of the reply-tag contract."""

from __future__ import annotations

from enum import StrEnum


class FaceState(StrEnum):
    """What the robot is doing, as shown by the face."""

    ASLEEP = "asleep"
    WAKING = "waking"
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"
    OFFLINE = "offline"
    ERROR = "error"


EMOTIONS: tuple[str, ...] = (
    "neutral",
    "happy",
    "sad",
    "surprised",
    "angry",
    "thinking",
    "confused",
    "excited",
    "sleepy",
)
"""The nine canonical emotion tags of protocol v1, in contract order."""
