"""The conformance suite, part 1: waking, sleeping, speaking and hearing.

Together with ``conformance_commands`` it covers every device-side behaviour the companion agent
relies on. Each scenario starts from a reset device (asleep, sleep allowed) and leaves it asleep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from agent_link.harness.client import new_id
from agent_link.harness.scenario import ScenarioRun, scenario

GREETING = "[happy] Hi! How are you doing today?"
GOODBYE = (
    "[happy] It was lovely talking with you today. I hope you have a restful night. "
    "Good night, and tap me when you want to talk again."
)
LONG_REPLY = (
    "Let me tell you a long story about a little robot. It lived in a small house by the sea. "
    "Every morning it watched the boats sail out. Every evening it counted the stars one by one."
)


@scenario("wake_greeting", "a tap wakes the device (wake) and the greeting plays")
async def wake_greeting(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.reset()
    async with run.step("tap → wake(source=sim)"):
        await run.tap()
        await h.wait_for("wake", t, source="sim")
    async with run.step("status: awake (not asleep)"):
        await h.wait_status(state="idle", timeout=t)
    say = new_id("greet")
    async with run.step("greeting plays: playback_started"):
        await h.say(GREETING, say_id=say)
        await h.wait_for("playback_started", t, say=say)
    async with run.step("greeting finishes: playback_finished(interrupted=False)"):
        await h.wait_for("playback_finished", t, say=say, interrupted=False)
    async with run.step("status back to idle"):
        await h.wait_status(state="idle", timeout=t)
    await run.reset()


@scenario("tap_while_awake", "a tap while awake is a tap event, not a second wake")
async def tap_while_awake(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    async with run.step("tap → tap(source=sim)"):
        await run.tap()
        await h.wait_for("tap", t, source="sim")
    async with run.step("no second wake"):
        await h.expect_none("wake", within=1.0)
    await run.reset()


@scenario("goodbye_then_sleep", "sleep after a goodbye: asleep only after the goodbye finished playing")
async def goodbye_then_sleep(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    say = new_id("bye")
    await h.say(GOODBYE, say_id=say)
    await h.sleep()
    async with run.step("goodbye plays to its end"):
        await h.wait_for("playback_started", t, say=say)
        finished = await h.wait_for("playback_finished", 2 * t, say=say, interrupted=False)
    async with run.step("asleep(reason=command) after it"):
        asleep = await h.wait_for("asleep", t, reason="command")
        h.assert_sequence([("playback_finished", {"say": say}), "asleep"])
    async with run.step("asleep.ts ≥ playback_finished.ts"):
        assert asleep.ts >= finished.ts, f"asleep at {asleep.ts:.3f} before playback ended {finished.ts:.3f}"
    async with run.step("status: asleep"):
        await h.wait_status(state="asleep", timeout=t)


@scenario("goodbye_tag", "a [sleep] tag: asleep(reason=tag) after the reply finished playing")
async def goodbye_tag(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    say = new_id("bye")
    async with run.step("reply with [sleep] plays to its end"):
        await h.say("[happy] Good night! Tap me when you want to talk again. [sleep]", say_id=say)
        finished = await h.wait_for("playback_finished", 2 * t, say=say, interrupted=False)
    async with run.step("asleep(reason=tag), ts ≥ playback_finished.ts"):
        asleep = await h.wait_for("asleep", t, reason="tag")
        assert asleep.ts >= finished.ts, f"asleep at {asleep.ts:.3f} before playback ended {finished.ts:.3f}"
    async with run.step("status: asleep"):
        await h.wait_status(state="asleep", timeout=t)


@scenario("idle_sleep", "sleep with nothing queued: asleep at once")
async def idle_sleep(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    async with run.step("sleep → asleep(reason=command) at once (within 5 s)"):
        sent = time.time()
        await h.sleep()
        asleep = await h.wait_for("asleep", 5.0, reason="command")
        assert asleep.ts - sent < 5.0, f"asleep {asleep.ts - sent:.2f} s after the command"
    async with run.step("status: asleep"):
        await h.wait_status(state="asleep", timeout=t)
    async with run.step("sleep while asleep: no second asleep"):
        await h.sleep()
        await h.expect_none("asleep", within=1.5)


@scenario("activity_blocks_sleep", "sleep_allowed false: [sleep] tag and sleep ignored; true: honoured")
async def activity_blocks_sleep(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    async with run.step("sleep_allowed false → status sleep_allowed=false"):
        await h.sleep_allowed(False)
        await h.wait_status(sleep_allowed=False, timeout=t)
    say = new_id("tag")
    async with run.step("reply with [sleep] → sleep_ignored(via=tag, say)"):
        await h.say("[happy] Good night! [sleep]", say_id=say)
        await h.wait_for("playback_finished", 2 * t, say=say)
        await h.wait_for("sleep_ignored", t, via="tag", say=say)
    async with run.step("sleep command → sleep_ignored(via=command)"):
        await h.sleep()
        await h.wait_for("sleep_ignored", t, via="command")
    async with run.step("still awake: no asleep"):
        await h.expect_none("asleep", within=1.0)
        await h.wait_status(state="idle", timeout=t)
    async with run.step("sleep_allowed true → sleep honoured (asleep)"):
        await h.sleep_allowed(True)
        await h.wait_status(sleep_allowed=True, timeout=t)
        await h.sleep()
        await h.wait_for("asleep", t, reason="command")


@scenario(
    "speech_behind_goodbye",
    "a reply queued behind a [sleep] goodbye is never played; with sleep_allowed false it plays after it",
)
async def speech_behind_goodbye(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    bye, late = new_id("bye"), new_id("late")
    async with run.step("goodbye with [sleep], then another reply at once"):
        await h.say("Good night! [sleep]", say_id=bye)
        await h.say("This was sent too late to be heard.", say_id=late)
    async with run.step("goodbye plays to its end → asleep(reason=tag)"):
        await h.wait_for("playback_finished", 2 * t, say=bye, interrupted=False)
        await h.wait_for("asleep", t, reason="tag")
    async with run.step("the late reply: playback_finished(interrupted=true), never started"):
        await h.wait_for("playback_finished", t, say=late, interrupted=True)
        await asyncio.sleep(0.5)
        started = [ev for ev in h.since() if ev.type == "playback_started" and ev.say == late]
        assert not started, f"the late reply started: {started}"
    await run.wake()
    async with run.step("sleep_allowed false: the reply behind the goodbye plays after it"):
        await h.sleep_allowed(False)
        await h.wait_status(sleep_allowed=False, timeout=t)
        bye, game = new_id("bye"), new_id("game")
        await h.say("Good night! [sleep]", say_id=bye)
        await h.say("Oh wait, let us finish the game first.", say_id=game)
        await h.wait_for("sleep_ignored", 2 * t, via="tag", say=bye)
        started = await h.wait_for("playback_started", 2 * t, say=game)
        await h.wait_for("playback_finished", 2 * t, say=game, interrupted=False)
        finished = next(ev for ev in h.since() if ev.type == "playback_finished" and ev.say == bye)
        assert started.ts >= finished.ts, "the second reply started before the goodbye ended"
    await run.reset()


@scenario(
    "activity_starts_during_goodbye",
    "sleep_allowed checked when the sleep takes effect: an activity starting mid-goodbye keeps it awake",
)
async def activity_starts_during_goodbye(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    say = new_id("bye")
    async with run.step("goodbye + sleep, then sleep_allowed false while it plays"):
        await h.say(GOODBYE, say_id=say)
        await h.sleep()
        await h.wait_for("playback_started", t, say=say)
        await h.sleep_allowed(False)
    async with run.step("goodbye finishes → sleep_ignored(via=command), no asleep"):
        await h.wait_for("playback_finished", 2 * t, say=say)
        await h.wait_for("sleep_ignored", t, via="command")
        await h.expect_none("asleep", within=1.0)
    await run.reset()


@scenario("stop_mid_reply", "stop while speaking: playback_finished(interrupted=true), queued speech dropped")
async def stop_mid_reply(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    first, queued = new_id("long"), new_id("queued")
    async with run.step("long reply starts playing"):
        await h.say(LONG_REPLY, say_id=first)
        await h.say("[happy] This reply is queued behind it.", say_id=queued)
        await h.wait_for("playback_started", t, say=first)
    async with run.step("stop → playback_finished(interrupted=true) long before the reply's end"):
        await h.stop()
        await h.wait_for("playback_finished", 5.0, say=first, interrupted=True)
    async with run.step("queued reply never plays"):
        await h.expect_none("playback_started", within=1.5, say=queued)
    async with run.step("status: idle"):
        await h.wait_status(state="idle", timeout=t)
    await run.reset()


@scenario("streamed_reply", "several say chunks with one say id: one playback_started, one playback_finished")
async def streamed_reply(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    say = new_id("stream")
    async with run.step("3 chunks, final on the last"):
        await h.say("[happy] Here is the first part of my answer.", say_id=say, final=False)
        await h.say(" And here comes the second part,", say_id=say, final=False)
        await h.say(" and this is the end.", say_id=say, final=True)
        await h.wait_for("playback_started", t, say=say)
    async with run.step("one playback_finished(interrupted=false)"):
        await h.wait_for("playback_finished", 3 * t, say=say, interrupted=False)
    async with run.step("exactly one playback_started and one playback_finished"):
        await h.expect_none("playback_started", within=1.0, say=say)
        starts = [e for e in h.since() if e.type == "playback_started" and e.say == say]
        ends = [e for e in h.since() if e.type == "playback_finished" and e.say == say]
        assert (len(starts), len(ends)) == (1, 1), f"{len(starts)} starts, {len(ends)} finishes"
    await run.reset()


@scenario("typed_text", "sim/text → transcript(source=typed, confidence=1)")
async def typed_text(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    async with run.step("typed text → transcript typed, confidence 1"):
        await h.sim_text("hello robot")
        event = await h.wait_for("transcript", t, source="typed")
        assert event.text == "hello robot", f"text {event.text!r}"
        assert event.confidence == 1.0, f"confidence {event.confidence}"
    async with run.step("no speech_started for typed input"):
        assert not [e for e in h.since() if e.type == "speech_started"]
    await run.reset()


@scenario("voice_transcript", "speech fed as sim/audio → speech_started, speech_ended, transcript(voice)")
async def voice_transcript(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    if run.ctx.say_to_device is None:
        run.note("skipped: no voice to speak with (say_to_device not set)")
        return
    await run.wake()
    async with run.step("spoken 'What is the weather like today?' → speech_started"):
        await run.ctx.say_to_device("What is the weather like today?")
        started = await h.wait_for("speech_started", t)
    async with run.step("speech_ended and transcript for the same utterance"):
        await h.wait_for("speech_ended", t, utterance=started.utterance)
        heard = await h.wait_for(("transcript", {"utterance": started.utterance}), 2 * t)
        run.note(f"heard {heard.text!r} confidence {heard.confidence:.2f} decode {heard.decode_ms} ms")
    async with run.step("transcript: source voice, words right, confidence ≥ 0.4"):
        assert heard.source == "voice", heard.source
        assert "weather" in heard.text.lower(), f"text {heard.text!r}"
        assert heard.confidence >= 0.4, f"confidence {heard.confidence:.2f}"
    await run.reset()


def _closes(utterance: str) -> Callable[[Any], bool]:
    """Matches the ``transcript`` or ``utterance_failed`` closing ``utterance``."""
    return lambda e: e.type in ("transcript", "utterance_failed") and e.utterance == utterance


async def _spoken_turn(run: ScenarioRun, text: str) -> tuple[Any, Any, Any]:
    """Say ``text``; (speech_started, speech_ended, closing event) of the utterance it opened."""
    h, t = run.h, run.timeout
    assert run.ctx.say_to_device is not None
    await run.ctx.say_to_device(text)
    started = await h.wait_for("speech_started", t)
    ended = await h.wait_for("speech_ended", t, utterance=started.utterance)
    closing = await h.wait_for(_closes(started.utterance), 2 * t)
    return started, ended, closing


@scenario("turn_end_complete", "a finished sentence ends at the short pause: speech_ended(end=turn_complete)")
async def turn_end_complete(run: ScenarioRun) -> None:
    h = run.h
    if run.ctx.say_to_device is None:
        run.note("skipped: no voice to speak with (say_to_device not set)")
        return
    await run.wake()
    async with run.step(
        "'What is the weather like today?' → speech_ended end=turn_complete, then transcript"
    ):
        _, ended, closing = await _spoken_turn(run, "What is the weather like today?")
        assert ended.end is not None, "speech_ended without end (a v1 device)"
        assert ended.end == "turn_complete", (
            f"end={ended.end!r}: the end-of-turn model did not end a finished sentence "
            "(or hearing.turn_detector = 'silence')"
        )
        assert closing.type == "transcript", f"{closing.type} {getattr(closing, 'reason', '')}"
        run.note(f"heard {closing.text!r}; speech_ended → transcript {1000 * (closing.ts - ended.ts):.0f} ms")
    async with run.step("one utterance for the sentence"):
        await h.expect_none("speech_started", within=1.0)
    await run.reset()


@scenario("turn_end_silence", "an unfinished sentence waits for the fallback: one utterance, end=silence")
async def turn_end_silence(run: ScenarioRun) -> None:
    h = run.h
    if run.ctx.say_to_device is None:
        run.note("skipped: no voice to speak with (say_to_device not set)")
        return
    await run.wake()
    async with run.step("'I would like to' (trails off) → speech_ended end=silence, then transcript"):
        started, ended, closing = await _spoken_turn(run, "I would like to")
        assert ended.end == "silence", f"end={ended.end!r} for a sentence cut off on 'to'"
        assert closing.type == "transcript", f"{closing.type} {getattr(closing, 'reason', '')}"
        run.note(f"heard {closing.text!r}")
    async with run.step("no second utterance"):
        await h.expect_none("speech_started", within=1.0)
        assert [e.utterance for e in h.since() if e.type == "speech_started"] == [started.utterance]
    await run.reset()


MAX_LENGTH_TEXT = (
    "and then we walked along the river and the little dog ran after every bird it saw and my "
    "sister laughed and called it back again and again until the sun went down behind the hills "
    "and we all walked home together singing the songs our grandmother taught us long ago"
)


@scenario("turn_end_max_length", "speech longer than the maximum: speech_ended(end=max_length), then more")
async def turn_end_max_length(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    limit = run.ctx.max_utterance_s
    if run.ctx.say_to_device is None or limit is None:
        run.note("skipped: needs a voice and the device's hearing.max_utterance_ms (max_utterance_s)")
        return
    await run.wake()
    async with run.step(
        f"a long run-on sentence → the first utterance ends at {limit:.0f} s: end=max_length"
    ):
        await run.ctx.say_to_device(MAX_LENGTH_TEXT)
        started = await h.wait_for("speech_started", t)
        ended = await h.wait_for("speech_ended", limit + t, utterance=started.utterance)
        assert ended.end == "max_length", f"end={ended.end!r} after {ended.audio_ms} ms"
        assert ended.audio_ms >= 1000 * limit - 500, f"ended after {ended.audio_ms} ms"
    async with run.step("the speech that goes on is the next utterance, and both are closed"):
        nxt = await h.wait_for("speech_started", t)
        for uid in (started.utterance, nxt.utterance):
            await h.wait_for(_closes(uid), 3 * t)
    await run.reset()


@scenario("mumble_heard_poorly", "a quiet mumble in noise is never a confident transcript")
async def mumble_heard_poorly(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    if run.ctx.mumble_to_device is None:
        run.note("skipped: no voice to mumble with (mumble_to_device not set)")
        return
    await run.wake()
    async with run.step("mumble → no speech, utterance_failed, or transcript with confidence < 0.4"):
        await run.ctx.mumble_to_device("maybe we could um do the thing")
        try:
            started = await h.wait_for("speech_started", 6.0)
        except AssertionError:
            run.note("not detected as speech")
            return
        closing = await h.wait_for(
            lambda e: e.type in ("transcript", "utterance_failed") and e.utterance == started.utterance, 2 * t
        )
        if closing.type == "transcript":
            run.note(f"heard {closing.text!r} confidence {closing.confidence:.2f}")
            assert closing.confidence < 0.4, (
                f"mumble heard confidently: {closing.text!r} {closing.confidence:.2f}"
            )
        else:
            run.note(f"utterance_failed {closing.reason}")
    await run.reset()
