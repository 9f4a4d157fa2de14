"""Full duplex end to end: the real daemon in the simulated room (its microphone hears its own speaker
through ``sim_room``) with each in-process canceller (WebRTC's, then DTLN-aec), over the real broker,
with real Whisper and Piper.

The conformance scenarios ``no_false_barge_in`` and ``barge_in`` run against it, in that order (in 2
of 5 full-suite runs the canceller was degraded after the barge-in's double talk -- median removal
41 dB against 63, low decile -0.4 dB against 42 -- and the device heard itself in 14-15 of the next
20 replies; never in isolation: noted in the issue); then the reply's WAV (what the sink rendered) and
its gain file show it was ducked while the user spoke over it and came back after.

`make test` runs this module after the rest, alone (marker ``alone``): beside another pytest worker
the attempts at "Actually, stop." failed about half the time ("actually start.", "actually." |
"stop." 0.29) and once all five of one CI run (2026-12-05, an AMD EPYC), against about a quarter
with the machine to itself.
"""

from __future__ import annotations

import re
import uuid
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.runner import voice_speaker
from agent_link.harness.scenario import ScenarioContext, run_scenario, summary
from agent_link.harness.scenarios import select
from agent_link.harness.user_voice import UserVoice
from audio.hearing.settings import HearingSettings
from tests.broker import Mosquitto
from tests.e2e.daemon import DeviceDaemon

pytestmark = pytest.mark.alone  # `make test` runs it after the rest, with the machine to itself (Makefile)

FRAME_S = 0.02
DUCK_HOLD_S = HearingSettings().duck_hold_ms / 1000.0
DUCK_DB = HearingSettings().duck_db
DUCK_WEAK_DB = HearingSettings().duck_weak_db


