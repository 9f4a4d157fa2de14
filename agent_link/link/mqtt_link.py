"""The MQTT link: one asyncio task that keeps the device connected to the broker.

MQTT 5, client id = device id, persistent session (``clean_start`` false, session expiry ≥ 1 h),
Last Will = retained ``{"v":1,"online":false,"boot":N}`` on the status topic, QoS 1 everywhere, no
topic aliases. On every connect: renew subscriptions, publish the current (birth) status retained,
then drain the outbox in order, up to ``inflight_window`` events in flight at once (sent without
waiting for the previous PUBACK), acknowledging (deleting, in a worker thread) each event only after
a PUBACK with a success reason code; a failure code (0x87 not authorised) is an error that keeps the
event (and those after it: all are re-sent in order on the next connection). An incoming command is
PUBACKed only after ``on_message`` took it (and, if it returned a future, once that is done: the
command's id is on disk), so a crash before that makes the broker redeliver it. Any error ends the connection (leaving with DISCONNECT 0x04, so the Will is
still published); the task reconnects with exponential back-off and jitter (:func:`backoff_delay`).

Why paho-mqtt directly (:mod:`agent_link.link.connection`) and not aiomqtt: these guarantees need
manual acknowledgement of incoming messages and the PUBACK reason code of each publish. aiomqtt
(2.5) exposes neither publicly — it acknowledges a message before the application sees it and
drops the PUBACK reason code (``_on_publish`` ignores it) — so using it meant reaching into its
private ``_client``. paho 2.x has all of it as public API (``manual_ack_set`` / ``ack``,
``on_publish`` with the reason code, ``will_set``, ``disconnect(reasoncode=)``, MQTT 5 properties)
and documents driving its network loop from an external event loop (``loop_read`` /
``loop_write`` / ``loop_misc`` with the socket callbacks, as in paho's ``examples/loop_asyncio.py``).
That keeps one task and one reconnect loop (paho's own reconnect is never used: a new client per
connection) and hands a command to ``on_message`` straight from the socket's read callback, with
no queue, thread or poll in between. aiomqtt stays for the agent-side harness, which uses only its
public API.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_link.link.connection import ConnectionLost, ConnectRefused, MqttConnection, PublishRefused
from agent_link.link.outbox import Outbox, OutboxError
from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import StatusMessage
from agent_link.protocol.topics import Topics

_LOGGER = logging.getLogger(__name__)

MessageHandler = Callable[[str, bytes, float], "asyncio.Future[None] | None"]
"""``on_message(kind, payload, received_ts)``; kind ∈ command, agent_status, sim_tap, sim_text, sim_audio.
The message is acknowledged when it returned, or when the future it returned is done."""
ConnectionHandler = Callable[[bool, str], None]
"""``on_connection(connected, detail)``."""

_SIM_KINDS = frozenset({"sim_tap", "sim_text", "sim_audio"})
_STABLE_AFTER_S = 10.0
"""A connection that lasted this long resets the back-off."""


@dataclass
class _InFlight:
    """An event published and not yet PUBACKed."""

    key: int
    payload: bytes
    puback: asyncio.Future[Any]
    deadline: float
    """``time.monotonic()`` by which the PUBACK must have come."""


def backoff_delay(attempt: int, min_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Delay before reconnect attempt ``attempt`` (0-based): ``min_s·2^attempt`` capped at ``max_s``,
    with jitter in [half, full] of that."""
    ceiling = min(max_s, min_s * (2 ** min(attempt, 30)))
    return (rng or random).uniform(ceiling / 2, ceiling)


