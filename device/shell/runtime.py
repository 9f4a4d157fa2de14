"""The async shell around the orchestrator core: one inbox, parts wired by actions and events.

Threads only at the edges: the MQTT link, audio callbacks, Whisper and Piper hand their results to
this loop; the loop runs ``step`` for each event and executes the actions it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from typing import Any

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.protocol.messages import StatusMessage
from audio.edges.capture import AudioSource
from audio.edges.wav import load_audio
from audio.events import AudioDeviceProblem
from audio.hearing.listener import Listener
from audio.hearing.stt import ModelUnavailable, make_transcriber
from audio.hearing.turn_model import make_turn_model
from audio.speaking.tts import VoiceNotFound
from device import __version__
from device.buttons.choice import action_for, make_button
from device.buttons.press import ButtonPress
from device.config import Config
from device.core.inputs import (
    Booted,
    DeviceInput,
    LinkChanged,
    Stamped,
    Tapped,
)
from device.core.orchestrator import Rules, boot_actions, initial_state, status_fields, step
from device.core.state import DeviceState, Settings
from device.machine import machine_summary
from device.persistence import StateDir
from device.shell.dispatch import Dispatch
from device.shell.executor import started_executor
from device.shell.inbox import Inbox
from device.shell.messages import MessageReader
from device.shell.notify import SystemdNotifier
from device.shell.parts import make_face, make_source, make_speaker, simulated_microphone
from device.shell.records import OpenRecords
from device.shell.storage_watch import StorageWatch, Store
from face.tags import TagVocabulary
from face.web import FaceWebServer

_LOGGER = logging.getLogger(__name__)

READY_WAIT_S = 20.0
"""How long readiness waits for the broker before telling systemd it is up anyway, in seconds."""


class Runtime:
    """The device daemon: builds the parts, runs the orchestrator, shuts down cleanly."""

    control_first = True
    """The inbox steps control ahead of data (False only in ``robot-face bench control``'s baseline)."""

    def __init__(self, config: Config, notifier: SystemdNotifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or SystemdNotifier()
        self.state_dir = StateDir(config.device.state_dir)
        self.boot = 0
        self.rules = Rules(
            thinking_timeout_s=config.device.thinking_timeout_s,
            wake_duration_s=config.face.wake_duration_s,
            vocabulary=TagVocabulary(dict(config.face.aliases)),
            voices=dict(config.speaking.voices),
            default_voice=config.speaking.voice,
            duck_db=config.hearing.duck_db,
            duck_weak_db=config.hearing.duck_weak_db,
            weak_canceller_db=config.hearing.weak_canceller_db,
            duck_hold_s=config.hearing.duck_hold_ms / 1000.0,
            early_duck_release_s=config.hearing.early_duck_release_ms / 1000.0,
        )
        self.state: DeviceState = initial_state(Settings())
        self.inbox = Inbox(control_first=self.control_first)
        self._status: dict[str, Any] | None = None
        self._stopping = asyncio.Event()
        self._last_step = time.monotonic()
        self._tasks: list[asyncio.Task[Any]] = []
        self.source: AudioSource | None = None
        self._sim_feed: asyncio.Task[None] | None = None
        self.records = OpenRecords(self.state_dir)

    # ---- inputs from the edges (all called on the loop) ----------------------------------------------
    def put(self, event: DeviceInput) -> None:
        """Hand an event to the orchestrator (control goes ahead of data: ``device.shell.inbox``)."""
        ahead = self.inbox.put(event)
        if ahead:
            _LOGGER.debug("%s goes ahead of %d queued inputs", type(event).__name__, ahead)

    def _on_connection(self, connected: bool, detail: str) -> None:
        self.put(LinkChanged(connected, detail, time.time()))

    def _feed_sim_audio(self, payload: bytes) -> None:
        samples = load_audio(payload, self.config.hearing.sample_rate)
        source = simulated_microphone(self.source)
        if source is None:
            _LOGGER.warning("Simulated audio dropped: the microphone is not ready yet")
            return

        async def feed(previous: asyncio.Task[None] | None) -> None:
            # After the microphone did what it was last asked (a tap's open runs off the control path).
            if previous is not None:
                await asyncio.wait([previous])
            await self.dispatch.settled("microphone")
            if not source.feed(samples):
                _LOGGER.info("Simulated audio dropped: the microphone is closed (asleep hears nothing)")

        self._sim_feed = asyncio.get_running_loop().create_task(feed(self._sim_feed), name="sim-audio")

    def _on_press(self, press: ButtonPress) -> None:
        if action_for(press, self.config.button) == "tap":
            self.put(Tapped(press.source, press.ts))
        else:
            _LOGGER.info("Long press (%s): no action configured", press.source)

    def _on_screen_tap(self, source: str = "screen") -> None:
        self.put(Tapped("screen", time.time()))

    def _on_screen_text(self, text: str) -> None:
        self.put(self.messages.typed(text, time.time()))

    # ---- derived outputs ------------------------------------------------------------------------------
    def _status_message(self, online: bool = True) -> StatusMessage:
        return StatusMessage(
            online=online, boot=self.boot, version=__version__, ts=time.time(), **status_fields(self.state)
        )

    def _refresh_status(self) -> None:
        fields = status_fields(self.state)
        if fields != self._status:
            if self._status is not None and fields["state"] != self._status["state"]:
                _LOGGER.info("state %s → %s", self._status["state"], fields["state"])
            self._status = fields
            self.link.set_status(self._status_message())

    async def _step(self, event: DeviceInput | Stamped) -> None:
        self.state, actions = step(self.state, event, self.rules)
        await self.dispatch.execute(actions)
        # The status goes before the events of the step (agents read the state when an event comes).
        self._refresh_status()

    # ---- the loop --------------------------------------------------------------------------------------
    async def _orchestrate(self) -> None:
        await self.dispatch.execute(boot_actions(self.state, self.rules))
        while True:
            event = await self.inbox.get()
            self._last_step = time.monotonic()
            if event is None:  # the end, after everything put before it
                return
            try:
                await self._step(event)
            except Exception:
                _LOGGER.exception("Error handling %r; continuing", event)

    def healthy(self) -> bool:
        """The orchestrator loop is alive and not stuck (an idle loop is fine)."""
        orchestrator = next((t for t in self._tasks if t.get_name() == "orchestrator"), None)
        if orchestrator is None or orchestrator.done():
            return False
        return self.inbox.empty() or time.monotonic() - self._last_step < 10.0

    def request_stop(self) -> None:
        """Begin a clean shutdown (SIGTERM / SIGINT)."""
        self._stopping.set()

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT; return the exit code."""
        loop = asyncio.get_running_loop()
        loop.set_default_executor(started_executor())  # a thread count that never creeps up
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        self._open_state()
        self._open_link()
        self.face, server = make_face(self.config, self._on_screen_tap, self._on_screen_text)
        self.dispatch.face = self.face
        self.link.set_status(self._status_message())
        # What the last boot left open is closed first; the face shows asleep while the models load.
        opened = Booted(self.records.load("utterances"), self.records.load("replies"), time.time())
        await self._step(opened)
        self._spawn(self.link.run(), "mqtt-link")
        server = await self._serve_face(server)
        self._spawn(self.face.run(), "face")
        self.button = make_button(self.config.button)
        self.button.start(loop, self._on_press)
        failed = await self._load_audio_parts()
        if failed is not None:
            return await self._abort_start(server, failed)
        self._spawn(self._orchestrate(), "orchestrator")
        stores: list[Store] = [self.state_dir, self.outbox, self.gate.store]
        self._spawn(StorageWatch(stores, self.put).run(), "storage-watch")
        self._spawn(self._announce_ready(), "readiness")
        if self.config.device.watchdog:
            self._spawn(self.notifier.keep_alive(self.healthy), "watchdog")
        await self._stopping.wait()
        await self._shutdown(server)
        return 0

    def _open_state(self) -> None:
        """This boot's number and the persisted settings."""
        cfg = self.config
        self.boot = self.state_dir.next_boot()
        settings = self.state_dir.load_settings(
            Settings(volume=cfg.speaking.volume, language=cfg.hearing.stt_language)
        )
        self.state = initial_state(settings)
        _LOGGER.info(
            "robot-face %s: device %s boot %d, state in %s%s; %s",
            __version__,
            cfg.device.id,
            self.boot,
            self.state_dir.root,
            " (simulation)" if cfg.device.simulate else "",
            machine_summary(),
        )

    def _open_link(self) -> None:
        """Outbox, command gate, message reader, the MQTT link and the dispatch (parts come later)."""
        cfg = self.config
        self.outbox = Outbox(self.state_dir.outbox_path, cfg.device.id, self.boot)
        self.gate = CommandGate(CommandIdStore(self.state_dir.command_ids_path))
        self.messages = MessageReader(self.gate, self.put, self.boot, self._feed_sim_audio)
        self.link = MqttLink(
            cfg.mqtt,
            cfg.device.id,
            self.boot,
            self.outbox,
            self.messages,
            self._on_connection,
            simulate=cfg.device.simulate,
        )
        self.dispatch = Dispatch(
            put=self.put, outbox=self.outbox, link=self.link, records=self.records, settings=self.state_dir
        )

    async def _serve_face(self, server: FaceWebServer | None) -> FaceWebServer | None:
        if server is None:
            return None
        try:
            await server.start()
        except OSError as err:
            _LOGGER.error("Face page not served (%s); continuing without it", err)
            return None
        _LOGGER.info("Face page at %s", server.url)
        return server

    async def _load_audio_parts(self) -> str | None:
        """Load the models, build listener and speaker; why the start cannot go on, or None."""
        cfg = self.config
        self.notifier.status("loading models")
        self.transcriber = make_transcriber(cfg.hearing)
        turn_model = make_turn_model(cfg.hearing)  # None with hearing.turn_detector = "silence"
        try:
            await asyncio.to_thread(self.transcriber.load)
            if turn_model is not None:
                await asyncio.to_thread(turn_model.load)
        except ModelUnavailable as err:
            return str(err)
        self.source = make_source(cfg)
        self.listener = Listener(cfg.hearing, self.source, self.transcriber, self.put, turn_model=turn_model)
        self.speaker = make_speaker(cfg, self.state_dir, self.put, self.source)
        self.dispatch.listener, self.dispatch.speaker = self.listener, self.speaker
        self.dispatch.transcriber = self.transcriber
        try:
            await self.speaker.start()
        except VoiceNotFound as err:  # a setting to fix, like a missing Whisper model
            return f"speaking.voice: {err}"
        except Exception as err:
            _LOGGER.error("Speaker not available: %s (continuing; replies cannot be heard)", err)
            self.put(AudioDeviceProblem("output", False, str(err), time.time()))
        return None

    async def _abort_start(self, server: FaceWebServer | None, why: str) -> int:
        """A start that cannot go on (a model or voice that cannot be loaded: fixing it takes a config
        change, so systemd is told not to restart, exit 2): say why in the log and to systemd,
        leave the broker with the offline status, release what was started."""
        _LOGGER.error("Cannot start: %s", why)
        self.notifier.stopping(f"cannot start: {why}")
        await self._close_link_and_parts(server)
        return 2

    async def _close_link_and_parts(self, server: FaceWebServer | None) -> None:
        """Store the events published so far, leave the broker the offline status (the link's last
        flush sends them), end every task, close button, face, outbox and the face page."""
        await self.dispatch.flush()
        with contextlib.suppress(Exception):
            await self.link.shutdown(self._status_message(online=False), flush_timeout=3.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.dispatch.flush()  # what a cancelled task published: on disk for the next boot
        for closer in (self.button.close, self.face.close, self.outbox.close):
            with contextlib.suppress(Exception):
                closer()
        if server is not None:
            with contextlib.suppress(Exception):
                await server.stop()

    async def _announce_ready(self) -> None:
        deadline = time.monotonic() + READY_WAIT_S
        while not self.link.connected and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        status = "ready" if self.link.connected else "ready (broker not reachable yet)"
        self.notifier.ready(status)
        _LOGGER.info(
            "Ready: models loaded, %s",
            "broker connected" if self.link.connected else "broker not reachable yet",
        )

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        task.add_done_callback(self._task_done)
        self._tasks.append(task)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _LOGGER.error("Task %s died: %r", task.get_name(), task.exception(), exc_info=task.exception())

    async def _shutdown(self, server: FaceWebServer | None) -> None:
        _LOGGER.info("Shutting down: finishing nothing new, flushing events")
        self.notifier.stopping("shutting down")
        with contextlib.suppress(Exception):
            self.speaker.stop()
        await self.dispatch.drain(2.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.listener.close(), 2.0)
        await asyncio.sleep(0.05)  # let the parts hand over their last events (playback_finished...)
        self.inbox.end()
        orchestrator = next(t for t in self._tasks if t.get_name() == "orchestrator")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(orchestrator), 2.0)
        self.dispatch.close()
        await self._close_link_and_parts(server)
        with contextlib.suppress(Exception):
            await self.speaker.aclose()
        with contextlib.suppress(Exception):
            await self.listener.aclose()
        _LOGGER.info("Stopped")