@pytest.fixture(scope="module", params=["webrtc", "dtln"])
def daemon(
    e2e_broker: Mosquitto, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[DeviceDaemon]:
    """The real daemon in simulation, hearing itself through the simulated room, echo cancelled by
    each in-process canceller in turn (WebRTC's, DTLN-aec)."""
    device = DeviceDaemon(
        e2e_broker.url,
        f"e2e-{uuid.uuid4().hex[:8]}",
        tmp_path_factory.mktemp("device"),
        settings=(
            "sim_room.enabled=true",
            f"hearing.echo_cancellation={request.param}",
            "device.sim_speaker=wav",
        ),
    )
    device.start()
    try:
        yield device
    finally:
        code = device.stop()
        print(f"daemon exit code {code}; log tail:\n{device.log(40)}")


def _duplex_story(daemon: DeviceDaemon) -> str:
    """What the daemon said of its echo canceller since it started."""
    story = daemon.diagnosis("echo cancellation", "echo canceller", "duplex", "Barge-in", "Simulated room")
    return f"echo cancellation over the whole run:\n{story}"


def _duck_depth(daemon: DeviceDaemon, utterance: str) -> float:
    """The depth the device said it ducked the reply by for the barge-in ``utterance``."""
    line = daemon.diagnosis(f"Barge-in: {utterance}")
    found = re.search(r"ducked by (-?[\d.]+) dB", line)
    assert found, f"no ducking said for {utterance}: {line!r}"
    return float(found.group(1))


def _context(harness: AgentHarness, voice: UserVoice, lines: list[str]) -> ScenarioContext:
    return ScenarioContext(
        harness=harness, say_to_device=voice_speaker(harness, voice), timeout=25.0, log=lines.append
    )


def _levels_db(path: str) -> tuple[np.ndarray, int]:
    """20 ms frame levels (dBFS) of a 16-bit mono WAV, and its rate."""
    with wave.open(path, "rb") as w:
        rate = w.getframerate()
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64) / 32768.0
    n = int(rate * FRAME_S)
    frames = samples[: len(samples) // n * n].reshape(-1, n)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12), rate


def _gains_db(path: Path, rate: int) -> np.ndarray:
    """The WAV sink's gain file as one gain (dB) per 20 ms frame of the reply's WAV (``FRAME_S``)."""
    records = np.frombuffer(path.read_bytes(), dtype=np.dtype([("frames", "<u4"), ("gain", "<f4")]))
    per_sample = np.repeat(records["gain"].astype(np.float64), records["frames"])
    n = int(rate * FRAME_S)
    frames = per_sample[: len(per_sample) // n * n].reshape(-1, n).min(axis=1)
    return 20 * np.log10(np.maximum(frames, 1e-6))


def _loud(levels: np.ndarray, start_s: float, end_s: float) -> float:
    """The level of the reply's speech in the span (the median of its frames above -60 dBFS:
    pauses between sentences do not count), in dB."""
    span = levels[int(start_s / FRAME_S) : int(end_s / FRAME_S)]
    active = span[span > -60.0]
    assert len(active) >= 10, (
        f"the reply barely sounds in {start_s:.2f}..{end_s:.2f} s ({len(active)} frames)"
    )
    return float(np.median(active))


@pytest.mark.asyncio(loop_scope="module")
async def test_twenty_replies_with_nobody_speaking_start_no_utterance(
    harness: AgentHarness, daemon: DeviceDaemon, user_voice: UserVoice
) -> None:
    lines: list[str] = []
    start = len(harness.events)
    result = await run_scenario(select(["no_false_barge_in"])[0], _context(harness, user_voice, lines))
    report = "\n".join(lines) + "\n" + summary([result])
    assert result.ok, f"{report}\ndaemon log:\n{daemon.log(80)}\n{_duplex_story(daemon)}"
    assert not any("skipped" in line for line in lines), report
    # The check means something only if the device listened while it spoke: most replies must have
    # started in full duplex (a timing jump on a loaded machine makes it re-converge for a while).
    changes = [(s.ts or 0.0, s.duplex) for s in harness.statuses]
    starts = [e.ts for e in harness.since(start) if e.type == "playback_started" and "quiet" in e.say]
    full = sum(1 for t in starts if [d for ts, d in changes if ts <= t][-1:] == ["full"])
    assert len(starts) == 20 and full >= 12, f"only {full} of {len(starts)} replies started in full duplex"
    print(f"{full} of 20 replies started in full duplex")


@pytest.mark.asyncio(loop_scope="module")
async def test_barge_in_over_a_long_reply_is_heard_and_ducks_it(
    harness: AgentHarness, daemon: DeviceDaemon, user_voice: UserVoice
) -> None:
    lines: list[str] = []
    start = len(harness.events)
    result = await run_scenario(select(["barge_in"])[0], _context(harness, user_voice, lines))
    report = "\n".join(lines) + "\n" + summary([result])
    assert result.ok, f"{report}\ndaemon log:\n{daemon.log(80)}\n{_duplex_story(daemon)}"
    assert not any("skipped" in line for line in lines), report
    events = harness.since(start)
    attempts = [line for line in lines if "attempt " in line]
    print("\n".join(attempts))
    heard = {e.utterance: e for e in events if e.type == "transcript"}
    barge_ins = [e for e in events if e.type == "speech_started" and e.over_playback]
    # The attempt that was understood is the last (an earlier one was ducked too).
    started = [e for e in barge_ins if e.utterance in heard][-1]
    ended = next(e for e in events if e.type == "speech_ended" and e.utterance == started.utterance)
    transcript = heard[started.utterance]
    reply = next(e for e in events if e.type == "playback_started" and e.say.startswith("activity"))
    finished = next(e for e in events if e.type == "playback_finished" and e.say == reply.say)
    assert finished.interrupted and finished.ts > transcript.ts
    levels, rate = _levels_db(str(daemon.state_dir / "speech" / f"{reply.say}.wav"))
    onset = started.ts - reply.ts
    # The utterance's end is reported (and the ducking ends) after the end-of-turn pause, once the
    # end-of-turn model judged it: about when the decode of its transcript began.
    end = max(ended.ts, transcript.ts - transcript.decode_ms / 1000) - reply.ts
    # Back to full volume once the duck's hold after the utterance ran out (hearing.duck_hold_ms).
    held = ended.ts + DUCK_HOLD_S
    back, stop = max(transcript.ts + 0.5, held + 0.3) - reply.ts, finished.ts - reply.ts - 0.1
    first = barge_ins[0].ts - reply.ts
    before = _loud(levels, max(0.0, first - 4.0), first)  # the 4 s before (or since the reply began)
    # Ducked from when the start was reported (the stricter start: within ~0.5 s of the onset).
    ducked = _loud(levels, onset + 0.6, max(end, onset + 1.2))
    gains = _gains_db(daemon.state_dir / "speech" / f"{reply.say}.gain", rate)
    ducked_gain = float(np.median(gains[int((onset + 0.6) / FRAME_S) : int(max(end, onset + 1.2) / FRAME_S)]))
    after_gain = float(np.min(gains[int(back / FRAME_S) : int(stop / FRAME_S)]))
    print(
        f"reply level before {before:.1f} dB, while the user spoke {ducked:.1f} dB; rendered at "
        f"{ducked_gain:.1f} dB then, {after_gain:.1f} dB after the hold"
    )
    assert before - ducked >= 6.0, f"not ducked: {before:.1f} dB before, {ducked:.1f} dB over the user"
    # The reply's own loudness differs by ±4-7 dB between 1 s spans, so "back to full volume" is read
    # off the gain the sink rendered each span at (the WAV's gain file), not off the speech levels.
    # Rendered at the configured depth while the user spoke (the median frame: the ramps are short).
    # The depth is the one the device chose for its canceller's measured strength (its log says it:
    # hearing.duck_db over a strong canceller, hearing.duck_weak_db over a weak or unmeasured one).
    depth = _duck_depth(daemon, started.utterance)
    assert depth in (DUCK_DB, DUCK_WEAK_DB), depth
    assert abs(ducked_gain - depth) <= 2.0 and after_gain >= -0.5, (ducked_gain, depth, after_gain)
