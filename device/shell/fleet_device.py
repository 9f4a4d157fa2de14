"""A lightweight simulated device for the fleet simulator: the real core, dispatch, message reader,
outbox, gate and link; parts without audio (an instant speaker, a microphone that hears nothing, a
face that only remembers what it shows)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.errors import ProtocolError
from agent_link.protocol.messages import StatusMessage
from audio.events import AudioEvent, PlaybackFinished, PlaybackStarted, VisemeCue
from device.core.inputs import Booted, DeviceInput
from device.core.orchestrator import Rules, boot_actions, initial_state, status_fields, step
from device.core.state import Settings
from device.shell.dispatch import Dispatch
from device.shell.inbox import Inbox
from device.shell.messages import MessageReader
from face.state import FaceState


class InstantSpeaker:
    """A speaker with no audio: ``playback_started`` at once, ``playback_finished`` after a
    simulated duration (``seconds_per_char`` per character, at most ``max_s``). Replies play side
    by side, except that a reply queued after a held one starts only when it is released."""

    def __init__(
        self, emit: Callable[[AudioEvent], None], seconds_per_char: float = 0.001, max_s: float = 0.2
    ) -> None:
        self._emit = emit
        self._per_char = seconds_per_char
        self._max_s = max_s
        self._chars: dict[str, int] = {}
        self._final: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._order: list[str] = []
        self._waiting: list[str] = []
        self._holds: set[str] = set()
        self.volume = 0.8
        self.duck_db = 0.0
        self.voice = ""

    def speak(self, say: str, text: str, final: bool) -> None:
        """Queue a chunk; the first starts playback (unless held), the final one schedules the finish."""
        if say not in self._chars:
            self._chars[say] = 0
            self._order.append(say)
            if any(h in self._order[:-1] for h in self._holds):
                self._waiting.append(say)
            else:
                self._emit(PlaybackStarted(say=say, ts=time.time()))
        self._chars[say] += len(text)
        if final:
            self._final.add(say)
            if say not in self._waiting:
                self._schedule_finish(say)

    def _schedule_finish(self, say: str) -> None:
        delay = min(self._max_s, self._chars[say] * self._per_char)
        self._timers[say] = asyncio.get_running_loop().call_later(delay, self._finish, say, False)

    def stop(self) -> None:
        """Stop every reply: each ends with an interrupted finish (holds stay)."""
        for say in list(self._chars):
            self._finish(say, True)

    def hold(self, say: str, *, at_once: bool = False) -> None:
        """Replies queued after ``say`` from now on wait for ``release(say)``."""
        self._holds.add(say)

    def release(self, say: str) -> None:
        """The replies waiting behind ``say`` start."""
        self._holds.discard(say)
        if self._holds:
            return
        waiting, self._waiting = self._waiting, []
        for w in waiting:
            self._emit(PlaybackStarted(say=w, ts=time.time()))
            if w in self._final:
                self._schedule_finish(w)

    def set_volume(self, volume: float) -> None:
        """Remember the volume."""
        self.volume = volume

    def duck(self, level_db: float) -> None:
        """Remember the ducking level (a simulated device plays nothing)."""
        self.duck_db = level_db

    def unduck(self) -> None:
        """Back to the full volume."""
        self.duck_db = 0.0

    async def set_voice(self, voice: str) -> None:
        """Remember the voice."""
        self.voice = voice

    def _finish(self, say: str, interrupted: bool) -> None:
        if self._chars.pop(say, None) is None:
            return
        self._final.discard(say)
        self._order.remove(say)
        if say in self._waiting:
            self._waiting.remove(say)
        timer = self._timers.pop(say, None)
        if timer is not None:
            timer.cancel()
        self._emit(PlaybackFinished(say=say, interrupted=interrupted, ts=time.time()))


class DeafMicrophone:
    """A listener with no microphone: opens and closes, hears nothing."""

    def __init__(self) -> None:
        self.open_now = False
        self.speaking = False

    async def open(self) -> None:
        self.open_now = True

    async def close(self) -> None:
        self.open_now = False

    def set_speaking(self, speaking: bool) -> None:
        self.speaking = speaking


class RememberedFace:
    """A face with no screen: remembers the state it shows."""

    def __init__(self) -> None:
        self.state = FaceState.ASLEEP

    def show_state(self, state: FaceState) -> None:
        self.state = state

    def set_expression(self, emotion: str) -> None:
        pass

    def notice(self) -> None:
        pass

    def play_visemes(self, cues: Sequence[VisemeCue], start_ts: float) -> None:
        pass

    def stop_mouth(self) -> None:
        pass


class _NoRecords:
    """Fleet devices live for one run: nothing to close after a restart."""

    def open(self, kind: str, id: str) -> None:
        pass

    def close(self, kind: str, id: str) -> None:
        pass


class _NoSettingsFile:
    def save_settings(self, settings: Settings) -> None:
        pass


def _no_sim_audio(payload: bytes) -> None:
    raise ProtocolError("invalid", "the fleet simulator has no microphone")


class SimDevice:
    """One simulated device: the daemon's core, dispatch and message reader over the real link."""

    def __init__(self, device_id: str, settings: LinkSettings, state_dir: Path) -> None:
        self.device_id = device_id
        self.state = initial_state(Settings())
        self.rules = Rules(wake_duration_s=0.0)
        self.outbox = Outbox(state_dir / f"{device_id}.outbox.sqlite3", device_id, 1)
        self.gate = CommandGate(CommandIdStore(state_dir / f"{device_id}.ids.sqlite3", capacity=1000))
        self.messages = MessageReader(self.gate, self.put, 1, _no_sim_audio)
        self.link = MqttLink(settings, device_id, 1, self.outbox, self.messages, self._on_link, simulate=True)
        self.speaker = InstantSpeaker(self.put)
        self.dispatch = Dispatch(
            put=self.put, outbox=self.outbox, link=self.link, records=_NoRecords(), settings=_NoSettingsFile()
        )
        self.dispatch.speaker = self.speaker
        self.dispatch.listener = DeafMicrophone()
        self.dispatch.face = RememberedFace()
        self.inbox = Inbox()
        self._status: dict[str, Any] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def put(self, event: DeviceInput) -> None:
        """Hand an event to the core (control goes ahead of data: ``device.shell.inbox``)."""
        self.inbox.put(event)

    def _on_link(self, connected: bool, detail: str) -> None:
        pass

    async def start(self) -> None:
        """Start the link and the core's loop."""
        self.put(Booted((), (), time.time()))
        self._refresh_status()
        self._tasks = [asyncio.create_task(self.link.run()), asyncio.create_task(self._loop())]

    async def close(self) -> None:
        """Store the events published so far, disconnect cleanly (offline status), stop the loop,
        close the databases."""
        await self.dispatch.flush()
        with contextlib.suppress(Exception):
            await self.link.shutdown(self._status_message(False), flush_timeout=2.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.dispatch.flush()
        self.dispatch.close()
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
        await self.dispatch.execute(boot_actions(self.state, self.rules))
        while True:
            event = await self.inbox.get()
            if event is None:
                return
            self.state, actions = step(self.state, event, self.rules)
            await self.dispatch.execute(actions)
            self._refresh_status()
