"""The echo-cancelling front end (real WebRTC APM from livekit) in the simulated room, with the
project's own Piper voice as the far end and recorded speech as the user."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
import pytest

from audio.edges.capture import SimulatedMicrophone
from audio.edges.sim_room import RoomEcho, SimRoomSettings
from audio.edges.sinks import NullSink
from audio.edges.wav import FloatArray
from audio.hearing.dtln_aec import DtlnCanceller, default_model_dir
from audio.hearing.front_end import (
    RATE,
    Canceller,
    EchoCanceller,
    FrontEnd,
    FrontEndOptions,
    FrontEndSource,
    FrontEndUnavailable,
)
from audio.hearing.settings import HearingSettings
from audio.hearing.vad import frame_level_db
from audio.speaking.playback import PlaybackMark
from audio.tools.bench_duplex import (
    Reply,
    cancel,
    detections,
    echo_of,
    erle_db,
    far_at_16k,
    synthesise_replies,
)
from tests.audio.conftest import ten_digits

CANCELLERS = pytest.mark.parametrize(
    "make",
    [
        lambda: None,
        lambda: DtlnCanceller(default_model_dir()),
        lambda: DtlnCanceller(default_model_dir(), units=256),
    ],
    ids=["webrtc", "dtln", "dtln256"],
)
"""Run a test with WebRTC's canceller (the front end's default) and with DTLN-aec of each size."""


@pytest.fixture(scope="module")
def reply() -> Reply:
    return synthesise_replies(1)[0]


ROOMS = pytest.mark.parametrize(
    "room",
    [
        SimRoomSettings(),
        SimRoomSettings(delay_ms=120.0, echo_db=0.0, rt60_s=0.6),
        SimRoomSettings(delay_ms=10.0),
    ],
    ids=["default", "far-loud-reverberant", "near"],
)


@ROOMS
def test_echo_of_a_piper_reply_is_cancelled_by_more_than_25_db(reply: Reply, room: SimRoomSettings) -> None:
    far = np.concatenate([reply.audio, reply.audio])  # the second time, as on a device that runs on
    echo = echo_of(far, reply.rate, room)
    cleaned, front = cancel(far, reply.rate, echo, FrontEndOptions(echo_delay_ms=round(room.delay_ms)))
    lead = len(reply.audio) * RATE // reply.rate
    assert erle_db(echo[lead:], cleaned[lead:], 0.0) > 25.0
    assert front.stats.frames == len(echo) // 160
    assert 0.0 < front.stats.cpu_per_frame_ms < 2.0  # a tenth of a 10 ms frame, with a wide margin


@ROOMS
@pytest.mark.parametrize("units", [512, 256])
def test_dtln_cancels_a_piper_replys_echo_by_more_than_25_db_from_the_first_reply(
    reply: Reply, room: SimRoomSettings, units: int
) -> None:
    """No adaptive filter to converge: the first reply the canceller ever hears is cancelled (the
    simulated rooms measure 34-42 dB over a whole reply; WebRTC's needs the reply before), by
    either size."""
    echo = echo_of(reply.audio, reply.rate, room)
    cleaned, front = cancel(
        reply.audio,
        reply.rate,
        echo,
        FrontEndOptions(echo_delay_ms=round(room.delay_ms)),
        DtlnCanceller(default_model_dir(), units=units),
    )
    assert erle_db(echo, cleaned, 0.0) > 25.0
    assert front.converged  # trusted at once: nothing to converge
    assert 0.0 < front.stats.cpu_per_frame_ms < 5.0  # in real time with room to spare (0.2-1.8 ms seen)


@CANCELLERS
def test_without_the_reference_nothing_is_cancelled(
    reply: Reply, make: Callable[[], Canceller | None]
) -> None:
    """The mechanism: the canceller needs the far end; fed silence as the reference it removes no echo."""
    echo = echo_of(reply.audio, reply.rate, SimRoomSettings())
    silent = np.zeros_like(reply.audio)
    cleaned, _ = cancel(silent, reply.rate, echo, FrontEndOptions(noise_suppression=False), make())
    assert erle_db(echo, cleaned) < 6.0


def test_the_users_speech_passes_when_nothing_plays() -> None:
    user = ten_digits()
    cleaned, _ = cancel(np.zeros(RATE, np.float32), RATE, user, FrontEndOptions())
    assert abs(frame_level_db(cleaned[RATE:]) - frame_level_db(user[RATE:])) < 3.0


@CANCELLERS
def test_the_users_speech_stands_out_over_the_cancelled_echo(
    reply: Reply, make: Callable[[], Canceller | None]
) -> None:
    """Double talk: user and echo equally loud at the microphone, over a reply the canceller has
    heard one reply of before; after cancelling, what is left is the user's speech (WebRTC's
    suppressor takes a few dB in double talk: the canceller is not bit-exact from run to run), not the echo."""
    far = np.concatenate([reply.audio, reply.audio])
    echo = echo_of(far, reply.rate, SimRoomSettings())
    lead = len(reply.audio) * RATE // reply.rate
    user = ten_digits()[: len(echo) - lead - RATE]
    user = user * 10 ** ((frame_level_db(echo[lead:]) - frame_level_db(user)) / 20)
    mic = echo.copy()
    mic[lead : lead + len(user)] += user
    cleaned, _ = cancel(far, reply.rate, mic, FrontEndOptions(), make())
    span = slice(lead + RATE // 2, lead + len(user))
    alone = user[span.start - lead : span.stop - lead]
    heard = frame_level_db(cleaned[span])
    residue = frame_level_db(cleaned[lead - 3 * RATE : lead])  # the same reply's echo, nobody speaking
    assert heard > residue + 15.0  # the user stands out of what is left of the echo
    assert abs(heard - frame_level_db(alone)) < 6.0  # and is not suppressed with it
    assert heard < frame_level_db(mic[span]) - 1.5  # the echo's share is gone


def test_a_missing_library_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "livekit.rtc", None)
    with pytest.raises(FrontEndUnavailable, match="livekit"):
        EchoCanceller(FrontEndOptions())


def test_a_stalled_or_jumping_reference_is_a_fault() -> None:
    front = FrontEnd(FrontEndOptions())
    block = np.zeros(480, dtype=np.float32)
    for k in range(200):  # 6 s of microphone without any reference
        front.process(block, 100.0 + k * 0.03)
    assert front.fault(106.0) == "no reference from the speaker"
    front.reference(np.zeros(160, np.float32), 106.0, RATE)
    front.process(block, 106.0)
    assert front.fault(106.1) is None
    assert "stopped" in (front.fault(108.0) or "")
    for k in range(8):  # the play time jumps again and again (underruns, replugging)
        front.reference(np.zeros(160, np.float32), 110.0 + k, RATE)
    front.process(block, 117.0)
    assert "jumped" in (front.fault(117.0) or "")


def test_a_converged_canceller_is_judged_by_the_echo_it_removes(reply: Reply) -> None:
    """The mechanism behind "never transcribing its own voice" when the canceller fails silently:
    with the reference of what plays it removes tens of dB and is trusted; fed a reference that is
    not what the speaker plays (the same voice, another sentence: here the reply backwards) it
    removes almost nothing, and that is a fault (half duplex) with its figure; while the user
    speaks (``near_speech``) nothing is judged."""
    far = np.concatenate([reply.audio] * 3)
    echo = echo_of(far, reply.rate, SimRoomSettings())
    _, front = cancel(far, reply.rate, echo, FrontEndOptions(echo_delay_ms=40))
    seen = f"reply {len(reply.audio) / reply.rate:.2f} s: {_state(front)}"
    assert front.converged and (front.removal_db or 0.0) > 20.0, seen
    assert front.fault(front.reference.last_time) is None, seen
    _, wrong = cancel(far[::-1].copy(), reply.rate, echo, FrontEndOptions(echo_delay_ms=40))
    seen = f"reply {len(reply.audio) / reply.rate:.2f} s, reversed reference: {_state(wrong)}"
    assert wrong.converged and wrong.removal_db is not None and wrong.removal_db < 3.0, seen
    assert "removes only" in (wrong.fault(wrong.reference.last_time) or ""), seen
    talking = FrontEnd(FrontEndOptions())
    for k in range(0, len(far) * RATE // reply.rate - 480, 480):  # while the reply plays
        talking.reference(far[k * reply.rate // RATE : (k + 480) * reply.rate // RATE], k / RATE, reply.rate)
        talking.process(echo[k : k + 480], k / RATE, near_speech=True)
    assert talking.converged and talking.removal_db is None, _state(talking)


class WeakCanceller(EchoCanceller):
    """A canceller that removes only about 6 dB, as WebRTC's has been reported to on some hardware
    (the real one's output with half the microphone mixed back: with nobody speaking, the echo)."""

    def process(self, mic: FloatArray, far: FloatArray) -> FloatArray:
        return (super().process(mic, far) + 0.5 * mic).astype(np.float32)


def test_a_weak_canceller_is_measured_weak_and_stays_full_duplex(reply: Reply) -> None:
    """What ``EchoRemoval`` carries to the core: a canceller that removes 6 dB is measured at about
    that, not a fault (the residual-echo gate holds over it), and weak by the core's rule (a
    barge-in over it ducks by ``hearing.duck_weak_db``); the working one is strong."""
    from device.core.rules import Rules

    far = np.concatenate([reply.audio] * 3)
    echo = echo_of(far, reply.rate, SimRoomSettings())
    options = FrontEndOptions(echo_delay_ms=40)
    _, weak = cancel(far, reply.rate, echo, options, WeakCanceller(options))
    removed = weak.removal_db
    assert weak.converged and removed is not None and 4.0 < removed < 8.0, _state(weak)
    assert weak.fault(weak.reference.last_time) is None, _state(weak)
    _, working = cancel(far, reply.rate, echo, options)
    rules = Rules()
    assert rules.weak_canceller(removed) and not rules.weak_canceller(working.removal_db), _state(working)
    assert rules.duck_depth(removed) == HearingSettings().duck_weak_db
    assert rules.duck_depth(working.removal_db) == HearingSettings().duck_db


def _state(front: FrontEnd) -> str:
    """What a failed assertion on ``front`` should say (the test above failed once, unexplained)."""
    return (
        f"converged={front.converged} removal_db={front.removal_db} "
        f"fault={front.fault(front.reference.last_time)!r} jumps={front.timing_jumps} "
        f"far_active_frames={front.stats.far_active_frames}"
    )


def test_a_microphone_captured_past_the_reference_is_a_fault_until_they_meet_again() -> None:
    """The clocks disagree (a misreported latency, a stalled sink): the far end of what the
    microphone captures is not in the reference, so its echo would pass uncancelled and unguarded."""
    front = FrontEnd(FrontEndOptions())
    far = np.zeros(160, np.float32)
    for k in range(350):  # 3.5 s of the speaker's reference, from t = 100 s
        front.reference(far, 100.0 + k * 0.01, RATE)
    block = np.zeros(480, dtype=np.float32)
    for k in range(10):  # 0.3 s captured a second after the newest reference: not yet a fault
        front.process(block, 104.5 + k * 0.03)
    assert front.fault(104.8) is None
    for k in range(10, 20):
        front.process(block, 104.5 + k * 0.03)
    reason = front.fault(104.9) or ""
    assert "does not reach" in reason and "+1" in reason, reason  # about 1000 ms past it
    for k in range(200):  # the reference catches up: the fault clears
        front.reference(far, 103.5 + k * 0.01, RATE)
    front.process(block, 105.1)
    assert front.fault(105.2) is None


def test_in_real_time_the_simulated_microphone_hears_the_speaker_and_the_front_end_cancels_it() -> None:
    """Sink → reference tap → simulated room → simulated microphone → front end (worker thread)."""
    rng = np.random.default_rng(0)

    def render(out: FloatArray, t0: float) -> list[PlaybackMark]:
        out[:] = rng.standard_normal(len(out)) * 0.05
        return []

    room = SimRoomSettings()
    echo = RoomEcho(room, RATE)
    raw: list[FloatArray] = []
    cleaned: list[FloatArray] = []
    mic = SimulatedMicrophone(RATE, 30, echo=echo)
    source = FrontEndSource(mic, FrontEnd(FrontEndOptions(echo_delay_ms=40)))
    sink = NullSink(rate=22050, block_ms=10)
    faults: list[str] = []
    source._on_fault = faults.append
    sink.add_reference_tap(source.front.reference)
    sink.add_reference_tap(echo.on_rendered)
    sink.add_reference_tap(lambda block, t, rate: None)
    sink.open(render, lambda ok, detail: None)
    try:
        assert source.open(cleaned.append, lambda detail: None) == RATE
        time.sleep(2.5)
        raw.append(echo.take(RATE, time.time() - 1.2))
    finally:
        source.close()
        sink.close()
    out = np.concatenate(cleaned)
    assert len(out) > 1.5 * RATE
    heard_db = frame_level_db(raw[0])
    assert heard_db > -40.0  # the microphone hears the speaker
    assert frame_level_db(out[-RATE:]) < heard_db - 15.0
    assert faults == []
    assert source.duplex == "half"  # 2.5 s of the speaker: still converging (5 s needed)


def test_the_canceller_counts_as_converged_after_five_seconds_of_the_speaker(reply: Reply) -> None:
    echo = echo_of(reply.audio, reply.rate, SimRoomSettings())
    _, front = cancel(reply.audio, reply.rate, echo, FrontEndOptions())
    played = front.stats.far_active_frames
    assert 0.5 * len(reply.audio) / reply.rate * 100 < played <= len(echo) // 160
    assert front.converged == (played >= 500)
    long_far = np.concatenate([reply.audio] * 3)
    long_echo = echo_of(long_far, reply.rate, SimRoomSettings())
    _, front = cancel(long_far, reply.rate, long_echo, FrontEndOptions())
    assert front.converged


def _listening(
    reply: Reply, user: FloatArray | None
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float]:
    """(cleaned, echo, microphone, reference at 16 kHz, lead s): a reply heard after another one,
    ``user`` speaking 1 s into it."""
    far = np.concatenate([reply.audio, reply.audio])
    echo = echo_of(far, reply.rate, SimRoomSettings())
    lead = len(reply.audio) / reply.rate
    mic = echo + (np.random.default_rng(0).standard_normal(len(echo)) * 10 ** (-65 / 20)).astype(np.float32)
    if user is not None:
        at = int((lead + 1.0) * RATE)
        mic[at : at + len(user)] += user[: len(mic) - at]
    cleaned, _ = cancel(far, reply.rate, mic, FrontEndOptions(echo_delay_ms=40))
    return cleaned, echo, mic, far_at_16k(far, reply.rate, len(mic)), lead


def test_through_the_gate_the_vad_hears_no_echo_even_from_a_6_db_canceller(reply: Reply) -> None:
    cleaned, echo, mic, far16, lead = _listening(reply, None)
    weak = cleaned + 0.5 * echo  # a canceller that removes only 6 dB
    settings = HearingSettings()
    assert detections(
        weak, mic, far16, "vad", settings, lead
    ).starts  # without the gate: its own voice is "speech"
    assert detections(weak, mic, far16, "gate", settings, lead).starts == []
    assert detections(cleaned, mic, far16, "gate", settings, lead).starts == []


def test_through_the_gate_the_user_talking_over_the_reply_is_heard_at_once(reply: Reply) -> None:
    digits = ten_digits()
    echo = echo_of(np.concatenate([reply.audio, reply.audio]), reply.rate, SimRoomSettings())
    user = digits * 10 ** ((frame_level_db(echo[len(echo) // 2 :]) - frame_level_db(digits)) / 20)
    cleaned, _, mic, far16, lead = _listening(reply, user.astype(np.float32))
    found = detections(cleaned, mic, far16, "gate", HearingSettings(), lead).starts
    onset = lead + 1.0
    assert found and onset - 0.05 <= found[0] <= onset + 0.4


def test_a_user_who_speaks_just_after_a_reply_resumes_is_heard_once_its_onset_window_is_over(
    reply: Reply,
) -> None:
    """A reply, a pause longer than the guard's hold, the next sentence: the user starts 0.7 s
    into it. The runtime's guard (the stricter start behind the gate) reports them at once after
    the 400 ms onset window; the window as it was in effect before (1.2 s) gates them throughout."""
    gap = np.zeros(int(1.2 * reply.rate), np.float32)
    far = np.concatenate([reply.audio, gap, reply.audio])
    echo = echo_of(far, reply.rate, SimRoomSettings())
    resumes = (len(reply.audio) + len(gap)) / reply.rate
    digits = ten_digits()
    user = digits * 10 ** ((frame_level_db(echo[int(resumes * RATE) :]) - frame_level_db(digits)) / 20)
    mic = echo + (np.random.default_rng(0).standard_normal(len(echo)) * 10 ** (-65 / 20)).astype(np.float32)
    at = int((resumes + 0.7) * RATE)
    mic[at : at + len(user)] += user[: len(mic) - at]
    cleaned, _ = cancel(far, reply.rate, mic, FrontEndOptions(echo_delay_ms=40))
    far16 = far_at_16k(far, reply.rate, len(mic))
    lead = len(reply.audio) / reply.rate
    onset = at / RATE
    found = detections(cleaned, mic, far16, "strict+gate", HearingSettings(), lead).starts
    assert found and onset - 0.05 <= found[0] <= onset + 0.5
    before = detections(cleaned, mic, far16, "strict+gate@1200", HearingSettings(), lead).starts
    assert not before or before[0] > onset + 0.5
