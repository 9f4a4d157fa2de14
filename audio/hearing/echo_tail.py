"""How long the microphone stays deaf after the device stops speaking: a measured echo tail.

Half duplex drops what the microphone hears while the device speaks. When the reply ends, the room
still rings with it: the speaker sits centimetres from the microphone, and a living room's
reverberation (RT60 0.3–0.8 s) keeps the robot's own voice audible for a few hundred milliseconds,
long enough for the VAD to take it for the user. A fixed tail is either too short for a
reverberant room or too long for a quiet one, where the user's quick answer would be cut.

``EchoTail`` measures instead (pure and clock-free: durations are sample counts, levels are given):

- the room's noise floor comes from the caller: the VAD's (``SpeechDetector.noise_floor_db``,
  tracked on the frames it hears while the device is silent: falls fast, rises slowly, never on
  speech);
- after the reply it always drops ``min_samples``, then keeps dropping while the level is still more
  than ``margin_db`` above that floor -- the echo decaying -- and at most ``max_samples`` in all;
- it stops at once when the level *rises* by ``onset_db`` over the lowest level of the tail, or
  has not fallen by ``decay_db`` over the last ``decay_window_samples`` (an echo only decays, at
  60 dB per RT60: 4 dB per 100 ms even in a 1.5 s hall); then someone is speaking (perhaps since
  during the minimum) or another sound goes on, and the block goes to the VAD (its pre-roll keeps
  the first syllable).

Without a floor (None) only the minimum applies.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

_LOGGER = logging.getLogger(__name__)


@dataclass
class EchoTail:
    """Decides, block by block, whether the microphone still hears the device's own reply."""

    rate: int
    """Sample rate of the blocks (Hz)."""
    min_samples: int
    """Always dropped after the reply (samples)."""
    max_samples: int
    """Never dropped longer than this after the reply (samples)."""
    margin_db: float = 6.0
    """The echo is over once the level is within this of the room's noise floor (dB)."""
    onset_db: float = 10.0
    """A rise of this much over the tail's lowest level is someone speaking (dB)."""
    decay_db: float = 1.0
    """An echo falls at least this much over ``decay_window_samples`` (dB)."""
    decay_window_samples: int = 1600
    """Span over which the echo must fall by ``decay_db`` (samples; 100 ms at 16 kHz)."""
    dropped: int = 0
    """Samples dropped since the reply ended."""
    active: bool = False
    """Whether a tail is running."""
    ended_by: str = ""
    """Why the last tail ended: "floor", "onset", "steady" or "max" ("" while running / never ran)."""
    _lowest_db: float = field(default=math.inf, repr=False)
    _history: deque[tuple[int, float]] = field(default_factory=deque, repr=False)
    """(samples dropped before the block, its level) of the tail's recent blocks."""

    def start(self) -> None:
        """The device stopped speaking: the tail begins."""
        self.active, self.dropped, self.ended_by = True, 0, ""
        self._lowest_db = math.inf
        self._history.clear()

    def cancel(self) -> None:
        """The device speaks again: no tail is running (the reply's audio is dropped anyway)."""
        self.active = False

    def drop(self, n: int, db: float, floor_db: float | None) -> bool:
        """Whether the block of ``n`` samples at ``db`` (heard after the reply) is still echo, over
        a room whose noise floor is ``floor_db`` (dBFS; None = unknown)."""
        if not self.active:
            return False
        if self.dropped < self.min_samples:
            verdict = ""
        elif self.dropped >= self.max_samples:
            verdict = "max"
        elif db >= self._lowest_db + self.onset_db:
            verdict = "onset"
        elif floor_db is None or db <= floor_db + self.margin_db:
            verdict = "floor"
        elif db > self._level_ago(self.decay_window_samples) - self.decay_db:
            verdict = "steady"
        else:
            verdict = ""
        if verdict:  # this block is not dropped: it goes to the VAD
            self.active, self.ended_by = False, verdict
            _LOGGER.debug("echo tail over after %d ms (%s)", self.dropped * 1000 // self.rate, verdict)
            return False
        self._lowest_db = min(self._lowest_db, db)
        self._history.append((self.dropped, db))
        self.dropped += n
        return True

    def _level_ago(self, samples: int) -> float:
        """The level of the latest block that began at least ``samples`` before now (+inf when
        the tail is younger than that)."""
        target = self.dropped - samples
        while len(self._history) > 1 and self._history[1][0] <= target:
            self._history.popleft()
        if not self._history or self._history[0][0] > target:
            return math.inf
        return self._history[0][1]


@dataclass
class EchoGuard:
    """The guard against the robot's own voice while it plays, on top of the echo canceller, so it
    holds with a weak canceller too (pure and clock-free; levels are given per frame).

    A residual-echo check against the reference: while the far end plays (or rang within
    ``hold_ms``), the canceller's echo return loss enhancement is tracked on the frames it
    passes as echo (``raw_db - clean_db``: its lower envelope, falling fast and rising slowly; it
    starts at ``initial_erle_db``, a weak canceller); a frame counts as the user's speech only if the cleaned level stands at least
    ``margin_db`` above the residual expected from that ERLE (``raw_db - erle``) -- or half the ERLE
    when that is less (a weak canceller: the cleaned level can rise at most ERLE over its residue,
    when the user drowns the echo). What the user adds is not cancelled, so their speech lifts the
    cleaned level over the expected residual; an echo the canceller removes as well as before does not.

    The tail rule: in a pause of the reply (the far end silent *as the microphone hears it*, that is
    ``echo_delay_ms`` after it was played, within ``hold_ms`` of its last sound) a frame whose raw
    level is more than ``tail_fall_db`` under the raw level ``tail_back_ms`` earlier is the reply's
    reverberation dying away, not the user, whatever the cleaned level says. WebRTC's suppressor
    lets go 30-200 ms into such a pause and the tail then leaks at close to its raw level while the
    tracked ERLE still expects 20 dB (measured by ``robot-face bench duplex``: the false starts in
    the reply's pauses, in rooms with RT60 0.6 s). A user who speaks in the pause lifts the raw level
    or holds it; an echo only decays. So once the raw level has risen ``tail_rise_db`` over its
    lowest in the pause, someone else is speaking and the rule is off until the reply goes on: the
    ends of the user's words fall as fast as a tail (a user answering right after a reply, within
    ``hold_ms``, would otherwise have them attenuated, and the endpointer hear their pause begin
    early).
    """

    margin_db: float = 6.0
    """How far above the expected residual echo a frame must stand to be speech (dB; at most half
    the tracked ERLE)."""
    initial_erle_db: float = 6.0
    """The ERLE assumed before any was measured (dB)."""
    far_active_db: float = -50.0
    """The far end counts as playing above this reference level (dBFS)."""
    frame_ms: int = 30
    """Length of the frames ``allows`` is given (ms: the capture block, ``hearing.block_ms``); the
    durations below are counted in frames of this length."""
    hold_ms: int = 900
    """How long after the far end falls silent its echo may still ring (ms); a pause in a reply
    shorter than this is not a new onset."""
    fall: float = 0.3
    """How fast the tracked ERLE follows a frame the canceller did worse on (0..1 per frame)."""
    rise: float = 0.02
    """How fast it follows a frame the canceller did better on: the tracked ERLE is the lower
    envelope, the canceller's worst recent performance, not its average."""
    onset_ms: int = 400
    """How long after the far end starts playing (from silence) nothing counts as speech (ms): the
    canceller leaks at a reply's onset more than its tracked ERLE says (measured live in the
    simulated room: its own voice started utterances about 0.1 s into a reply), and the tracked
    ERLE learns the onset's worse figure meanwhile."""
    echo_delay_ms: int = 0
    """How much later than the reference the echo reaches the microphone beyond the latencies the
    timeline already takes out (ms: ``hearing.echo_delay_ms``, the simulated room's delay in
    simulation); the tail rule judges the far end's pauses as heard there."""
    tail_fall_db: float = 3.0
    """The tail rule: how far under the raw level ``tail_back_ms`` earlier a frame in a pause of the
    reply must be to count as its decaying echo (dB; 0 = no tail rule)."""
    tail_back_ms: int = 90
    """The tail rule's look back (ms)."""
    tail_rise_db: float = 6.0
    """A rise of the raw level this far over its lowest in a pause of the reply ends the tail rule
    for that pause: someone speaks (dB)."""
    removed_max_db: float = 0.0
    """The most the canceller may have removed from a frame that counts as the user (dB: raw level
    minus cleaned level; 0 = no such limit). What the user adds is not cancelled: in double talk
    the cleaned frame keeps the user's voice within a few dB of the raw level, while what a strong
    canceller lets through of its own echo lies 10-35 dB under it."""
    erle_db: float = field(default=6.0)
    """The tracked ERLE (dB)."""
    _heard: deque[float] = field(default_factory=deque, repr=False)
    """The far end's recent levels (dBFS, newest last), to read them ``echo_delay_ms`` late."""
    _raw: deque[float] = field(default_factory=deque, repr=False)
    """The raw microphone's recent levels (dBFS, newest last), ``tail_back_ms`` of them."""
    _since_heard: int = field(default=10**9, repr=False)
    """Frames since the far end was last heard at the microphone (``echo_delay_ms`` late)."""
    _pause_low: float = field(default=math.inf, repr=False)
    """The raw level's lowest in the current pause of the reply (dBFS)."""
    _pause_voiced: bool = field(default=False, repr=False)
    """Whether the raw level rose ``tail_rise_db`` over ``_pause_low`` in this pause."""
    _since_far: int = field(default=10**9, repr=False)
    _onset: int = field(default=10**9, repr=False)
    """Frames since the far end started playing (from silence)."""

    def __post_init__(self) -> None:
        self.erle_db = self.initial_erle_db

    @property
    def hold_frames(self) -> int:
        """``hold_ms`` in frames."""
        return -(-self.hold_ms // self.frame_ms)

    @property
    def delay_frames(self) -> int:
        """``echo_delay_ms`` in frames (rounded)."""
        return round(self.echo_delay_ms / self.frame_ms)

    @property
    def tail_back_frames(self) -> int:
        """``tail_back_ms`` in frames (at least one)."""
        return max(1, -(-self.tail_back_ms // self.frame_ms))

    @property
    def onset_frames(self) -> int:
        """``onset_ms`` in frames."""
        return -(-self.onset_ms // self.frame_ms)

    def reset(self) -> None:
        """Forget the tracked ERLE (back to ``initial_erle_db``): the echo path moved for the
        canceller (a timing jump), so its past performance says nothing."""
        self.erle_db = self.initial_erle_db

    @property
    def playing(self) -> bool:
        """Whether the far end plays or rang within ``hold_frames`` (as of the latest frame)."""
        return self._since_far <= self.hold_frames

    def allows(self, is_speech: bool, raw_db: float, clean_db: float, far_db: float) -> bool:
        """Whether a frame the VAD took as ``is_speech`` is the user's speech, not residual echo."""
        was_playing = self.playing
        self._since_far = 0 if far_db > self.far_active_db else self._since_far + 1
        tail = self._in_tail(raw_db, far_db)
        if not self.playing:
            return is_speech
        self._onset = self._onset + 1 if was_playing else 0
        above = clean_db - (raw_db - self.erle_db)
        speech = is_speech and above >= min(self.margin_db, 0.5 * self.erle_db)
        speech = speech and self._onset >= self.onset_frames
        if not speech and raw_db > -70.0:
            erle = min(60.0, max(0.0, raw_db - clean_db))
            rate = self.fall if erle < self.erle_db else self.rise
            self.erle_db += rate * (erle - self.erle_db)
        removed_ok = self.removed_max_db <= 0 or raw_db - clean_db <= self.removed_max_db
        return speech and removed_ok and not tail

    def _in_tail(self, raw_db: float, far_db: float) -> bool:
        """The tail rule for this frame (``raw_db``, with the reference at ``far_db``); keeps the
        histories it needs."""
        self._heard.append(far_db)
        while len(self._heard) > self.delay_frames + 1:
            self._heard.popleft()
        heard = self._heard[0] if len(self._heard) > self.delay_frames else -120.0
        self._since_heard = 0 if heard > self.far_active_db else self._since_heard + 1
        back = self._raw[0] if len(self._raw) >= self.tail_back_frames else math.inf
        self._raw.append(raw_db)
        while len(self._raw) > self.tail_back_frames:
            self._raw.popleft()
        in_pause = 0 < self._since_heard <= self.hold_frames
        if not in_pause:
            self._pause_low, self._pause_voiced = math.inf, False
        elif raw_db >= self._pause_low + self.tail_rise_db:
            self._pause_voiced = True
        self._pause_low = min(self._pause_low, raw_db) if in_pause else math.inf
        falling = raw_db < back - self.tail_fall_db
        return self.tail_fall_db > 0 and in_pause and not self._pause_voiced and falling
