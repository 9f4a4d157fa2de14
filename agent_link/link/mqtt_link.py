"""The MQTT link: one asyncio task that keeps the device connected to the broker.

MQTT 5, client id = device id, persistent session (``clean_start`` false, session expiry ≥ 1 h),
Last Will = retained ``{"v":1,"online":false,"boot":N}`` on the status topic, QoS 1 everywhere, no
topic aliases. On every connect: renew subscriptions, publish the current (birth) status retained,
then drain the outbox in order, acknowledging each event only after its PUBACK. Any error ends the
connection; the task reconnects with exponential back-off and jitter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
from aiomqtt.exceptions import MqttConnectError
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from agent_link.link.outbox import Outbox, OutboxError
from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import StatusMessage
from agent_link.protocol.topics import Topics


class PublishRefused(aiomqtt.MqttError):
    """The broker answered a QoS 1 PUBLISH with a failure reason code (e.g. 0x87 not authorised)."""


_LOGGER = logging.getLogger(__name__)

MessageHandler = Callable[[str, bytes, float], None]
"""``on_message(kind, payload, received_ts)``; kind ∈ command, agent_status, sim_tap, sim_text, sim_audio."""
ConnectionHandler = Callable[[bool, str], None]
"""``on_connection(connected, detail)``."""

_SIM_KINDS = frozenset({"sim_tap", "sim_text", "sim_audio"})
_STABLE_AFTER_S = 10.0
"""A connection that lasted this long resets the back-off."""


def backoff_delay(attempt: int, min_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Delay before reconnect attempt ``attempt`` (0-based): ``min_s·2^attempt`` capped at ``max_s``,
    with jitter in [half, full] of that."""
    ceiling = min(max_s, min_s * (2 ** min(attempt, 30)))
    return (rng or random).uniform(ceiling / 2, ceiling)


def _is_tls_failure(err: BaseException) -> bool:
    text = str(err)
    return isinstance(err, ssl.SSLError) or "SSL" in text or "certificate" in text.lower()


def _disconnect_with_will(client: aiomqtt.Client) -> None:
    """Leave after an error or cancellation with DISCONNECT reason 0x04, so the broker still publishes
    the Last Will (a normal DISCONNECT would suppress it and leave a stale ``online: true``)."""
    paho_client: paho.Client = client._client
    if paho_client.is_connected():
        with contextlib.suppress(Exception):
            paho_client.disconnect(
                reasoncode=ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message")
            )


def _payload_bytes(payload: Any) -> bytes:
    if payload is None:
        return b""
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    return str(payload).encode()


