"""The demo driver: a whole spoken conversation with a simulated device, without a microphone.

``run_demo(harness)`` runs the stand-in companion against the device and plays the user: a
``sim/tap`` wakes the face, then each user line is synthesised with Piper and fed as ``sim/audio``
through the device's real VAD and Whisper — only after the device finished speaking. One turn is
a quiet mumble that must be rejected (not heard, failed, or confidence < 0.4); an activity title
heard garbled ("memory gain") gets "do you mean ...?", answered with a yes; inside the memory game
a goodbye is answered with "shall we stop?" and a stray ``sleep`` is ignored by the device; then
a barge-in: story time starts and the user says "Actually, stop." over its long opening -- the
device reports ``speech_started`` ``over_playback``, ducks the reply and the face listens; the
companion decides to stop the reply -- and the final goodbye puts the face to sleep. Prints a live
log and a summary with latencies.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_link.harness.brain import Mode
from agent_link.harness.client import AgentHarness, HarnessTimeout
from agent_link.harness.companion import CompanionAgent, make_brain
from agent_link.harness.companion_settings import CompanionSettings
from agent_link.harness.matching import describe
from agent_link.harness.user_voice import UserVoice
from agent_link.protocol.messages import SpeechEndedEvent, StatusMessage


@dataclass(frozen=True)
class UserLine:
    """One user turn: ``kind`` is ``voice`` (clear), ``mumble`` (must be rejected) or ``barge_in``
    (clear, said over the reply to the line before)."""

    kind: str
    text: str
    note: str = ""


SCRIPT: tuple[UserLine, ...] = (
    UserLine("voice", "I'm doing well, thank you."),
    UserLine("mumble", "maybe we could um do the thing", "a quiet mumble: must be rejected"),
    UserLine("voice", "Let's do the memory game."),
    UserLine("voice", "Apple, river, chair."),
    UserLine("voice", "Good night.", "a goodbye inside the activity"),
    UserLine("voice", "Yes, please."),
    UserLine("voice", "Let's do story time.", "a long reply follows"),
    UserLine("barge_in", "Actually, please stop the story.", "over the story's opening"),
    UserLine("voice", "No thanks. Good night."),
)
"""The user's side of the demo conversation."""

BARGE_IN_AFTER_S = 1.0
"""How far into the reply the user starts talking over it, in seconds."""

AGAIN = UserLine("voice", "Stop the story, please.", "said again: the interruption was not taken as a stop")
"""Said when the companion did not take the interruption as a stop (heard garbled over the echo)."""

STOP_YES = UserLine(
    "voice", "Yes, stop it.", "answering 'shall we stop ...?': the interruption was heard poorly"
)
"""Said when the companion, unsure of the interruption, asks whether to stop the activity."""

CONFIRM = UserLine("voice", "Yes.", "answering 'do you mean ...?'")
"""Said when the companion asks whether an activity is the one meant (a title heard garbled)."""


@dataclass
class TurnResult:
    """What happened to one user line."""

    line: UserLine
    heard: str = ""
    confidence: float | None = None
    outcome: str = ""
    end_to_transcript_ms: float | None = None
    end: str | None = None
    """``speech_ended.end``: why the device ended the utterance (v1.1; None if not said)."""
    reply_to_audio_ms: float | None = None


def barge_in_outcome(closing: Any, stopped: bool, min_confidence: float) -> tuple[str, str | None]:
    """What became of a line said over a reply, from the event that closed its utterance
    (``transcript`` or ``utterance_failed``) and whether the companion stopped the reply for it:
    (the summary's outcome, a problem or None)."""
    if stopped:
        return "heard over the reply; the companion stopped it", None
    if closing.type != "transcript":
        return f"heard over the reply, then failed: {closing.reason}", str(closing.reason)
    if float(closing.confidence) < min_confidence:
        return (
            f"heard over the reply, poorly (confidence {float(closing.confidence):.2f}): the companion let "
            "the reply go on",
            None,
        )
    return "heard over the reply (it had ended before the companion stopped it)", None


