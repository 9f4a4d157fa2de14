"""One table from each action of the core to the part that executes it. No decisions here.

The parts are given as small protocols, so the daemon (real audio, face, MQTT) and a simulated
device (no audio) run the same dispatch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from agent_link.link.outbox import Outbox, OutboxError
from agent_link.protocol.event_messages import Event, EventBody
from audio.events import AudioDeviceProblem, VisemeCue
from device.core.actions import (
    Action,
    ApplySettings,
    CancelTimer,
    CloseMicrophone,
    DuckSpeech,
    HoldSpeech,
    Note,
    Notice,
    OpenMicrophone,
    OpenRecord,
    PlayVisemes,
    Publish,
    Record,
    ReleaseSpeech,
    SaveSettings,
    ScheduleTimer,
    SetHalfDuplex,
    ShowExpression,
    ShowFace,
    Speak,
    StopSpeaking,
    UnduckSpeech,
)
from device.core.inputs import DeviceInput, TimerFired
from device.core.state import Settings
from face.state import FaceState

_LOGGER = logging.getLogger(__name__)


class SpeakerPart(Protocol):
    def speak(self, say: str, text: str, final: bool) -> None: ...
    def stop(self) -> None: ...
    def hold(self, say: str, *, at_once: bool = False) -> None: ...
    def release(self, say: str) -> None: ...
    def set_volume(self, volume: float) -> None: ...
    def duck(self, level_db: float) -> None: ...
    def unduck(self) -> None: ...
    async def set_voice(self, voice: str) -> None: ...


class ListenerPart(Protocol):
    async def open(self) -> None: ...
    async def close(self) -> None: ...
    def set_speaking(self, speaking: bool) -> None: ...


class TranscriberPart(Protocol):
    def set_language(self, lang: str) -> None: ...


class FacePart(Protocol):
    def show_state(self, state: FaceState) -> None: ...
    def set_expression(self, emotion: str) -> None: ...
    def notice(self) -> None: ...
    def play_visemes(self, cues: Sequence[VisemeCue], start_ts: float) -> None: ...
    def stop_mouth(self) -> None: ...


class Notifier(Protocol):
    def notify_outbox(self) -> None: ...


class RecordsPart(Protocol):
    """Open utterances/replies on disk (``device.persistence.OpenIds`` per kind)."""

    def open(self, kind: str, id: str) -> None: ...
    def close(self, kind: str, id: str) -> None: ...


class SettingsStore(Protocol):
    def save_settings(self, settings: Settings) -> None: ...


A = TypeVar("A")
Step = Callable[[A], Awaitable[None] | None]


class Dispatch:
    """Executes the core's actions on the parts, in order; ``put`` feeds events back (timers, failures).

    ``Publish`` is the exception to "at once": its event is queued for a group commit of the outbox
    off the loop (:meth:`flush` waits for it); the link sees it, and its record is closed, only once
    it is on disk.
    """

    def __init__(
        self,
        *,
        put: Callable[[DeviceInput], None],
        outbox: Outbox,
        link: Notifier,
        records: RecordsPart,
        settings: SettingsStore,
    ) -> None:
        self.put = put
        self.outbox = outbox
        self.link = link
        self.records = records
        self.settings = settings
        self.speaker: SpeakerPart | None = None
        self.listener: ListenerPart | None = None
        self.transcriber: TranscriberPart | None = None
        self.face: FacePart | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._to_store: list[Publish] = []
        """Events published since the last commit started, in order (the next group commit's)."""
        self._committer: asyncio.Task[None] | None = None
        self._lanes: dict[str, asyncio.Task[None]] = {}
        """The last task of each slow part (microphone, voice): they run in order, off the control path."""
        self._table: dict[type[Any], Step[Any]] = {}
        self._add(Publish, self._publish)
        self._add(OpenRecord, lambda a: self.records.open(a.kind, a.id))
        self._add(
            Note, lambda a: _LOGGER.log(logging.getLevelNamesMapping()[a.level.upper()], "%s", a.message)
        )
        self._add(Speak, lambda a: self._speaker().speak(a.say, a.text, a.final))
        self._add(StopSpeaking, self._stop_speaking)
        self._add(HoldSpeech, lambda a: self._speaker().hold(a.say, at_once=a.at_once))
        self._add(ReleaseSpeech, lambda a: self._speaker().release(a.say))
        self._add(DuckSpeech, lambda a: self._speaker().duck(a.level_db))
        self._add(UnduckSpeech, lambda a: self._speaker().unduck())
        self._add(SetHalfDuplex, lambda a: self._listener().set_speaking(a.speaking))
        self._add(OpenMicrophone, lambda a: self._microphone("open the microphone", self._listener().open))
        self._add(CloseMicrophone, lambda a: self._microphone("close the microphone", self._listener().close))
        self._add(ShowExpression, self._show_expression)
        self._add(PlayVisemes, lambda a: self._face().play_visemes(a.cues, a.start_ts))
        self._add(ShowFace, lambda a: self._face().show_state(a.state))
        self._add(Notice, lambda a: self._face().notice())
        self._add(ScheduleTimer, self._schedule)
        self._add(CancelTimer, lambda a: self._cancel(a.name))
        self._add(SaveSettings, self._save_settings)
        self._add(ApplySettings, self._apply_settings)

    def _add(self, kind: type[A], run: Step[A]) -> None:
        self._table[kind] = run

    async def execute(self, actions: Sequence[Action]) -> None:
        """Run each action on its part, in order."""
        for action in actions:
            result = self._table[type(action)](action)
            if result is not None:
                await result

    def close(self) -> None:
        """Cancel the pending timers."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    async def settled(self, lane: str) -> None:
        """Wait until what was asked of ``lane`` ("microphone", "voice") so far is done."""
        task = self._lanes.get(lane)
        if task is not None:
            await asyncio.shield(task)

    async def drain(self, timeout: float) -> None:
        """Let the slow parts finish what they were asked (shutdown), at most ``timeout`` s."""
        if self._lanes:
            await asyncio.wait(list(self._lanes.values()), timeout=timeout)

    def _in_lane(self, lane: str, what: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work()`` after the lane's previous work, as an owned named task: the next action
        (a stop, a tap) does not wait for it. ``work`` handles its own failures."""
        previous = self._lanes.get(lane)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            await work()

        self._lanes[lane] = asyncio.get_running_loop().create_task(run(), name=f"{lane}: {what}")

    def _microphone(self, what: str, start: Callable[[], Awaitable[None]]) -> None:
        async def work() -> None:
            try:
                await start()
            except Exception as err:  # the daemon keeps running and says what happened
                _LOGGER.error("Could not %s: %s", what, err)
                self.put(AudioDeviceProblem("input", False, str(err), time.time()))

        self._in_lane("microphone", what, work)

    # ---- parts (set once built) ---------------------------------------------------------------------
    def _speaker(self) -> SpeakerPart:
        assert self.speaker is not None, "speaker not built yet"
        return self.speaker

    def _listener(self) -> ListenerPart:
        assert self.listener is not None, "listener not built yet"
        return self.listener

    def _face(self) -> FacePart:
        assert self.face is not None, "face not built yet"
        return self.face

    # ---- actions --------------------------------------------------------------------------------------
    def _publish(self, action: Publish) -> None:
        """Queue the event for the next group commit (off the loop: :meth:`_store_batches`)."""
        self._to_store.append(action)
        if self._committer is None:
            self._committer = asyncio.get_running_loop().create_task(
                self._store_batches(), name="outbox: group commit"
            )

    async def flush(self) -> None:
        """Wait until every event published so far is stored (shutdown: before the link's last flush
        and the outbox's close)."""
        while self._committer is not None:
            await asyncio.shield(self._committer)

    async def _store_batches(self) -> None:
        """Store the events queued while the previous commit ran, in one transaction (one fsync) in a
        worker thread, in the order they were published; then, on the loop, log them, wake the link
        and close the records they close."""
        try:
            while self._to_store:
                batch, self._to_store = self._to_store, []
                try:
                    stored = await asyncio.to_thread(self._store, [a.body for a in batch])
                except Exception as err:  # a bug: logged like a storage failure, the loop goes on
                    _LOGGER.exception("Storing %d events failed", len(batch))
                    stored = [OutboxError(str(err))] * len(batch)
                try:
                    self._published(batch, stored)
                except Exception:
                    _LOGGER.exception("Handing on %d stored events failed", len(batch))
        finally:
            self._committer = None

    def _store(self, bodies: list[EventBody]) -> list[Event | OutboxError]:
        """The batch in one commit (worker thread); if that fails (a full disk), one at a time: as
        many as can be stored, in order, as when each had its own commit."""
        try:
            return list(self.outbox.append_all(bodies))
        except OutboxError as err:
            if len(bodies) == 1:
                return [err]
        results: list[Event | OutboxError] = []
        for body in bodies:
            try:
                results.append(self.outbox.append(body))
            except OutboxError as err:
                results.append(err)
        return results

    def _published(self, batch: list[Publish], stored: list[Event | OutboxError]) -> None:
        """Back on the loop after a commit: log each event, wake the link, close the records."""
        closes: list[Record] = []
        for action, event in zip(batch, stored, strict=True):
            body = action.body
            if isinstance(event, OutboxError):
                _LOGGER.error(
                    "Event %s NOT stored (outbox: %s): %s",
                    type(body).__name__,
                    event,
                    _short(body.model_dump()),
                )
                continue  # its record stays open for the next boot
            _LOGGER.info(
                "→ %s #%d %s", event.type, event.seq, _short(body.model_dump(exclude={"v", "type", "ts"}))
            )
            if action.closes is not None:
                closes.append(action.closes)
        if not all(isinstance(event, OutboxError) for event in stored):
            self.link.notify_outbox()
        for record in closes:
            # After the link task had its turn (it was woken first): the event goes out before the
            # record's fsync'd rewrite (2-8 ms measured on the stop's path), not behind it.
            asyncio.get_running_loop().call_soon(self.records.close, record.kind, record.id)

    def _stop_speaking(self, action: StopSpeaking) -> None:
        self._speaker().stop()
        if self.face is not None:
            self.face.stop_mouth()  # the rest of the piece's mouth timeline is not heard

    def _show_expression(self, action: ShowExpression) -> None:
        face = self._face()
        delay = max(0.0, action.at - time.time())
        asyncio.get_running_loop().call_later(delay, face.set_expression, action.emotion)

    def _schedule(self, action: ScheduleTimer) -> None:
        self._cancel(action.name)
        delay = max(0.0, action.at - time.time())
        event = TimerFired(action.name, action.at)
        self._timers[action.name] = asyncio.get_running_loop().call_later(delay, self.put, event)

    def _cancel(self, name: str) -> None:
        handle = self._timers.pop(name, None)
        if handle is not None:
            handle.cancel()

    def _save_settings(self, action: SaveSettings) -> None:
        try:
            self.settings.save_settings(
                Settings(action.sleep_allowed, action.language, action.voice, action.volume)
            )
        except OSError as err:
            _LOGGER.error("Could not save settings: %s", err)

    def _apply_settings(self, action: ApplySettings) -> None:
        speaker = self._speaker()
        speaker.set_volume(action.volume)
        if self.transcriber is not None:
            self.transcriber.set_language(action.language)

        async def switch() -> None:  # the speaker loads it in order with synthesis, off the loop
            try:
                await speaker.set_voice(action.voice)
            except Exception as err:
                _LOGGER.error(
                    "Could not switch voice (language %s, voice %s): %s", action.language, action.voice, err
                )

        self._in_lane("voice", f"switch to {action.voice or 'the packaged voice'}", switch)


def _short(fields: dict[str, Any], limit: int = 160) -> str:
    text = " ".join(f"{k}={v!r}" for k, v in fields.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"
