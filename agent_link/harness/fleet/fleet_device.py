"""A lightweight simulated device: the real orchestrator, outbox, gate and link; no audio, no models."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from pathlib import Path
from typing import Any

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate, Rejection
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import ProtocolError, StatusMessage, decode_sim_text
from audio.events import PlaybackFinished, PlaybackStarted
from device.core.actions import Publish, ScheduleTimer, Speak, StopSpeaking
from device.core.inputs import CommandReceived, CommandRefused, DeviceInput, Tapped, TimerFired, TypedText
from device.core.orchestrator import Rules, initial_state, status_fields, step
from device.core.state import Settings


class InstantSpeaker:
    """A speaker with no audio: ``playback_started`` at once, ``playback_finished`` after a
    simulated duration (``seconds_per_char`` per character, at most ``max_s``)."""

    def __init__(self, emit: Any, seconds_per_char: float = 0.001, max_s: float = 0.2) -> None:
        self._emit = emit
        self._per_char = seconds_per_char
        self._max_s = max_s
        self._chars: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def speak(self, say: str, text: str, final: bool) -> None:
        """Queue a chunk; the first starts playback, the final one schedules the finish."""
        loop = asyncio.get_running_loop()
        if say not in self._chars:
            self._chars[say] = 0
            self._emit(PlaybackStarted(say=say, ts=time.time()))
        self._chars[say] += len(text)
        if final:
            delay = min(self._max_s, self._chars[say] * self._per_char)
            self._timers[say] = loop.call_later(delay, self._finish, say, False)

    def stop(self) -> None:
        """Stop every reply: each ends with an interrupted finish."""
        for say in list(self._chars):
            self._finish(say, True)

    def _finish(self, say: str, interrupted: bool) -> None:
        if self._chars.pop(say, None) is None:
            return
        timer = self._timers.pop(say, None)
        if timer is not None:
            timer.cancel()
        self._emit(PlaybackFinished(say=say, interrupted=interrupted, ts=time.time()))


class SimDevice:
    """One simulated device: the real orchestrator, outbox, gate and link; no audio, no models."""

    def __init__(self, device_id: str, settings: LinkSettings, state_dir: Path) -> None:
        self.device_id = device_id
        self.state = initial_state(Settings())
        self.rules = Rules()
        self.outbox = Outbox(state_dir / f"{device_id}.outbox.sqlite3", device_id, 1)
        self.gate = CommandGate(CommandIdStore(state_dir / f"{device_id}.ids.sqlite3", capacity=1000))
        self.link = MqttLink(
            settings, device_id, 1, self.outbox, self._on_message, self._on_link, simulate=True
        )
        self.speaker = InstantSpeaker(self.put)
        self.inbox: asyncio.Queue[DeviceInput | Any] = asyncio.Queue()
        self._typed = itertools.count(1)
        self._status: dict[str, Any] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def put(self, event: Any) -> None:
        """Hand an event to the orchestrator."""
        self.inbox.put_nowait(event)

    def _on_link(self, connected: bool, detail: str) -> None:
        pass

    def _on_message(self, kind: str, payload: bytes, received: float) -> None:
        if kind == "command":
            result = self.gate.check(payload, time.time())
            if isinstance(result, Rejection):
                self.put(CommandRefused(result.command_id, result.reason, result.detail, received))
            elif result is not None:
                self.put(CommandReceived(result, received))
        elif kind == "sim_tap":
            self.put(Tapped("sim", received))
        elif kind == "sim_text":
            try:
                text = decode_sim_text(payload).text
            except ProtocolError as err:
                self.put(CommandRefused(None, "invalid", f"sim/text: {err.detail}", received))
                return
            self.put(TypedText(f"typed-1-{next(self._typed)}", text, received))
        elif kind == "sim_audio":
            self.put(
                CommandRefused(None, "invalid", "sim/audio: the fleet simulator has no microphone", received)
            )

    async def start(self) -> None:
        """Start the link and the orchestrator loop."""
        self._refresh_status()
        self._tasks = [asyncio.create_task(self.link.run()), asyncio.create_task(self._loop())]

    async def close(self) -> None:
        """Disconnect cleanly (offline status), stop the loop, close the databases."""
        with contextlib.suppress(Exception):
            await self.link.shutdown(self._status_message(False), flush_timeout=2.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.outbox.close()
        self.gate.store.close()

    def _status_message(self, online: bool = True) -> StatusMessage:
        return StatusMessage(
            online=online, boot=1, version="fleet-sim", ts=time.time(), **status_fields(self.state)
        )

    def _refresh_status(self) -> None:
        fields = status_fields(self.state)
        if fields != self._status:
            self._status = fields
            self.link.set_status(self._status_message())

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            event = await self.inbox.get()
            self.state, actions = step(self.state, event, self.rules)
            for action in actions:
                if isinstance(action, Publish):
                    self.outbox.append(action.body)
                    self.link.notify_outbox()
                elif isinstance(action, Speak):
                    self.speaker.speak(action.say, action.text, action.final)
                elif isinstance(action, StopSpeaking):
                    self.speaker.stop()
                elif isinstance(action, ScheduleTimer):
                    loop.call_later(
                        max(0.0, action.at - time.time()), self.put, TimerFired(action.name, action.at)
                    )
            self._refresh_status()
