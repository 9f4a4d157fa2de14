"""Events the audio parts emit, and the small interfaces they are driven through.

These are the *only* types the orchestrator (``device``) needs from ``audio``. Every event carries
``ts``: unix seconds (``time.time()``) when the thing happened at the edge (first sample of speech,
first sample reaching the speaker, ...), not when the event was handled.

Parts call an ``EventSink`` from the asyncio event loop thread (worker threads hand results over
with ``loop.call_soon_threadsafe`` first). The sink must not block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

HearingFailure = Literal["no_speech", "too_short", "too_long", "stt_error", "interrupted"]
"""Why the listener produced no transcript for an utterance (the device maps it to the contract's
``utterance_failed.reason``; ``audio`` does not know the contract)."""

Viseme = Literal["rest", "aa", "ee", "oo", "mbp", "fv", "l", "s"]
"""Mouth shapes for lip-sync: rest (closed, relaxed), aa (open), ee (wide), oo (round),
mbp (lips pressed), fv (lower lip to teeth), l (tongue, half open), s (teeth, narrow)."""


# ---- hearing -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """VAD saw the user start speaking; ``over_playback``: while the device was speaking (full
    duplex: a barge-in)."""

    utterance: str
    ts: float
    over_playback: bool = False


@dataclass(frozen=True, slots=True)
class BargeInSuspected:
    """Full duplex, while the device speaks: the first voiced frames over the reply
    (``hearing.early_duck_speech_ms``), not yet the speech a barge-in needs. Maybe the user starting
    to talk over it, maybe the residue of its own voice: the device ducks the reply at once and lets
    go after ``hearing.early_duck_release_ms`` unless ``SpeechStarted`` follows. ``ts``: the first
    voiced frame. Not a protocol message."""

    ts: float


EndReason = Literal["turn_complete", "silence", "max_length"]
"""Why an utterance ended (protocol v1.1 ``speech_ended.end``): the end-of-turn model judged the turn
finished after a short pause, the (fallback) silence ran out, or the utterance reached its maximum length."""


@dataclass(frozen=True, slots=True)
class SpeechEnded:
    """The user stopped speaking; ``audio_ms`` is the utterance length sent to STT (ms), ``end`` why
    the utterance ended (None: not said, e.g. it was too short to transcribe)."""

    utterance: str
    audio_ms: int
    ts: float
    end: EndReason | None = None


@dataclass(frozen=True, slots=True)
class Transcribed:
    """STT produced text for an utterance (``confidence`` in [0, 1])."""

    utterance: str
    text: str
    confidence: float
    language: str
    audio_ms: int
    decode_ms: int
    ts: float


@dataclass(frozen=True, slots=True)
class UtteranceFailed:
    """An utterance that produced no transcript."""

    utterance: str
    reason: HearingFailure
    detail: str
    ts: float


# ---- speaking ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class VisemeCue:
    """Mouth shape ``viseme`` from ``start`` to ``end`` seconds after its sentence's first sample."""

    start: float
    end: float
    viseme: Viseme


@dataclass(frozen=True, slots=True)
class PlaybackStarted:
    """The first audio sample of reply ``say`` reached the output."""

    say: str
    ts: float


@dataclass(frozen=True, slots=True)
class SentencePlaying:
    """A synthesised piece of reply ``say`` started playing at ``ts``.

    ``start``/``end`` are character offsets into the concatenation of every ``text`` passed to
    ``Speaker.speak`` for this ``say`` id (so the orchestrator can fire emotion marks at the right
    word); ``duration`` is its audio length in seconds; ``visemes`` are relative to ``ts``.
    """

    say: str
    start: int
    end: int
    duration: float
    visemes: tuple[VisemeCue, ...]
    ts: float


@dataclass(frozen=True, slots=True)
class PlaybackFinished:
    """The last sample of reply ``say`` was played, or it was stopped/dropped (``interrupted``)."""

    say: str
    interrupted: bool
    ts: float


# ---- device health -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AudioDeviceProblem:
    """An input/output device failed (``ok=False``) or came back (``ok=True``); ``detail`` says which."""

    direction: Literal["input", "output"]
    ok: bool
    detail: str
    ts: float


DuplexMode = Literal["full", "half"]
"""Whether the listener hears the user while the device speaks (``full``) or discards what the
microphone hears then (``half``)."""


@dataclass(frozen=True, slots=True)
class DuplexChanged:
    """The listener's duplex mode changed (or is first known): ``reason`` says why it is half
    ("" when full): echo cancellation off, the canceller not converged yet, or a fault."""

    mode: DuplexMode
    reason: str
    ts: float


@dataclass(frozen=True, slots=True)
class EchoRemoval:
    """How much of the speaker's echo the converged canceller removes, in dB: the median 10 ms frame
    of its last 10 s of echo alone (``FrontEnd.removal_db``). Said when first measured and when it
    moves by ``ECHO_REMOVAL_STEP_DB`` or more; a re-convergence does not unsay it (the hardware is
    the same): the last figure holds until the next."""

    removed_db: float
    ts: float


ECHO_REMOVAL_STEP_DB = 2.0
"""How far the canceller's measured removal moves before it is said again (dB)."""

HearingEvent = (
    SpeechStarted
    | BargeInSuspected
    | SpeechEnded
    | Transcribed
    | UtteranceFailed
    | AudioDeviceProblem
    | DuplexChanged
    | EchoRemoval
)
SpeakingEvent = PlaybackStarted | SentencePlaying | PlaybackFinished | AudioDeviceProblem
AudioEvent = HearingEvent | SpeakingEvent
EventSink = Callable[[AudioEvent], None]
