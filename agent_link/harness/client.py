"""``AgentHarness``: the agent's side of protocol v1 as a Python API, for tests and benches.

Connects with MQTT 5 (aiomqtt), subscribes to the device's status and events, sends commands and
simulated inputs, and records everything. Waiting is cursor-based: ``wait_for`` returns the first
matching event not yet returned by an earlier ``wait_for`` (at or after ``mark()``), so an event is
never consumed twice; on timeout it raises :class:`HarnessTimeout` listing what arrived instead.
The connection survives broker restarts (it reconnects and resumes its persistent session).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from agent_link.harness.broker_url import parse_broker_url
from agent_link.harness.contract import Violation, assert_contract, check_contract
from agent_link.harness.matching import (
    EventSpec,
    assert_sequence,
    describe_all,
    describe_spec,
    matches,
)
from agent_link.harness.records import BadMessage, HarnessTimeout, SentMessage, new_id
from agent_link.protocol.messages import (
    Command,
    ConfigCommand,
    Event,
    ProtocolError,
    SayCommand,
    SleepAllowedCommand,
    SleepCommand,
    StatusMessage,
    StopCommand,
    decode_event,
    decode_status,
)
from agent_link.protocol.topics import DEFAULT_DEVICE_ID, Topics

_LOGGER = logging.getLogger(__name__)

Listener = Callable[[Any], None]
"""Called (on the event loop) with every decoded ``Event``, ``StatusMessage`` or ``BadMessage``."""


class AgentHarness:
    """Plays the agent against one device over a broker (async context manager)."""

    def __init__(
        self,
        broker_url: str,
        root: str = "robotface",
        device_id: str = DEFAULT_DEVICE_ID,
        *,
        client_id: str | None = None,
        ca_file: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.address = parse_broker_url(broker_url)
        self.topics = Topics(root, device_id)
        self.client_id = client_id or new_id(f"harness-{device_id}")
        self.events: list[Event] = []
        """Every decoded event, in arrival order (re-deliveries included)."""
        self.statuses: list[StatusMessage] = []
        """Every status received (the retained one first)."""
        self.bad: list[BadMessage] = []
        """Device payloads that did not decode."""
        self.sent: list[SentMessage] = []
        """Everything this harness published."""
        self._ca_file, self._cert_file, self._key_file = ca_file, cert_file, key_file
        self._connect_timeout = connect_timeout
        self._consumed: set[int] = set()
        self._floor = 0
        self._changed = asyncio.Event()
        self._connected = asyncio.Event()
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[Listener] = []
        self._closing = False
        self._first_error: BaseException | None = None
        self.connections = 0
        """How many times the harness has connected (1 + reconnects)."""

    # ---- lifecycle ---------------------------------------------------------------------------------
    async def __aenter__(self) -> AgentHarness:
        self._task = asyncio.create_task(self._run(), name=f"harness {self.client_id}")
        try:
            await asyncio.wait_for(self._connected.wait(), self._connect_timeout)
        except TimeoutError:
            await self.close()
            detail = f": {self._first_error}" if self._first_error else ""
            raise ConnectionError(
                f"harness could not connect to {self.address.host}:{self.address.port} "
                f"within {self._connect_timeout:.0f} s{detail}"
            ) from None
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Disconnect and stop the reader."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def _tls_context(self) -> ssl.SSLContext | None:
        if not self.address.tls:
            return None
        context = ssl.create_default_context(cafile=self._ca_file)
        if self._cert_file:
            context.load_cert_chain(self._cert_file, self._key_file)
        return context

    async def _run(self) -> None:
        first = True
        while not self._closing:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 600
            client = aiomqtt.Client(
                self.address.host,
                self.address.port,
                identifier=self.client_id,
                username=self.address.username,
                password=self.address.password,
                protocol=aiomqtt.ProtocolVersion.V5,
                clean_start=first,
                properties=props,
                keepalive=30,
                tls_context=self._tls_context(),
                # No Nagle: a command sent right after a PUBACK must not wait for the broker's delayed ACK.
                socket_options=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
            )
            try:
                async with client:
                    self._client = client
                    await client.subscribe(self.topics.status, qos=1)
                    await client.subscribe(self.topics.event, qos=1)
                    first = False
                    self.connections += 1
                    self._connected.set()
                    _LOGGER.debug("harness %s connected", self.client_id)
                    async for message in client.messages:
                        self._on_message(str(message.topic), message.payload)
            except aiomqtt.MqttError as err:
                self._first_error = self._first_error or err
                _LOGGER.info("harness connection lost (%s); reconnecting", err)
            finally:
                self._connected.clear()
                self._client = None
            if not self._closing:
                await asyncio.sleep(0.5)

    def _on_message(self, topic: str, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else str(payload or "").encode()
        now = time.time()
        item: Any
        try:
            if topic == self.topics.event:
                item = decode_event(data)
                self.events.append(item)
            elif topic == self.topics.status:
                if not data:
                    return
                item = decode_status(data)
                self.statuses.append(item)
            else:
                return
        except ProtocolError as err:
            item = BadMessage(topic, data, str(err), now)
            self.bad.append(item)
            _LOGGER.warning("device sent an invalid message on %s: %s", topic, err)
        for listener in list(self._listeners):
            try:
                listener(item)
            except Exception:
                _LOGGER.exception("harness listener failed")
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def connected(self) -> bool:
        """True while connected to the broker."""
        return self._connected.is_set()

    async def wait_connected(self, timeout: float = 10.0, connections: int = 1) -> None:
        """Wait until connected, at least ``connections`` times in all (2 = after one reconnect)."""
        deadline = time.monotonic() + timeout
        while not (self.connected and self.connections >= connections):
            if time.monotonic() > deadline:
                raise HarnessTimeout(f"harness not (re)connected to the broker within {timeout:.1f} s")
            await asyncio.sleep(0.05)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with every event, status and bad message from now on."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    # ---- publishing --------------------------------------------------------------------------------
    async def _publish(
        self, topic: str, payload: bytes, what: str, retain: bool = False, command: Command | None = None
    ) -> None:
        try:
            await asyncio.wait_for(self._connected.wait(), self._connect_timeout)
        except TimeoutError:
            raise ConnectionError(f"harness not connected to the broker; cannot publish {what}") from None
        assert self._client is not None
        self.sent.append(SentMessage(topic, what, payload, time.time(), command))
        await self._client.publish(topic, payload, qos=1, retain=retain)

    async def send(self, command: Command) -> str:
        """Publish a command; returns its id."""
        await self._publish(self.topics.command, command.encode(), command.type, command=command)
        return command.id

    async def say(
        self,
        text: str,
        say_id: str | None = None,
        final: bool = True,
        expires_at: float | None = None,
        command_id: str | None = None,
    ) -> str:
        """Send one ``say`` chunk; the reply id defaults to the command id. Returns the command id."""
        cid = command_id or new_id("say")
        return await self.send(
            SayCommand(id=cid, say=say_id or cid, text=text, final=final, expires_at=expires_at)
        )

    async def stop(self, expires_at: float | None = None, command_id: str | None = None) -> str:
        """Send ``stop``; returns the command id."""
        return await self.send(StopCommand(id=command_id or new_id("stop"), expires_at=expires_at))

    async def sleep(self, expires_at: float | None = None, command_id: str | None = None) -> str:
        """Send ``sleep``; returns the command id."""
        return await self.send(SleepCommand(id=command_id or new_id("sleep"), expires_at=expires_at))

    async def sleep_allowed(
        self, value: bool, expires_at: float | None = None, command_id: str | None = None
    ) -> str:
        """Send ``sleep_allowed``; returns the command id."""
        cid = command_id or new_id("allow")
        return await self.send(SleepAllowedCommand(id=cid, value=value, expires_at=expires_at))

    async def config(
        self,
        language: str | None = None,
        voice: str | None = None,
        volume: float | None = None,
        command_id: str | None = None,
    ) -> str:
        """Send ``config`` with the given settings; returns the command id."""
        cid = command_id or new_id("config")
        return await self.send(ConfigCommand(id=cid, language=language, voice=voice, volume=volume))

    async def send_raw(self, payload: bytes | str | dict[str, Any]) -> None:
        """Publish anything on the command topic (malformed-input tests); a dict is JSON-encoded."""
        if isinstance(payload, dict):
            payload = json.dumps(payload)
        data = payload.encode() if isinstance(payload, str) else payload
        await self._publish(self.topics.command, data, "raw")

    async def sim_tap(self) -> None:
        """Simulated tap (``sim/tap``)."""
        await self._publish(self.topics.sim_tap, b"{}", "sim/tap")

    async def sim_text(self, text: str) -> None:
        """Simulated typed input (``sim/text``)."""
        await self._publish(self.topics.sim_text, json.dumps({"text": text}).encode(), "sim/text")

    async def sim_audio(self, wav_bytes: bytes) -> None:
        """Simulated microphone input: a PCM WAV file (``sim/audio``)."""
        await self._publish(self.topics.sim_audio, wav_bytes, "sim/audio")

    async def set_agent_online(self, online: bool) -> None:
        """Publish the retained ``{root}/agent/status``."""
        await self._publish(
            self.topics.agent_status, json.dumps({"online": online}).encode(), "agent/status", retain=True
        )

    # ---- waiting -----------------------------------------------------------------------------------
    def mark(self) -> int:
        """Ignore every event received so far in later waits; returns the new floor index."""
        self._floor = len(self.events)
        return self._floor

    def since(self, index: int | None = None) -> list[Event]:
        """Events from ``index`` (default: the last ``mark()``) on."""
        return self.events[self._floor if index is None else index :]

    @property
    def status(self) -> StatusMessage | None:
        """The latest status, or ``None`` before any arrived."""
        return self.statuses[-1] if self.statuses else None

    async def _wait_change(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    def _find(self, spec: EventSpec, fields: dict[str, Any], start: int) -> int | None:
        for index in range(start, len(self.events)):
            if index not in self._consumed and matches(self.events[index], spec, fields):
                return index
        return None

    async def wait_for(self, spec: EventSpec, timeout: float = 10.0, **fields: Any) -> Any:
        """The first unconsumed event since ``mark()`` matching ``spec`` and ``fields``; consumes it.

        Returns an ``Event`` (typed ``Any`` so callers read the fields of the type they waited for).

        ``spec`` is an event type, a predicate, or ``(type, {field: value})``; a field value may be
        a predicate on the field. Raises :class:`HarnessTimeout` after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            index = self._find(spec, fields, self._floor)
            if index is not None:
                self._consumed.add(index)
                return self.events[index]
            if not await self._wait_change(deadline):
                raise HarnessTimeout(
                    f"no {describe_spec(spec, fields)} within {timeout:.1f} s; "
                    f"arrived since mark:\n{describe_all(self.since())}{self._status_line()}"
                )

    async def expect_none(self, spec: EventSpec, within: float, **fields: Any) -> None:
        """Wait ``within`` seconds and fail if an event matching ``spec`` arrives meanwhile."""
        start = len(self.events)
        await asyncio.sleep(within)
        bad = [ev for ev in self.events[start:] if matches(ev, spec, fields)]
        if bad:
            raise AssertionError(
                f"unexpected {describe_spec(spec, fields)} within {within:.1f} s:\n{describe_all(bad)}"
            )

    def _status_line(self) -> str:
        st = self.status
        if st is None:
            return "\n  status: (none received)"
        return (
            f"\n  status: online={st.online} boot={st.boot} state={st.state} sleep_allowed={st.sleep_allowed}"
        )

    async def wait_status(
        self, state: str | None = None, timeout: float = 10.0, new: bool = False, **fields: Any
    ) -> StatusMessage:
        """Wait until the latest status has ``state`` and ``fields`` (``new``: a status received later)."""
        want = dict(fields)
        if state is not None:
            want["state"] = state
        start = len(self.statuses) if new else max(0, len(self.statuses) - 1)
        deadline = time.monotonic() + timeout

        def ok(st: StatusMessage) -> bool:
            return all(getattr(st, k, None) == v for k, v in want.items())

        while True:
            if len(self.statuses) > start and ok(self.statuses[-1]):
                return self.statuses[-1]
            if not await self._wait_change(deadline):
                shown = ", ".join(f"{k}={v!r}" for k, v in want.items())
                seen = "\n".join(
                    f"    boot={s.boot} online={s.online} state={s.state} sleep_allowed={s.sleep_allowed}"
                    for s in self.statuses[-8:]
                )
                raise HarnessTimeout(
                    f"status never showed {shown} within {timeout:.1f} s; last statuses:\n"
                    f"{seen or '    (none)'}"
                )

    # ---- checks ------------------------------------------------------------------------------------
    def assert_sequence(self, specs: Sequence[EventSpec], since: int | None = None) -> list[Event]:
        """Events since ``mark()`` (or ``since``) contain ``specs`` in order."""
        return assert_sequence(self.since(since), specs)

    def check_contract(self, **options: bool) -> list[Violation]:
        """Contract violations over everything received (see ``contract.check_contract``)."""
        return check_contract(self.events, **options)

    def assert_contract(self, **options: bool) -> None:
        """Raise if any contract rule was broken, or the device sent undecodable payloads."""
        if self.bad:
            lines = "\n".join(f"  - {b.topic}: {b.error}" for b in self.bad)
            raise AssertionError(f"device sent {len(self.bad)} invalid message(s):\n{lines}")
        assert_contract(self.events, **options)
