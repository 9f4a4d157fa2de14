"""The rules of protocol v1 that the device keeps, each in the module named for what it holds
(``device.core.orchestrator`` hands each event to its rule):

- ``hearing``: speech started, ended, transcribed or failed, typed text; every utterance closed exactly
  once, also across a restart (what the previous boot left open, closed);
- ``speaking``: a reply's ``say`` chunks (say-while-asleep rejected, chunks of an ended or stopped reply
  refused), a reply started and finished, its sentences (emotion marks shown at their word);
- ``sleep_wake``: wake only by a tap; sleep only when the agent asks (command or ``[sleep]`` tag) and
  only after the speech queued before the request, the ``sleep_allowed`` veto checked when a sleep
  would take effect; a tap or a sleep stepped early, at its marker;
- ``commands``: the agent's commands (``stop``, ``sleep``, ``sleep_allowed``, ``config``; ``say``), the
  settings applied and saved, the voice following the language; commands refused (``command_rejected``);
- ``status``: the link, the agent's presence, audio device and storage faults, the duplex mode, the
  canceller's strength (how deep a barge-in ducks); the timers (thinking, the early duck and the
  duck's hold over, the wake-up animation over).

This module holds what they share: their configuration (``Rules``: not state), the thinking timer, how
many ended replies are remembered, and two actions several of them take: every reply stopped (the
``stop`` command, falling asleep) and a command rejected (a ``say`` chunk refused, a command the link
refused). It imports none of them, so each can import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from agent_link.protocol.event_messages import CommandRejectedBody
from agent_link.protocol.message_base import RejectReason
from device.core.actions import Action, Publish, StopSpeaking
from device.core.state import DeviceState
from face.tags import TagVocabulary

THINKING_TIMER = "thinking"
ENDED_MEMORY = 64
"""How many ended reply ids are remembered to refuse late chunks."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Configuration of the rules (not state): timeouts, the tag vocabulary, the voices."""

    thinking_timeout_s: float = 15.0
    """How long the face shows ``thinking`` after a transcript when no reply starts, in seconds."""
    wake_duration_s: float = 1.2
    """How long the wake-up animation plays before the awake state shows (``face.wake_duration_s``)."""
    vocabulary: TagVocabulary = field(default_factory=TagVocabulary)
    voices: Mapping[str, str] = field(default_factory=dict)
    """Voice per language (``speaking.voices``); a language not listed is spoken by ``default_voice``."""
    default_voice: str = ""
    """``speaking.voice``: "" = the packaged voice."""
    duck_db: float = -18.0
    """Level of the replies while the user speaks over them, in dB (``hearing.duck_db``; 0 = none)."""
    duck_weak_db: float = -30.0
    """The level instead while the canceller removes less than ``weak_canceller_db`` of the echo
    or is not measured yet, in dB (``hearing.duck_weak_db``; the deeper of the two applies)."""
    weak_canceller_db: float = 30.0
    """A canceller removing less than this much of the echo is weak, in dB (``hearing.weak_canceller_db``)."""
    duck_hold_s: float = 1.0
    """How long the replies stay ducked after the barge-in utterance ends, in seconds
    (``hearing.duck_hold_ms``; 0 = none)."""
    early_duck_release_s: float = 0.3
    """How long an early duck lasts from the first voiced frame over a reply when no barge-in
    follows, in seconds (``hearing.early_duck_release_ms``)."""

    def weak_canceller(self, removed_db: float | None) -> bool:
        """Whether a canceller that removes ``removed_db`` of the echo (None = not measured yet) is
        weak: it is not trusted to be strong before it was measured."""
        return removed_db is None or removed_db < self.weak_canceller_db

    def duck_depth(self, removed_db: float | None) -> float:
        """The replies' level under a barge-in when the canceller removes ``removed_db`` (dB; 0 = no
        ducking). With a weak canceller the echo the user speaks over is louder by what it does not
        remove, and WebRTC's suppressor takes more of the user's words: the reply ducks deeper."""
        if self.duck_db >= 0.0:
            return 0.0
        return min(self.duck_db, self.duck_weak_db) if self.weak_canceller(removed_db) else self.duck_db


def stop_speaking(state: DeviceState, out: list[Action]) -> DeviceState:
    """Silence the output and drop every reply: each gets its interrupted finish from the speaker."""
    out.append(StopSpeaking())
    return replace(state, replies=tuple(replace(r, stopped=True) for r in state.replies))


def reject(command_id: str | None, reason: RejectReason, detail: str, ts: float) -> Publish:
    return Publish(CommandRejectedBody(command=command_id, reason=reason, detail=detail, ts=ts))