class MqttLink:
    """Keeps one device connected; see the module docstring for the behaviour."""

    def __init__(
        self,
        settings: LinkSettings,
        device_id: str,
        boot: int,
        outbox: Outbox,
        on_message: MessageHandler,
        on_connection: ConnectionHandler,
        *,
        simulate: bool = False,
    ) -> None:
        settings.check_files()
        self.settings = settings
        self.device_id = device_id
        self.boot = boot
        self.outbox = outbox
        self.topics = Topics(settings.root, device_id)
        self.simulate = simulate
        self._on_message = on_message
        self._on_connection = on_connection
        self._status = StatusMessage(online=True, boot=boot)
        self._status_dirty = True
        self._final_status: StatusMessage | None = None
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._done = asyncio.Event()
        self._running = False
        self._refusals: list[str] = []
        self._refused_streak = 0
        self._connected = False
        self._flush_deadline = 0.0

    # ---- public API ----------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """True while connected to the broker (subscriptions renewed, not yet disconnected)."""
        return self._connected

    def set_status(self, status: StatusMessage) -> None:
        """Remember the current status; it is published retained now (if connected) and on each connect."""
        self._status = status
        self._status_dirty = True
        self._wake.set()

    def notify_outbox(self) -> None:
        """Events were appended to the outbox: publish them."""
        self._wake.set()

    async def run(self) -> None:
        """The link task: connect, serve, reconnect with back-off, until :meth:`shutdown`."""
        if self._running:
            raise RuntimeError("MqttLink.run() is already running")
        self._running = True
        attempt = 0
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    await self._connection()
                except MqttConnectError as err:
                    self._log_refused(err)
                except PublishRefused as err:
                    _LOGGER.error(
                        "%s; the event stays in the outbox and is retried with back-off (check the broker ACL)",
                        err,
                    )
                except (aiomqtt.MqttError, OSError) as err:
                    if _is_tls_failure(err):
                        _LOGGER.error(
                            "TLS with broker %s failed: %s (check ca_file / cert_file / key_file)",
                            self.settings.broker,
                            err,
                        )
                    else:
                        _LOGGER.warning("MQTT connection to %s lost or failed: %s", self.settings.broker, err)
                except Exception:  # a bug or an outbox failure must not end the link task
                    _LOGGER.exception("MQTT link error; reconnecting")
                finally:
                    if self._connected:
                        self._connected = False
                        self._notify_connection(False, "disconnected")
                if self._stop.is_set():
                    break
                if time.monotonic() - started > _STABLE_AFTER_S:
                    attempt = 0
                delay = backoff_delay(
                    max(attempt, self._refused_streak),
                    self.settings.reconnect_min_s,
                    self.settings.reconnect_max_s,
                )
                attempt += 1
                _LOGGER.info(
                    "Reconnecting to %s in %.1f s (attempt %d)", self.settings.broker, delay, attempt
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
        finally:
            self._running = False
            self._done.set()

    async def shutdown(self, final_status: StatusMessage, flush_timeout: float = 3.0) -> None:
        """Publish ``final_status`` (``online: false``) retained, flush the outbox for at most
        ``flush_timeout`` seconds, then disconnect cleanly (a clean DISCONNECT suppresses the Will)."""
        self._status = final_status
        self._final_status = final_status
        self._flush_deadline = time.monotonic() + flush_timeout
        self._stop.set()
        self._wake.set()
        if not self._running:
            return
        try:
            await asyncio.wait_for(self._done.wait(), flush_timeout + self.settings.connect_timeout_s)
        except TimeoutError:
            _LOGGER.warning("MQTT link did not stop within %.1f s", flush_timeout)

    # ---- one connection ------------------------------------------------------------------------------
    def _client(self) -> aiomqtt.Client:
        host, port, tls = self.settings.endpoint()
        connect_props = Properties(PacketTypes.CONNECT)
        connect_props.SessionExpiryInterval = self.settings.session_expiry_s
        will = aiomqtt.Will(
            self.topics.status,
            StatusMessage(online=False, boot=self.boot).encode(),
            qos=1,
            retain=True,
        )
        client = aiomqtt.Client(
            host,
            port,
            identifier=self.device_id,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,
            properties=connect_props,
            keepalive=self.settings.keepalive_s,
            will=will,
            username=self.settings.username,
            password=self.settings.read_password(),
            tls_context=self._tls_context() if tls else None,
            timeout=self.settings.connect_timeout_s,
            logger=logging.getLogger(f"{__name__}.paho"),
            # No Nagle: every event and command is a small packet that should leave at once.
            socket_options=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
        )
        # aiomqtt drops the PUBACK reason code; keep failures so a refused event is never acked away.
        aiomqtt_on_publish: Any = client._client.on_publish
        self._refusals.clear()

        def on_publish(c: paho.Client, userdata: Any, mid: int, reason: ReasonCode, props: Any) -> None:
            if reason is not None and reason.is_failure:
                self._refusals.append(str(reason))
            aiomqtt_on_publish(c, userdata, mid, reason, props)

        client._client.on_publish = on_publish
        # Acknowledge incoming QoS 1 messages only after on_message has taken them (see _read):
        # a crash before that makes the broker redeliver them. aiomqtt does not expose this setting.
        client._client.manual_ack_set(True)
        return client

    def _tls_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.settings.ca_file)
        if self.settings.cert_file:
            context.load_cert_chain(self.settings.cert_file, self.settings.key_file)
        if self.settings.tls_insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def _connection(self) -> None:
        if self._stop.is_set():
            return
        async with self._client() as client:
            await self._subscribe(client)
            self._status_dirty = True
            self._connected = True
            self._notify_connection(True, f"connected to {self.settings.broker}")
            _LOGGER.info("Connected to %s as %s", self.settings.broker, self.device_id)
            reader = asyncio.create_task(self._read(client), name="mqtt-reader")
            writer = asyncio.create_task(self._write(client), name="mqtt-writer")
            try:
                done, _ = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()  # re-raise the connection error, if any
            except BaseException:
                _disconnect_with_will(client)
                raise
            finally:
                for task in (reader, writer):
                    task.cancel()
                await asyncio.gather(reader, writer, return_exceptions=True)
            self._connected = False
            self._notify_connection(False, "disconnected cleanly")

    async def _subscribe(self, client: aiomqtt.Client) -> None:
        wanted = [self.topics.command, self.topics.agent_status]
        sim = [self.topics.sim_tap, self.topics.sim_text, self.topics.sim_audio]
        if self.simulate:
            wanted += sim
        else:
            # A persistent session may still hold sim subscriptions from an earlier simulated run.
            await client.unsubscribe(sim)
        for topic in wanted:
            codes = await client.subscribe(topic, qos=1)
            for code in codes:
                value = code.value if isinstance(code, paho.ReasonCode) else int(code)
                if value >= 0x80:
                    _LOGGER.error("Broker refused subscription to %s: %s", topic, code)

    async def _read(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            received = time.time()
            topic = str(message.topic)
            kind = self.topics.kind_of(topic)
            payload = _payload_bytes(message.payload)
            if kind is None or (kind in _SIM_KINDS and not self.simulate):
                _LOGGER.warning("Ignored message on unexpected topic %s", topic)
                self._ack_incoming(client, message)
                continue
            if kind == "command" and len(payload) > self.settings.max_payload_bytes:
                _LOGGER.warning(
                    "Command payload of %d bytes exceeds %d", len(payload), self.settings.max_payload_bytes
                )
            try:
                self._on_message(kind, payload, received)
            except Exception:
                _LOGGER.exception("on_message handler failed for %s", topic)
            finally:
                self._ack_incoming(client, message)

    @staticmethod
    def _ack_incoming(client: aiomqtt.Client, message: aiomqtt.Message) -> None:
        """PUBACK an incoming message (in arrival order, as MQTT requires)."""
        if message.qos > 0:
            client._client.ack(message.mid, message.qos)

    async def _write(self, client: aiomqtt.Client) -> None:
        while True:
            self._wake.clear()
            if self._stop.is_set():
                await self._final_flush(client)
                return
            if self._status_dirty:
                self._status_dirty = False
                await self._publish_status(client, self._status)
            try:
                batch = self.outbox.pending(self.settings.outbox_batch)
            except OutboxError as err:
                _LOGGER.error("%s; retrying in 5 s", err)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 5.0)
                continue
            for key, payload in batch:
                if self._stop.is_set():
                    break
                await self._publish(client, self.topics.event, payload, self.settings.publish_timeout_s)
                self._ack(key)
            if not batch:
                await self._wake.wait()

    async def _final_flush(self, client: aiomqtt.Client) -> None:
        """Shutdown: offline status first, then as much of the outbox as time allows."""
        final = self._final_status or self._status
        remaining = max(0.1, self._flush_deadline - time.monotonic())
        await self._publish_status(client, final, timeout=remaining)
        while (remaining := self._flush_deadline - time.monotonic()) > 0:
            batch = self.outbox.pending(self.settings.outbox_batch)
            if not batch:
                return
            for key, payload in batch:
                remaining = self._flush_deadline - time.monotonic()
                if remaining <= 0:
                    break
                await self._publish(client, self.topics.event, payload, remaining)
                self._ack(key)
        left = len(self.outbox)
        if left:
            _LOGGER.warning("Shutdown: %d events stay in the outbox for the next start", left)

    async def _publish_status(
        self, client: aiomqtt.Client, status: StatusMessage, timeout: float | None = None
    ) -> None:
        await self._publish(
            client,
            self.topics.status,
            status.encode(),
            timeout if timeout is not None else self.settings.publish_timeout_s,
            retain=True,
        )

    async def _publish(
        self, client: aiomqtt.Client, topic: str, payload: bytes, timeout: float, retain: bool = False
    ) -> None:
        """QoS 1 publish that raises :class:`PublishRefused` when the broker's PUBACK says no."""
        self._refusals.clear()
        await client.publish(topic, payload, qos=1, retain=retain, timeout=timeout)
        if self._refusals:
            self._refused_streak += 1
            raise PublishRefused(f"broker refused a publish to {topic}: {self._refusals[-1]}")
        self._refused_streak = 0

    def _ack(self, key: int) -> None:
        try:
            self.outbox.ack(key)
        except OutboxError as err:  # the event will be re-sent (same id): the agent dedupes by id
            _LOGGER.error("%s", err)

    def _notify_connection(self, connected: bool, detail: str) -> None:
        try:
            self._on_connection(connected, detail)
        except Exception:
            _LOGGER.exception("on_connection handler failed")

    def _log_refused(self, err: MqttConnectError) -> None:
        hint = ""
        text = str(err).lower()
        if "password" in text or "authori" in text or "auth" in text:
            hint = " (check username / password_file and the broker's ACL)"
        _LOGGER.error("Broker %s refused the connection: %s%s", self.settings.broker, err, hint)
