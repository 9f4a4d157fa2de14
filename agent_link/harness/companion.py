"""The stand-in companion agent: ``CompanionBrain`` wired to a device through ``AgentHarness``.

``CompanionAgent(harness, brain).run()`` feeds every device event to the brain (and a tick each
second for the silence timer) and sends the actions it returns as commands, logging both.

A barge-in (protocol v1.1: ``speech_started`` with ``over_playback``, the device goes on speaking,
ducked) is the agent's to decide: when the utterance's transcript is heard clearly while a reply
still plays, the companion stops the reply (``stop``) -- a person stops talking when they are
interrupted -- and then lets the brain answer the words as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_link.harness.brain import (
    AgentAction,
    AllowSleep,
    CompanionBrain,
    FreeTalk,
    Mode,
    Note,
    Reply,
    RuleFreeTalk,
    Sleep,
)
from agent_link.harness.client import AgentHarness, BadMessage
from agent_link.harness.companion_settings import CompanionSettings
from agent_link.harness.matching import describe
from agent_link.protocol.messages import StatusMessage

_LOGGER = logging.getLogger(__name__)

_TICK = object()
"""The clock's item in the companion's queue."""


@dataclass(frozen=True)
class SentReply:
    """A reply the companion sent: its id, text and when."""

    say: str
    text: str
    sent: float


class CompanionAgent:
    """Runs a brain against one device until cancelled."""

    def __init__(
        self,
        harness: AgentHarness,
        brain: CompanionBrain,
        log: Callable[[str], None] = print,
        tick_s: float = 1.0,
    ) -> None:
        self.h = harness
        self.brain = brain
        self.log = log
        self.tick_s = tick_s
        self.replies: list[SentReply] = []
        """Every reply sent, in order."""
        self.barge_ins: set[str] = set()
        """Utterances the user began over a reply (``speech_started.over_playback``)."""
        self.stopped_for: list[str] = []
        """Utterances the companion stopped a reply for (the user interrupted it), in order."""
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._tick_pending = False

    def _enqueue(self, item: Any) -> None:
        self._queue.put_nowait(item)

    async def run(self) -> None:
        """Greet, converse and sleep as the brain decides; runs until cancelled."""
        self.h.add_listener(self._enqueue)
        try:
            await self.h.set_agent_online(True)
            status = self.h.status
            if status is not None and status.state not in (None, "asleep"):
                self.brain.mode = Mode.FREE
                self.brain.last_activity = time.time()
            self.log(f"companion ready ({self.brain.mode.value})")
            # The clock ticks into the queue (no timeout around ``get``: Python 3.11's ``wait_for``
            # can swallow a cancellation that meets an item, and the companion would live on).
            ticker = asyncio.create_task(self._tick(), name="companion-tick")
            try:
                while True:
                    item = await self._queue.get()
                    if item is _TICK:
                        self._tick_pending = False
                        await self._execute(self.brain.tick(time.time()))
                    else:
                        await self._on_item(item)
            finally:
                ticker.cancel()
        finally:
            self.h.remove_listener(self._enqueue)
            with contextlib.suppress(Exception):
                await self.h.set_agent_online(False)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            if not self._tick_pending:  # a busy companion gets one tick, not a backlog
                self._tick_pending = True
                self._queue.put_nowait(_TICK)

    async def _on_item(self, item: Any) -> None:
        if isinstance(item, StatusMessage):
            return
        if isinstance(item, BadMessage):
            self.log(f"  ! invalid device message: {item.error}")
            return
        await self._barge_in(item)
        actions = await asyncio.to_thread(self.brain.handle, item, time.time())
        await self._execute(actions)

    async def _barge_in(self, event: Any) -> None:
        """The user talking over a reply: stop it once their words are heard clearly."""
        kind = getattr(event, "type", "")
        if kind == "speech_started" and getattr(event, "over_playback", False):
            self.barge_ins.add(event.utterance)
            self.log("  [companion: the user talks over the reply (the device ducks it)]")
        elif kind == "transcript" and event.utterance in self.barge_ins:
            self.barge_ins.discard(event.utterance)
            clear = float(event.confidence) >= self.brain.settings.min_confidence
            if clear and self.brain.speaking:
                await self.h.stop()
                self.stopped_for.append(event.utterance)
                self.log(f"  ⇢ stop (interrupted by {event.text!r}: the reply gives way)")
            elif self.brain.speaking:
                self.log("  [companion: the interruption was heard poorly; the reply goes on]")

    async def _execute(self, actions: list[AgentAction]) -> None:
        for action in actions:
            if isinstance(action, Note):
                self.log(f"  [companion: {action.text}; mode {self.brain.mode.value}]")
            elif isinstance(action, Reply):
                cid = await self.h.say(action.text)
                now = time.time()
                self.replies.append(SentReply(cid, action.text, now))
                self.brain.note_sent(now)
                self.log(f"  ⇢ say {action.text!r}")
            elif isinstance(action, Sleep):
                await self.h.sleep()
                self.log("  ⇢ sleep")
            elif isinstance(action, AllowSleep):
                await self.h.sleep_allowed(action.value)
                self.log(f"  ⇢ sleep_allowed {str(action.value).lower()}")


def make_brain(settings: CompanionSettings, llm: bool = True) -> CompanionBrain:
    """A brain with model replies when ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is set (and ``llm``)."""
    from agent_link.harness.llm_talk import OpenAIFreeTalk, llm_configured

    talk: FreeTalk = RuleFreeTalk()
    if llm and llm_configured():
        talk = OpenAIFreeTalk(settings.llm_model, settings.llm_timeout_s)
        _LOGGER.info("free conversation from model %s", settings.llm_model)
    return CompanionBrain(settings=settings, free_talk=talk)


async def run_companion(
    broker_url: str,
    root: str,
    device_id: str,
    settings: CompanionSettings,
    ca_file: str | None = None,
    llm: bool = True,
) -> int:
    """``robot-face harness companion``: run until Ctrl-C, printing events and commands."""
    brain = make_brain(settings, llm)
    async with AgentHarness(broker_url, root=root, device_id=device_id, ca_file=ca_file) as h:

        def show(item: Any) -> None:
            if isinstance(item, StatusMessage):
                print(f"  status: {item.state} sleep_allowed={item.sleep_allowed} online={item.online}")
            elif not isinstance(item, BadMessage):
                print(f"← {describe(item)}")

        h.add_listener(show)
        print(f"companion for {device_id} on {broker_url}; tap the device to start (Ctrl-C to quit)")
        with contextlib.suppress(asyncio.CancelledError):
            await CompanionAgent(h, brain).run()
    return 0