def _is_tls_failure(err: BaseException) -> bool:
    """Whether ``err`` (or the paho error it carries as text) is TLS's: with TLS 1.3 a broker that
    rejects the client certificate may just close the socket after the handshake, which reads as
    "EOF occurred in violation of protocol (_ssl.c...)" rather than an "unknown ca" alert."""
    text = str(err).lower()
    return isinstance(err, ssl.SSLError) or "ssl" in text or "certificate" in text


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
        self._refused_streak = 0
        self._connected = False
        self._flush_deadline = 0.0
        self._deleting: dict[int, bytes] = {}
        """Events PUBACKed and not yet deleted from the outbox (key → payload): not sent again."""
        self._to_delete: list[int] = []
        self._deleter: asyncio.Task[None] | None = None

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
                except Exception as err:  # a bug or an outbox failure must not end the link task either
                    self._log_failure(err)
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
                    async with asyncio.timeout(delay):  # not wait_for: 3.11's can swallow a cancel
                        await self._stop.wait()
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
    async def _connection(self) -> None:
        if self._stop.is_set():
            return
        conn = MqttConnection(
            self.settings,
            self.device_id,
            (self.topics.status, StatusMessage(online=False, boot=self.boot).encode()),
            self._incoming,
            self._wake.set,
        )
        clean = False
        try:
            await conn.open()
            await self._subscribe(conn)
            self._status_dirty = True
            self._connected = True
            self._notify_connection(True, f"connected to {self.settings.broker}")
            _LOGGER.info("Connected to %s as %s", self.settings.broker, self.device_id)
            await self._write(conn)
            clean = True
        finally:
            conn.close(keep_will=not clean)
        self._connected = False
        self._notify_connection(False, "disconnected cleanly")

    async def _subscribe(self, conn: MqttConnection) -> None:
        wanted = [self.topics.command, self.topics.agent_status]
        sim = [self.topics.sim_tap, self.topics.sim_text, self.topics.sim_audio]
        if self.simulate:
            wanted += sim
        else:
            # A persistent session may still hold sim subscriptions from an earlier simulated run.
            await conn.unsubscribe(sim)
        codes = await conn.subscribe(wanted)
        for topic, code in zip(wanted, codes, strict=False):
            if code.is_failure:
                _LOGGER.error("Broker refused subscription to %s: %s", topic, code)

    def _incoming(self, topic: str, payload: bytes) -> asyncio.Future[None] | None:
        """A PUBLISH arrived (called from the socket's read callback): hand it on at once; the
        connection acknowledges it when this returns, or when the future it returns is done."""
        received = time.time()
        kind = self.topics.kind_of(topic)
        if kind is None or (kind in _SIM_KINDS and not self.simulate):
            _LOGGER.warning("Ignored message on unexpected topic %s", topic)
            return None
        if kind == "command" and len(payload) > self.settings.max_payload_bytes:
            _LOGGER.warning(
                "Command payload of %d bytes exceeds %d", len(payload), self.settings.max_payload_bytes
            )
        try:
            return self._on_message(kind, payload, received)
        except Exception:
            _LOGGER.exception("on_message handler failed for %s", topic)
            return None

    async def _write(self, conn: MqttConnection) -> None:
        """Publish the status when it changed and drain the outbox through the window, woken by
        :meth:`notify_outbox`, :meth:`set_status`, :meth:`shutdown`, a PUBACK or the connection
        going down (no timer)."""
        window: deque[_InFlight] = deque()
        while True:
            self._wake.clear()
            if conn.error is not None:
                raise conn.error
            if self._stop.is_set():
                await self._final_flush(conn, window)
                return
            status = self._start_status(conn)
            self._settle(window)
            try:
                self._fill(conn, window)  # right behind the status: not after its PUBACK's round trip
            except OutboxError as err:
                if status is not None:
                    await self._status_acked(conn, status)
                _LOGGER.error("%s; retrying in 5 s", err)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await self._stop.wait()
                continue
            if status is not None:
                await self._status_acked(conn, status)
            await self._wait(window, None)

    def _start_status(self, conn: MqttConnection) -> asyncio.Future[Any] | None:
        """Send the status if it changed (retained), ahead of the events appended with the change: the
        broker gets the packets in this order (agents read the state when an event comes)."""
        if not self._status_dirty:
            return None
        self._status_dirty = False
        return conn.start_publish(self.topics.status, self._status.encode(), retain=True)

    async def _status_acked(self, conn: MqttConnection, sent: asyncio.Future[Any]) -> None:
        """Wait for the status's PUBACK: :class:`PublishRefused` for a failure reason code."""
        try:
            await conn.puback(sent, self.topics.status, self.settings.publish_timeout_s)
        except PublishRefused:
            self._refused_streak += 1
            raise
        self._refused_streak = 0

    async def _wait(self, window: deque[_InFlight], until: float | None) -> bool:
        """Sleep until woken; with events in flight, no longer than the oldest's PUBACK deadline
        (:class:`ConnectionLost` if it passed) or ``until`` (False then)."""
        if not window:
            if until is None:
                await self._wake.wait()
                return True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, until - time.monotonic())):
                    await self._wake.wait()
            return self._wake.is_set()
        head = window[0]
        deadline = head.deadline if until is None else min(head.deadline, until)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await self._wake.wait()
        if head.puback.done() or self._wake.is_set():
            return True
        if time.monotonic() >= head.deadline:
            raise ConnectionLost(f"no PUBACK from the broker within {self.settings.publish_timeout_s:g} s")
        return False

    def _fill(self, conn: MqttConnection, window: deque[_InFlight]) -> None:
        """Publish the oldest pending events not yet sent, until the window is full."""
        room = min(self.settings.inflight_window, conn.receive_maximum) - len(window)
        if room <= 0:
            return
        busy = {item.key for item in window} | self._deleting.keys()
        sent = {item.payload for item in window} | set(self._deleting.values())
        for key, payload in self.outbox.pending(self.settings.outbox_batch + len(busy)):
            if room <= 0:
                break
            if key in busy or payload in sent:  # (a key may change when a read-only outbox recovers)
                continue
            puback = conn.start_publish(self.topics.event, payload)
            puback.add_done_callback(lambda _: self._wake.set())
            window.append(_InFlight(key, payload, puback, time.monotonic() + self.settings.publish_timeout_s))
            room -= 1

    def _settle(self, window: deque[_InFlight]) -> None:
        """Take the PUBACKed events off the head of the window (in order) and have them deleted;
        a failure reason code raises :class:`PublishRefused` (it and those after it stay)."""
        while window and window[0].puback.done():
            item = window.popleft()
            reason = item.puback.result()  # a LinkError if the connection went down meanwhile
            if reason.is_failure:
                self._refused_streak += 1
                raise PublishRefused(f"broker refused a publish to {self.topics.event}: {reason}")
            self._refused_streak = 0
            self._deleting[item.key] = item.payload
            self._to_delete.append(item.key)
        if self._to_delete and self._deleter is None:
            self._deleter = asyncio.get_running_loop().create_task(self._delete_acked())

    async def _delete_acked(self) -> None:
        """Delete the PUBACKed events, in order, in a worker thread: the fsync'd deletes must not hold
        up the event loop, where the next command is being read (measured: ~1-4 ms each here)."""
        try:
            while self._to_delete:
                keys, self._to_delete = self._to_delete, []
                await asyncio.to_thread(self._ack_all, keys)
                for key in keys:
                    self._deleting.pop(key, None)
        finally:
            self._deleter = None

    def _ack_all(self, keys: list[int]) -> None:
        for key in keys:
            try:
                self.outbox.ack(key)
            except OutboxError as err:  # the event will be re-sent (same id): the agent dedupes by id
                _LOGGER.error("%s", err)

    async def _final_flush(self, conn: MqttConnection, window: deque[_InFlight]) -> None:
        """Shutdown: offline status first, then as much of the outbox as time allows."""
        final = self._final_status or self._status
        remaining = max(0.1, self._flush_deadline - time.monotonic())
        await self._publish_status(conn, final, timeout=remaining)
        while time.monotonic() < self._flush_deadline:
            self._wake.clear()
            if conn.error is not None:
                raise conn.error
            self._settle(window)
            self._fill(conn, window)
            if not window:
                break
            await self._wait(window, self._flush_deadline)
        if self._deleter is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.shield(self._deleter), max(1.0, self._flush_deadline - time.monotonic())
                )
        left = len(self.outbox)
        if left:
            _LOGGER.warning("Shutdown: %d events stay in the outbox for the next start", left)

    async def _publish_status(
        self, conn: MqttConnection, status: StatusMessage, timeout: float | None = None
    ) -> None:
        await self._publish(
            conn,
            self.topics.status,
            status.encode(),
            timeout if timeout is not None else self.settings.publish_timeout_s,
            retain=True,
        )

    async def _publish(
        self, conn: MqttConnection, topic: str, payload: bytes, timeout: float, retain: bool = False
    ) -> None:
        """QoS 1 publish that raises :class:`PublishRefused` when the broker's PUBACK says no."""
        try:
            await conn.publish(topic, payload, timeout, retain=retain)
        except PublishRefused:
            self._refused_streak += 1
            raise
        self._refused_streak = 0

    def _notify_connection(self, connected: bool, detail: str) -> None:
        try:
            self._on_connection(connected, detail)
        except Exception:
            _LOGGER.exception("on_connection handler failed")

    def _log_failure(self, err: Exception) -> None:
        """Say why the connection ended, with what to check."""
        if isinstance(err, ConnectRefused):
            self._log_refused(err)
        elif isinstance(err, PublishRefused):
            _LOGGER.error(
                "%s; the event stays in the outbox and is retried with back-off (check the broker ACL)", err
            )
        elif isinstance(err, ConnectionLost | OSError) and _is_tls_failure(err):
            _LOGGER.error(
                "TLS with broker %s failed: %s (check ca_file / cert_file / key_file: the broker's CA, and a"
                " client certificate the broker trusts)",
                self.settings.broker,
                err,
            )
        elif isinstance(err, ConnectionLost | OSError):
            _LOGGER.warning("MQTT connection to %s lost or failed: %s", self.settings.broker, err)
        else:
            _LOGGER.error("MQTT link error; reconnecting", exc_info=err)

    def _log_refused(self, err: ConnectRefused) -> None:
        hint = ""
        text = str(err).lower()
        if "password" in text or "authori" in text or "auth" in text:
            hint = " (check username / password_file and the broker's ACL)"
        _LOGGER.error("Broker %s refused the connection: %s%s", self.settings.broker, err, hint)