@dataclass
class DemoResult:
    """The whole run: turns, problems found and timings."""

    turns: list[TurnResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


class DemoDriver:
    """Plays the user against a device while a ``CompanionAgent`` plays the agent."""

    def __init__(self, harness: AgentHarness, voice: UserVoice, log: Callable[[str], None] = print) -> None:
        self.h = harness
        self.voice = voice
        self.log = log
        self.t0 = time.time()
        self.agent = CompanionAgent(harness, make_brain(CompanionSettings(), llm=False), log=self._log)
        self.result = DemoResult()
        self._state: str | None = None

    def _log(self, text: str) -> None:
        self.log(f"{time.time() - self.t0:6.2f}s {text}")

    def _show(self, item: Any) -> None:
        if isinstance(item, StatusMessage):
            if item.state != self._state:
                self._log(f"  state {self._state} → {item.state} (sleep_allowed={item.sleep_allowed})")
                self._state = item.state
            return
        if hasattr(item, "seq"):
            self._log(f"← {describe(item)}")

    def _pending(self) -> list[str]:
        done: set[str | None] = {e.say for e in self.h.events if e.type == "playback_finished"}
        done |= {e.command for e in self.h.events if e.type == "command_rejected"}
        return [r.say for r in self.agent.replies if r.say not in done]

    async def _wait_quiet(self, timeout: float = 60.0) -> None:
        """Until every reply sent has finished playing (or was rejected) and nothing new came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.h.status.state if self.h.status else None
            if not self._pending() and state in ("idle", "asleep"):
                count = len(self.agent.replies)
                await asyncio.sleep(0.6)
                if len(self.agent.replies) == count and not self._pending():
                    return
            await asyncio.sleep(0.1)
        raise HarnessTimeout(f"device still speaking after {timeout:.0f} s")

    async def _reset(self) -> None:
        status = await self.h.wait_status(timeout=20)
        if status.sleep_allowed is not True:
            await self.h.sleep_allowed(True)
            await self.h.wait_status(sleep_allowed=True, timeout=20)
        if self.h.status is not None and self.h.status.state != "asleep":
            await self.h.stop()
            await self.h.sleep()
            await self.h.wait_status(state="asleep", timeout=30)

    async def run(self) -> DemoResult:
        """The whole conversation; returns the result (also printed as a summary)."""
        await self._reset()
        self.h.mark()
        self.h.add_listener(self._show)
        agent_task = asyncio.create_task(self.agent.run(), name="demo companion")
        try:
            await asyncio.sleep(0.2)
            self._log("user taps the face")
            await self.h.sim_tap()
            await self.h.wait_for("wake", 10)
            await asyncio.sleep(0.3)
            await self._wait_quiet()
            for i, line in enumerate(SCRIPT):
                if line.kind == "barge_in":
                    await self._barge_in(line)
                    if self.agent.brain.mode is Mode.ACTIVITY:
                        await self._turn(AGAIN)
                    elif self.agent.brain.mode is Mode.ASK_STOP:
                        await self._turn(STOP_YES)
                    continue
                talked_over = i + 1 < len(SCRIPT) and SCRIPT[i + 1].kind == "barge_in"
                await self._turn(line, wait_quiet=not talked_over)
                if self._asked_which_one_meant():
                    await self._turn(CONFIRM)
            await self.h.wait_for("asleep", 30, reason="tag")
            await self.h.wait_status(state="asleep", timeout=10)
        except HarnessTimeout as err:
            self.result.problems.append(str(err).splitlines()[0])
        finally:
            agent_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await agent_task
            self.h.remove_listener(self._show)
        self._check_story()
        self.result.seconds = time.time() - self.t0
        self.log(self.summary())
        return self.result

    async def _turn(self, line: UserLine, wait_quiet: bool = True) -> None:
        """Say ``line`` and record what happened; then wait until the reply finished (unless the
        next line talks over it: then only until it started)."""
        turn = TurnResult(line)
        self.result.turns.append(turn)
        wav = await asyncio.to_thread(
            self.voice.mumble_wav if line.kind == "mumble" else self.voice.wav, line.text
        )
        shown = f"(mumbled) {line.text!r}" if line.kind == "mumble" else repr(line.text)
        self._log(f"user says {shown}" + (f"  — {line.note}" if line.note else ""))
        start = len(self.h.events)
        replies_before = len(self.agent.replies)
        await self.h.sim_audio(wav)
        audio_s = (len(wav) - 44) / 32000.0
        closing = await self._utterance_outcome(start, audio_s + 4.0)
        if closing is None:
            turn.outcome = "not heard (no speech detected)"
        elif closing.type == "utterance_failed":
            turn.outcome = f"rejected by the device: {closing.reason}"
        else:
            turn.heard, turn.confidence = closing.text, closing.confidence
            ended = next(
                (
                    e
                    for e in self.h.events[start:]
                    if isinstance(e, SpeechEndedEvent) and e.utterance == closing.utterance
                ),
                None,
            )
            if ended is not None:
                turn.end_to_transcript_ms = (closing.ts - ended.ts) * 1000
                turn.end = ended.end
            poor = closing.confidence < 0.4
            turn.outcome = "heard poorly, not acted on" if poor else "heard"
        await asyncio.sleep(0.5)
        if len(self.agent.replies) > replies_before:
            reply = self.agent.replies[replies_before]
            with contextlib.suppress(HarnessTimeout):
                started = await self.h.wait_for("playback_started", 30, say=reply.say)
                turn.reply_to_audio_ms = (started.ts - reply.sent) * 1000
        if line.note.startswith("a goodbye inside"):
            await self._stray_sleep()
        if wait_quiet:
            await self._wait_quiet()

    async def _barge_in(self, line: UserLine) -> None:
        """Talk over the reply now playing: heard over it (``over_playback``), the reply ducked and
        then stopped by the companion. A device that is half duplex at that moment (its canceller
        re-converging) gets the line after the reply instead, and the summary says so."""
        replies = self.agent.replies
        reply = replies[-1].say if replies else None
        try:
            await self.h.wait_status(duplex="full", timeout=3.0)
        except HarnessTimeout:
            status = self.h.status
            why = status.duplex_reason if status is not None else None
            self._log(f"device is half duplex ({why}): the user waits for the reply to end")
            await self._wait_quiet()
            await self._turn(line)
            self.result.turns[-1].outcome += f" (said after the reply: half duplex, {why})"
            return
        await asyncio.sleep(BARGE_IN_AFTER_S)
        turn = TurnResult(line)
        self.result.turns.append(turn)
        wav = await asyncio.to_thread(self.voice.wav, line.text)
        self._log(f"user talks over the reply: {line.text!r}  — {line.note}")
        start = len(self.h.events)
        await self.h.sim_audio(wav)
        try:
            started = await self.h.wait_for("speech_started", 10, over_playback=True)
            closing = await self.h.wait_for(
                lambda e: e.type in ("transcript", "utterance_failed") and e.utterance == started.utterance,
                30,
            )
        except HarnessTimeout:
            turn.outcome = "not heard over the reply"
            self.result.problems.append(f"{line.text!r} over the reply was not heard (no over_playback)")
            await self._wait_quiet()
            return
        if closing.type == "transcript":
            turn.heard, turn.confidence = closing.text, closing.confidence
        finished = next(
            (e for e in self.h.events[start:] if e.type == "playback_finished" and e.say == reply), None
        )
        with contextlib.suppress(HarnessTimeout):
            finished = finished or await self.h.wait_for("playback_finished", 30, say=reply)
        stopped = started.utterance in self.agent.stopped_for
        turn.outcome, problem = barge_in_outcome(
            closing,
            stopped and finished is not None and finished.interrupted,
            self.agent.brain.settings.min_confidence,
        )
        if problem:
            self.result.problems.append(f"{line.text!r} over the reply: {problem}")
        await asyncio.sleep(0.5)
        await self._wait_quiet()

    def _asked_which_one_meant(self) -> bool:
        return self.agent.brain.mode is Mode.ASK_START

    async def _stray_sleep(self) -> None:
        self._log("agent sends a stray sleep during the activity (e.g. a stale timer): must be ignored")
        await self.h.sleep()
        try:
            await self.h.wait_for("sleep_ignored", 10, via="command")
        except HarnessTimeout:
            self.result.problems.append("a sleep during the activity was not ignored (no sleep_ignored)")

    async def _utterance_outcome(self, start: int, timeout: float) -> Any:
        """The ``transcript``/``utterance_failed`` closing the first utterance heard, or ``None``."""
        deadline = time.monotonic() + timeout
        utterance = None
        while time.monotonic() < deadline or utterance is not None:
            for ev in self.h.events[start:]:
                if ev.type == "speech_started" and utterance is None:
                    utterance = ev.utterance
                    deadline = time.monotonic() + 30
                if utterance and ev.type in ("transcript", "utterance_failed") and ev.utterance == utterance:
                    return ev
            if utterance is not None and time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        return None

    def _check_story(self) -> None:
        problems = self.result.problems
        for turn in self.result.turns:
            rejected = not turn.heard or (turn.confidence is not None and turn.confidence < 0.4)
            if turn.line.kind == "mumble" and not rejected:
                problems.append(f"the mumble was heard clearly: {turn.heard!r} ({turn.confidence:.2f})")
            if turn.line.kind == "voice" and rejected:
                problems.append(f"{turn.line.text!r} was not heard: {turn.outcome}")
        types = [e.type for e in self.h.since()]
        for needed in ("wake", "sleep_ignored", "asleep"):
            if needed not in types:
                problems.append(f"no {needed} event")
        if not any(s.sleep_allowed is False for s in self.h.statuses):
            problems.append("the activity never set sleep_allowed false")
        problems += [str(v) for v in self.h.check_contract(allow_open=True)]

    def summary(self) -> str:
        """Turns, outcomes and latencies."""
        lines = ["", "Demo summary:"]
        for i, t in enumerate(self.result.turns, 1):
            conf = f" ({t.confidence:.2f})" if t.confidence is not None else ""
            heard = f": {t.heard!r}{conf}" if t.heard else ""
            ms = f", {t.end_to_transcript_ms:.0f} ms" if t.end_to_transcript_ms is not None else ""
            end = f" [end: {t.end}{ms}]" if t.end else ""
            lines.append(f"  {i}. {t.line.kind:<6} {t.line.text!r}: {t.outcome}{heard}{end}")
        stt = [t.end_to_transcript_ms for t in self.result.turns if t.end_to_transcript_ms is not None]
        tts = [t.reply_to_audio_ms for t in self.result.turns if t.reply_to_audio_ms is not None]
        if stt:
            ends = Counter(t.end for t in self.result.turns if t.end)
            how = ", ".join(f"{k} {n}" for k, n in sorted(ends.items()))
            lines.append(
                f"  end of speech → transcript: median {statistics.median(stt):.0f} ms, max {max(stt):.0f} ms"
                + (f" (turns ended by {how})" if how else "")
            )
        if tts:
            lines.append(
                f"  reply sent → first audio:   median {statistics.median(tts):.0f} ms, max {max(tts):.0f} ms"
            )
        lines.append(
            f"  {len(self.result.turns)} user turns, {len(self.h.since())} events, "
            f"{self.result.seconds:.0f} s"
        )
        if self.result.problems:
            lines.append("  PROBLEMS:")
            lines += [f"    ✘ {p}" for p in self.result.problems]
        else:
            lines.append("  ✔ the conversation went as scripted")
        return "\n".join(lines)


async def run_demo(
    harness: AgentHarness, voice: UserVoice | None = None, log: Callable[[str], None] = print
) -> DemoResult:
    """Drive the whole demo conversation on a connected harness (loads Piper if no ``voice``)."""
    if voice is None:
        voice = await asyncio.to_thread(UserVoice.load)
    return await DemoDriver(harness, voice, log).run()
