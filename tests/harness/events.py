"""Build protocol events for harness unit tests."""

from __future__ import annotations

import itertools
from typing import Any

from agent_link.protocol.messages import Event, make_event


class EventFactory:
    """Makes valid events with consecutive ``seq`` numbers in one boot."""

    def __init__(self, boot: int = 1, t0: float = 1000.0) -> None:
        self.boot = boot
        self.seq = itertools.count(1)
        self.t = t0

    def __call__(self, type_: str, dt: float = 0.1, **fields: Any) -> Event:
        self.t += dt
        seq = next(self.seq)
        return make_event(type_, fields, id=f"e-{self.boot}-{seq}", boot=self.boot, seq=seq, ts=self.t)

    def transcript(self, text: str, confidence: float = 0.9, utterance: str | None = None) -> Event:
        return self(
            "transcript",
            utterance=utterance or f"u-{self.t}",
            text=text,
            confidence=confidence,
            language="en",
            source="voice",
            audio_ms=1000,
            decode_ms=200,
        )
