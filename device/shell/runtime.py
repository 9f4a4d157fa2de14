"""The async shell around the orchestrator core: one inbox, parts wired by actions and events.

Threads only at the edges: the MQTT link, audio callbacks, Whisper and Piper hand their results to
this loop; the loop runs ``step`` for each event and executes the actions it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import signal
import time
from typing import Any

from agent_link.link.command_ids import CommandIdStore
from agent_link.link.gate import CommandGate, Rejection
from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox, OutboxError
from agent_link.protocol.errors import ProtocolError
from agent_link.protocol.messages import StatusMessage, decode_agent_status, decode_sim_text
from audio.edges.capture import AudioSource, SimulatedMicrophone
from audio.edges.wav import WavError, load_audio
from audio.events import AudioDeviceProblem, AudioEvent
from audio.hearing.listener import Listener
from audio.hearing.stt import ModelUnavailable, make_transcriber
from audio.speaking.tts import VoiceNotFound
from device import __version__
from device.buttons.choice import action_for, make_button
from device.buttons.press import ButtonPress
from device.config import Config
from device.core.actions import (
    Action,
    ApplySettings,
    CancelTimer,
    CloseMicrophone,
    HoldSpeech,
    OpenMicrophone,
    PlayVisemes,
    Publish,
    ReleaseSpeech,
    SaveSettings,
    ScheduleTimer,
    SetHalfDuplex,
    ShowExpression,
    Speak,
    StopSpeaking,
)
from device.core.inputs import (
    AgentPresence,
    CommandReceived,
    CommandRefused,
    DeviceInput,
    LinkChanged,
    Tapped,
    TimerFired,
    TypedText,
)
from device.core.orchestrator import Rules, boot_actions, display_of, initial_state, status_fields, step
from device.core.state import DeviceState, Settings
from device.persistence import StateDir
from device.shell.notify import SystemdNotifier
from device.shell.parts import make_face, make_source, make_speaker
from face.state import FaceState
from face.tags import TagVocabulary
from face.web import FaceWebServer

_LOGGER = logging.getLogger(__name__)

READY_WAIT_S = 20.0
"""How long readiness waits for the broker before telling systemd it is up anyway, in seconds."""


class _Stop:
    """Inbox sentinel: the orchestrator loop ends after the events before it."""


class Runtime:
    """The device daemon: builds the parts, runs the orchestrator, shuts down cleanly."""

    def __init__(self, config: Config, notifier: SystemdNotifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or SystemdNotifier()
        self.state_dir = StateDir(config.device.state_dir)
        self.boot = 0
        self.rules = Rules(
            thinking_timeout_s=config.device.thinking_timeout_s,
            vocabulary=TagVocabulary(dict(config.face.aliases)),
        )
        self.state: DeviceState = initial_state(Settings())
        self.inbox: asyncio.Queue[DeviceInput | _Stop] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._status: dict[str, Any] | None = None
        self._display: FaceState | None = None
        self._waking: asyncio.TimerHandle | None = None
        self._typed = itertools.count(1)
        self._stopping = asyncio.Event()
        self._last_step = time.monotonic()
        self._tasks: list[asyncio.Task[Any]] = []
        self.source: AudioSource | None = None
        self._open_utterances = self.state_dir.open_ids("utterances")
        self._open_replies = self.state_dir.open_ids("replies")

    # ---- inputs from the edges (all called on the loop) ----------------------------------------------
    def put(self, event: DeviceInput) -> None:
        """Hand an event to the orchestrator."""
        self.inbox.put_nowait(event)

    def _emit_audio(self, event: AudioEvent) -> None:
        if isinstance(event, AudioDeviceProblem):
            log = _LOGGER.info if event.ok else _LOGGER.error
            log("Audio %s device %s: %s", event.direction, "back" if event.ok else "problem", event.detail)
        self.put(event)

    def _on_connection(self, connected: bool, detail: str) -> None:
        self.put(LinkChanged(connected, detail, time.time()))

    def _typed_event(self, text: str, ts: float) -> TypedText:
        return TypedText(f"typed-{self.boot}-{next(self._typed)}", text, ts)

    def _on_message(self, kind: str, payload: bytes, received: float) -> None:
        try:
            self._handle_message(kind, payload, received)
        except Exception:  # never let one bad message hurt the link
            _LOGGER.exception("Error handling a %s message (%d bytes); continuing", kind, len(payload))

    def _handle_message(self, kind: str, payload: bytes, received: float) -> None:
        if kind == "command":
            result = self.gate.check(payload, time.time())
            if isinstance(result, Rejection):
                _LOGGER.warning(
                    "Command %s rejected (%s): %s", result.command_id, result.reason, result.detail
                )
                self.put(CommandRefused(result.command_id, result.reason, result.detail, received))
            elif result is not None:
                self.put(CommandReceived(result, received))
            return
        try:
            if kind == "agent_status":
                self.put(AgentPresence(decode_agent_status(payload).online if payload else False, received))
            elif kind == "sim_tap":
                self.put(Tapped("sim", received))
            elif kind == "sim_text":
                self.put(self._typed_event(decode_sim_text(payload).text, received))
            elif kind == "sim_audio":
                self._feed_sim_audio(payload)
        except (ProtocolError, WavError) as err:
            detail = f"{kind.replace('_', '/')}: {getattr(err, 'detail', err)}"
            _LOGGER.warning("Bad input on %s", detail)
            if kind != "agent_status":
                self.put(CommandRefused(None, "invalid", detail, received))

    def _feed_sim_audio(self, payload: bytes) -> None:
        samples = load_audio(payload, self.config.hearing.sample_rate)
        if not isinstance(self.source, SimulatedMicrophone):
            _LOGGER.warning("Simulated audio dropped: the microphone is not ready yet")
            return
        if not self.source.feed(samples):
            _LOGGER.info("Simulated audio dropped: the microphone is closed (asleep hears nothing)")

    def _on_press(self, press: ButtonPress) -> None:
        if action_for(press, self.config.button) == "tap":
            self.put(Tapped(press.source, press.ts))
        else:
            _LOGGER.info("Long press (%s): no action configured", press.source)

    def _on_screen_tap(self, source: str = "screen") -> None:
        self.put(Tapped("screen", time.time()))

    def _on_screen_text(self, text: str) -> None:
        self.put(self._typed_event(text, time.time()))

    # ---- actions ------------------------------------------------------------------------------------------
    async def _execute(self, action: Action) -> None:
        if isinstance(action, Publish):
            self._publish(action)
        elif isinstance(action, Speak):
            # Recorded before it can sound: a kill mid-reply leaves it for the next boot to close.
            self._open_replies.open(action.say)
            self.speaker.speak(action.say, action.text, action.final)
        elif isinstance(action, StopSpeaking):
            self.speaker.stop()
            self.face.stop_mouth()  # the rest of the piece's mouth timeline is not heard
        elif isinstance(action, HoldSpeech):
            self.speaker.hold_after(action.say)
        elif isinstance(action, ReleaseSpeech):
            self.speaker.release(action.say)
        elif isinstance(action, SetHalfDuplex):
            self.listener.set_speaking(action.speaking)
        elif isinstance(action, OpenMicrophone):
            await self._guard("open the microphone", self.listener.open())
        elif isinstance(action, CloseMicrophone):
            await self._guard("close the microphone", self.listener.close())
        elif isinstance(action, ShowExpression):
            delay = max(0.0, action.at - time.time())
            self._loop_or_fail().call_later(delay, self.face.set_expression, action.emotion)
        elif isinstance(action, PlayVisemes):
            self.face.play_visemes(action.cues, action.start_ts)
        elif isinstance(action, ScheduleTimer):
            self._cancel_timer(action.name)
            delay = max(0.0, action.at - time.time())
            self._timers[action.name] = self._loop_or_fail().call_later(
                delay, self.put, TimerFired(action.name, action.at)
            )
        elif isinstance(action, CancelTimer):
            self._cancel_timer(action.name)
        elif isinstance(action, SaveSettings):
            try:
                self.state_dir.save_settings(
                    Settings(action.sleep_allowed, action.language, action.voice, action.volume)
                )
            except OSError as err:
                _LOGGER.error("Could not save settings to %s: %s", self.state_dir.root, err)
        elif isinstance(action, ApplySettings):
            await self._apply_settings(action)

    async def _guard(self, what: str, coro: Any) -> None:
        try:
            await coro
        except Exception as err:  # the daemon keeps running and says what happened
            _LOGGER.error("Could not %s: %s", what, err)
            self.put(AudioDeviceProblem("input", False, str(err), time.time()))

    async def _apply_settings(self, action: ApplySettings) -> None:
        self.speaker.set_volume(action.volume)
        self.transcriber.set_language(action.language)
        try:
            if action.voice:
                await self.speaker.set_voice(action.voice)
            else:
                await self.speaker.set_language(action.language)
        except Exception as err:
            _LOGGER.error(
                "Could not switch voice (language %s, voice %s): %s", action.language, action.voice, err
            )

    def _publish(self, action: Publish) -> None:
        utterance = action.fields.get("utterance")
        if action.event_type == "speech_started":
            # Recorded before the event is stored: a kill in between leaves nothing open forever.
            self._open_utterances.open(str(utterance))
        try:
            event = self.outbox.append(action.event_type, action.fields, action.ts)
        except OutboxError as err:
            _LOGGER.error("Event %s NOT stored (outbox: %s): %s", action.event_type, err, action.fields)
            return
        except ValueError as err:
            _LOGGER.error("Event %s invalid, not published: %s (%s)", action.event_type, err, action.fields)
            return
        _LOGGER.info("→ %s #%d %s", action.event_type, event.seq, _short(action.fields))
        self.link.notify_outbox()
        if action.event_type in ("transcript", "utterance_failed"):
            self._open_utterances.close(str(utterance))
        elif action.event_type == "playback_finished":
            self._open_replies.close(str(action.fields.get("say")))

    def _close_leftovers(self) -> None:
        """What the previous boot left open (killed mid-utterance or mid-reply) ends as interrupted."""
        for utterance in self._open_utterances.load():
            _LOGGER.warning("Utterance %s was open when the device stopped: closing it", utterance)
            fields = {"utterance": utterance, "reason": "interrupted", "detail": "the device restarted"}
            self._publish(Publish("utterance_failed", fields, time.time()))
        for say in self._open_replies.load():
            _LOGGER.warning("Reply %s was not finished when the device stopped: closing it", say)
            self._publish(Publish("playback_finished", {"say": say, "interrupted": True}, time.time()))

    def _cancel_timer(self, name: str) -> None:
        handle = self._timers.pop(name, None)
        if handle is not None:
            handle.cancel()

    def _loop_or_fail(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None
        return self._loop

    # ---- derived outputs ------------------------------------------------------------------------------
    def _status_message(self, online: bool = True) -> StatusMessage:
        return StatusMessage(
            online=online, boot=self.boot, version=__version__, ts=time.time(), **status_fields(self.state)
        )

    def _refresh_outputs(self) -> None:
        fields = status_fields(self.state)
        if fields != self._status:
            if self._status is not None and fields["state"] != self._status["state"]:
                _LOGGER.info("state %s → %s", self._status["state"], fields["state"])
            self._status = fields
            self.link.set_status(self._status_message())
        display = display_of(self.state)
        if display == self._display:
            return
        previous, self._display = self._display, display
        if previous is FaceState.ASLEEP and display is not FaceState.ASLEEP:
            self.face.show_state(FaceState.WAKING)
            # The wake-up animation plays whole (``face.wake_duration_s``), then the awake state shows.
            wake_s = self.config.face.wake_duration_s
            self._waking = self._loop_or_fail().call_later(wake_s, self._settle_face)
            return
        if display is FaceState.LISTENING:
            self.face.notice()
        if self._waking is not None and display is not FaceState.ASLEEP:
            return  # the wake-up animation finishes first, then shows the latest state
        self._settle_face()

    def _settle_face(self) -> None:
        if self._waking is not None:
            self._waking.cancel()
            self._waking = None
        if self._display is not None:
            self.face.show_state(self._display)

    # ---- the loop --------------------------------------------------------------------------------------
    async def _orchestrate(self) -> None:
        for action in boot_actions(self.state):
            await self._execute(action)
        self._refresh_outputs()
        while True:
            event = await self.inbox.get()
            self._last_step = time.monotonic()
            if isinstance(event, _Stop):
                return
            try:
                self.state, actions = step(self.state, event, self.rules)
                for action in actions:
                    await self._execute(action)
                self._refresh_outputs()
            except Exception:
                _LOGGER.exception("Error handling %r; continuing", event)

    def healthy(self) -> bool:
        """The orchestrator loop is alive and not stuck (an idle loop is fine)."""
        orchestrator = next((t for t in self._tasks if t.get_name() == "orchestrator"), None)
        if orchestrator is None or orchestrator.done():
            return False
        return self.inbox.qsize() == 0 or time.monotonic() - self._last_step < 10.0

    def request_stop(self) -> None:
        """Begin a clean shutdown (SIGTERM / SIGINT)."""
        self._stopping.set()

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT; return the exit code."""
        loop = self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        cfg = self.config
        self.boot = self.state_dir.next_boot()
        settings = self.state_dir.load_settings(
            Settings(volume=cfg.speaking.volume, language=cfg.hearing.stt_language)
        )
        self.state = initial_state(settings)
        _LOGGER.info(
            "robot-face %s: device %s boot %d, state in %s%s",
            __version__,
            cfg.device.id,
            self.boot,
            self.state_dir.root,
            " (simulation)" if cfg.device.simulate else "",
        )
        self.outbox = Outbox(self.state_dir.outbox_path, cfg.device.id, self.boot)
        self.gate = CommandGate(CommandIdStore(self.state_dir.command_ids_path))
        self.link = MqttLink(
            cfg.mqtt,
            cfg.device.id,
            self.boot,
            self.outbox,
            self._on_message,
            self._on_connection,
            simulate=cfg.device.simulate,
        )
        self.link.set_status(self._status_message())
        self._close_leftovers()
        self._spawn(self.link.run(), "mqtt-link")

        self.face, server = make_face(cfg, self._on_screen_tap, self._on_screen_text)
        self.face.show_state(FaceState.ASLEEP)  # the device starts asleep, while the models load
        if server is not None:
            try:
                await server.start()
                _LOGGER.info("Face page at %s", server.url)
            except OSError as err:
                _LOGGER.error("Face page not served (%s); continuing without it", err)
                server = None
        self._spawn(self.face.run(), "face")
        self.button = make_button(cfg.button)
        self.button.start(loop, self._on_press)

        self.notifier.status("loading models")
        self.transcriber = make_transcriber(cfg.hearing)
        try:
            await asyncio.to_thread(self.transcriber.load)
        except ModelUnavailable as err:
            return await self._abort_start(server, str(err))
        self.source = make_source(cfg)
        self.listener = Listener(cfg.hearing, self.source, self.transcriber, self._emit_audio)
        self.speaker = make_speaker(cfg, self.state_dir, self._emit_audio, self.source)
        try:
            await self.speaker.start()
        except VoiceNotFound as err:  # a setting to fix, like a missing Whisper model
            return await self._abort_start(server, f"speaking.voice: {err}")
        except Exception as err:
            _LOGGER.error("Speaker not available: %s (continuing; replies cannot be heard)", err)
            self.put(AudioDeviceProblem("output", False, str(err), time.time()))
        self._spawn(self._orchestrate(), "orchestrator")
        self._spawn(self._announce_ready(), "readiness")
        if cfg.device.watchdog:
            self._spawn(self.notifier.keep_alive(self.healthy), "watchdog")

        await self._stopping.wait()
        await self._shutdown(server)
        return 0

    async def _abort_start(self, server: FaceWebServer | None, why: str) -> int:
        """A start that cannot go on (a model or voice that cannot be loaded: fixing it takes a config
        change, so systemd is told not to restart, exit 2): say why in the log and to systemd,
        leave the broker with the offline status, release what was started."""
        _LOGGER.error("Cannot start: %s", why)
        self.notifier.stopping(f"cannot start: {why}")
        await self._close_link_and_parts(server)
        return 2

    async def _close_link_and_parts(self, server: FaceWebServer | None) -> None:
        """Leave the broker the offline status, end every task, close button, face, outbox and
        the face page."""
        with contextlib.suppress(Exception):
            await self.link.shutdown(self._status_message(online=False), flush_timeout=3.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.listener.close(), 2.0)
        await asyncio.sleep(0.05)  # let the parts hand over their last events (playback_finished...)
        self.inbox.put_nowait(_Stop())
        orchestrator = next(t for t in self._tasks if t.get_name() == "orchestrator")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(orchestrator), 2.0)
        for handle in self._timers.values():
            handle.cancel()
        await self._close_link_and_parts(server)
        with contextlib.suppress(Exception):
            await self.speaker.aclose()
        with contextlib.suppress(Exception):
            await self.listener.aclose()
        _LOGGER.info("Stopped")


def _short(fields: dict[str, Any], limit: int = 160) -> str:
    text = " ".join(f"{k}={v!r}" for k, v in fields.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"
