"""One MQTT 5 connection: a paho-mqtt client driven by the asyncio event loop, public paho API only.

paho does the protocol; this module moves its bytes on the event loop, with no thread and no poll:
the socket's ``add_reader`` runs ``loop_read`` as soon as bytes arrive (PUBLISH, PUBACK, SUBACK...),
paho's ``on_socket_register_write`` adds a writer that runs ``loop_write`` as soon as a packet is
queued, and a one-second timer runs ``loop_misc`` for the keepalive only. paho's callbacks become
awaitable results: CONNACK, SUBACK / UNSUBACK and each QoS 1 PUBACK *with its reason code* (a
failure code such as 0x87 "not authorized" raises :class:`PublishRefused`). Incoming messages are
handed to ``on_message`` from inside ``loop_read`` and PUBACKed once it is done with them
(``manual_ack_set(True)`` / ``ack()``): right after it returned, or, if it returned a future (a
command whose id is being saved), when that future is done; always in arrival order, as MQTT wants.
Publishes can overlap: :meth:`MqttConnection.start_publish` sends one and returns the future of its
PUBACK, so the link keeps a window of unacknowledged publishes in flight (paho's own limit,
``max_inflight_messages_set``, is set to the window). Only ``connect`` (DNS, TCP, TLS handshake,
blocking in paho) runs in a worker thread, before the socket is attached to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from agent_link.link.settings import LinkSettings

_LOGGER = logging.getLogger(__name__)
_PAHO_LOGGER = logging.getLogger(f"{__name__}.paho")

IncomingHandler = Callable[[str, bytes], "asyncio.Future[None] | None"]
"""``on_message(topic, payload)``: called on the event loop as soon as a PUBLISH arrives; the message
is acknowledged when it returned, or when the future it returned is done."""

_MISC_INTERVAL_S = 1.0
"""How often paho's ``loop_misc`` runs: it only sends PINGREQs and notices a missing PINGRESP."""


class LinkError(Exception):
    """The MQTT connection failed; the link reconnects with back-off."""


class ConnectRefused(LinkError):
    """The broker answered CONNECT with a failure reason code (bad password, not authorised...)."""


class PublishRefused(LinkError):
    """The broker answered a QoS 1 PUBLISH with a failure reason code (e.g. 0x87 not authorised)."""


class ConnectionLost(LinkError):
    """The connection broke, or the broker did not answer in time."""


def tls_context(settings: LinkSettings) -> ssl.SSLContext:
    """The TLS context of ``settings``: CA file (or the system CAs), optional client certificate."""
    context = ssl.create_default_context(cafile=settings.ca_file)
    if settings.cert_file:
        context.load_cert_chain(settings.cert_file, settings.key_file)
    if settings.tls_insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class MqttConnection:
    """One MQTT 5 session with the broker: ``await open()``, then subscribe / publish, then ``close()``.

    Created inside the running event loop; not reusable (the link makes a new one per connect).
    """

    def __init__(
        self,
        settings: LinkSettings,
        client_id: str,
        will: tuple[str, bytes],
        on_message: IncomingHandler,
        on_down: Callable[[], None],
    ) -> None:
        self._settings = settings
        self._on_message = on_message
        self._on_down = on_down
        self._loop = asyncio.get_running_loop()
        self._replies: dict[int, asyncio.Future[Any]] = {}
        self._connack: asyncio.Future[ReasonCode] = self._loop.create_future()
        self._error: LinkError | None = None
        self._last_paho_error = ""
        self._sock: Any = None
        self._misc: asyncio.TimerHandle | None = None
        self._unacked: deque[tuple[int, int, asyncio.Future[None] | None]] = deque()
        """Incoming messages not acknowledged yet: ``(mid, qos, done)``, in arrival order."""
        self.receive_maximum = settings.inflight_window
        """How many QoS 1 publishes may await their PUBACK at once: the window, or less if the
        broker's CONNACK says so (MQTT 5 Receive Maximum)."""
        client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv5)
        client.connect_timeout = settings.connect_timeout_s
        client.max_inflight_messages_set(settings.inflight_window)
        client.manual_ack_set(True)
        client.will_set(will[0], will[1], qos=1, retain=True)
        if settings.username is not None:
            client.username_pw_set(settings.username, settings.read_password())
        if settings.endpoint()[2]:
            client.tls_set_context(tls_context(settings))
        client.on_log = self._paho_log
        client.on_connect = self._paho_connect
        client.on_disconnect = self._paho_disconnect
        client.on_publish = self._paho_reply
        client.on_subscribe = self._paho_reply
        client.on_unsubscribe = self._paho_reply
        client.on_message = self._paho_message
        self._client = client

    # ---- the session ---------------------------------------------------------------------------------
    async def open(self) -> None:
        """Connect (clean_start false, session expiry, the Will) and wait for a successful CONNACK.

        Raises :class:`ConnectRefused`, :class:`ConnectionLost`, or the ``OSError`` / ``ssl.SSLError``
        of the TCP connect or the TLS handshake.
        """
        host, port, _ = self._settings.endpoint()
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self._settings.session_expiry_s
        connect = functools.partial(
            self._client.connect, host, port, self._settings.keepalive_s, clean_start=False, properties=props
        )
        connecting = self._loop.run_in_executor(None, connect)
        try:
            await asyncio.shield(connecting)
        except asyncio.CancelledError:
            connecting.add_done_callback(self._release_after_connect)
            raise
        self._attach()
        reason = await self._wait(self._connack, self._settings.connect_timeout_s, "CONNACK")
        if reason.is_failure:
            raise ConnectRefused(str(reason))

    async def subscribe(self, topics: list[str]) -> list[ReasonCode]:
        """Subscribe to ``topics`` at QoS 1 in one SUBSCRIBE; the broker's reason code per topic."""
        self._raise_if_down()
        rc, mid = self._client.subscribe([(t, SubscribeOptions(qos=1)) for t in topics])
        codes: list[ReasonCode] = await self._reply(rc, mid, "SUBACK")
        return codes

    async def unsubscribe(self, topics: list[str]) -> None:
        """Unsubscribe from ``topics`` (reason codes such as "no subscription existed" are fine)."""
        self._raise_if_down()
        rc, mid = self._client.unsubscribe(topics)
        await self._reply(rc, mid, "UNSUBACK")

    async def publish(self, topic: str, payload: bytes, timeout: float, retain: bool = False) -> None:
        """QoS 1 publish; returns after a PUBACK with a success reason code.

        Raises :class:`PublishRefused` for a failure reason code, :class:`ConnectionLost` if the
        connection breaks or no PUBACK comes within ``timeout`` seconds.
        """
        await self.puback(self.start_publish(topic, payload, retain=retain), topic, timeout)

    def start_publish(self, topic: str, payload: bytes, retain: bool = False) -> asyncio.Future[Any]:
        """Send a QoS 1 PUBLISH now (packets leave in call order) and return the future of its
        PUBACK's reason code, for :meth:`puback`. Raises :class:`ConnectionLost` if it cannot be sent."""
        self._raise_if_down()
        info = self._client.publish(topic, payload, qos=1, retain=retain)
        if info.rc != MQTTErrorCode.MQTT_ERR_SUCCESS or info.mid is None:
            raise ConnectionLost(f"cannot send PUBLISH: {paho.error_string(info.rc)}")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._replies[info.mid] = future
        # Out now: with socket callbacks paho only registers the writer, and the packet would wait for
        # the loop's next select, behind every callback already due (a stop's playback_finished too).
        self._writable()
        return future

    async def puback(self, sent: asyncio.Future[Any], topic: str, timeout: float) -> None:
        """Wait for the PUBACK of a :meth:`start_publish`; raises :class:`PublishRefused` for a
        failure reason code, :class:`ConnectionLost` if none comes within ``timeout`` seconds."""
        reason: ReasonCode = await self._wait(sent, timeout, "PUBACK")
        if reason.is_failure:
            raise PublishRefused(f"broker refused a publish to {topic}: {reason}")

    def close(self, *, keep_will: bool) -> None:
        """Leave: DISCONNECT (reason 0x04 "with will message" if ``keep_will``, so the broker still
        publishes the Will; a normal one suppresses it), written at once after anything still queued
        (PUBACKs of handled commands), then release the socket. Synchronous, so it also works while
        the task is being cancelled."""
        if self._client.is_connected():
            reason = ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message") if keep_will else None
            with contextlib.suppress(Exception):
                self._client.disconnect(reasoncode=reason)
                self._client.loop_write()
        self._fail(ConnectionLost("closed"))
        self._release()

    # ---- paho on the event loop ----------------------------------------------------------------------
    def _attach(self) -> None:
        sock: Any = self._client.socket()
        if sock is None:
            raise ConnectionLost(f"connect returned without a socket ({self._last_paho_error})")
        self._sock = sock
        with contextlib.suppress(OSError):  # every event and command is a small packet: no Nagle delay
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._client.on_socket_close = self._socket_closed
        self._client.on_socket_register_write = self._want_write
        self._client.on_socket_unregister_write = self._written
        self._loop.add_reader(sock, self._readable)
        if self._client.want_write():  # CONNECT still queued (paho wrote what it could in connect())
            self._loop.add_writer(sock, self._writable)
        self._misc = self._loop.call_later(_MISC_INTERVAL_S, self._keepalive)

    def _readable(self) -> None:
        try:
            while self._client.loop_read() == MQTTErrorCode.MQTT_ERR_SUCCESS:
                sock = self._client.socket()
                # TLS may hold decrypted bytes the socket no longer signals: read them now.
                if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                    break
        except Exception as err:  # a paho or callback bug must end this connection, not the loop
            _LOGGER.exception("MQTT read failed")
            self._fail(ConnectionLost(f"read failed: {err}"))
            self._release()

    def _writable(self) -> None:
        try:
            self._client.loop_write()
        except Exception as err:
            _LOGGER.exception("MQTT write failed")
            self._fail(ConnectionLost(f"write failed: {err}"))
            self._release()

    def _keepalive(self) -> None:
        self._misc = None
        try:
            if self._client.loop_misc() != MQTTErrorCode.MQTT_ERR_SUCCESS:
                return  # paho noticed a missing PINGRESP; on_disconnect has run
        except Exception as err:
            self._fail(ConnectionLost(f"keepalive failed: {err}"))
            self._release()
            return
        self._misc = self._loop.call_later(_MISC_INTERVAL_S, self._keepalive)

    def _want_write(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        self._loop.add_writer(sock, self._writable)

    def _written(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        self._loop.remove_writer(sock)

    def _socket_closed(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        self._loop.remove_reader(sock)
        self._loop.remove_writer(sock)

    def _release(self) -> None:
        """Detach the socket from the loop and close it (idempotent)."""
        if self._misc is not None:
            self._misc.cancel()
            self._misc = None
        for sock in {id(s): s for s in (self._sock, self._client.socket()) if s is not None}.values():
            if sock.fileno() != -1:  # not closed by paho yet (its close callback detached it then)
                if sock is self._sock:
                    self._loop.remove_reader(sock)
                    self._loop.remove_writer(sock)
                with contextlib.suppress(OSError):
                    sock.close()

    def _release_after_connect(self, connecting: asyncio.Future[Any]) -> None:
        """The task was cancelled while paho connected in its thread: close what it opened."""
        if not connecting.cancelled():
            connecting.exception()  # retrieved: a cancelled connect's error is of no interest
        self._fail(ConnectionLost("cancelled"))
        self._release()

    # ---- paho callbacks (on the event loop, inside loop_read / loop_write / loop_misc) ---------------
    def _paho_log(self, client: paho.Client, userdata: Any, level: int, buf: str) -> None:
        # Also called from the connect thread: only plain assignments and logging here.
        if level == paho.MQTT_LOG_ERR:
            self._last_paho_error = buf
        _PAHO_LOGGER.debug("%s", buf)

    def _paho_connect(
        self, client: paho.Client, userdata: Any, flags: Any, reason: ReasonCode, props: Any
    ) -> None:
        maximum = getattr(props, "ReceiveMaximum", None)
        if isinstance(maximum, int) and maximum > 0:
            self.receive_maximum = min(self.receive_maximum, maximum)
        if not self._connack.done():
            self._connack.set_result(reason)

    def _paho_disconnect(
        self, client: paho.Client, userdata: Any, flags: Any, reason: ReasonCode, props: Any
    ) -> None:
        if getattr(flags, "is_disconnect_packet_from_server", False):
            self._fail(ConnectionLost(f"the broker disconnected: {reason}"))
        else:  # paho's reason code here is a stand-in; the socket error it logged says more
            self._fail(ConnectionLost(f"connection lost ({self._last_paho_error or reason})"))

    def _paho_reply(self, client: paho.Client, userdata: Any, mid: int, reason: Any, props: Any) -> None:
        """PUBACK (one reason code), SUBACK / UNSUBACK (a list of them) for packet ``mid``."""
        future = self._replies.pop(mid, None)
        if future is not None and not future.done():
            future.set_result(reason)

    def _paho_message(self, client: paho.Client, userdata: Any, message: paho.MQTTMessage) -> None:
        done: asyncio.Future[None] | None = None
        try:
            done = self._on_message(message.topic, bytes(message.payload))
        except Exception:
            _LOGGER.exception("Handling an incoming MQTT message failed")
        finally:
            if message.qos > 0:  # only once handled: a crash before this makes the broker redeliver it
                self._unacked.append((message.mid, message.qos, done))
                if done is not None and not done.done():
                    done.add_done_callback(self._send_acks)
                self._send_acks()

    def _send_acks(self, _: object = None) -> None:
        """PUBACK the handled messages at the head of the arrival order (the rest wait their turn)."""
        while self._unacked:
            mid, qos, done = self._unacked[0]
            if done is not None and not done.done():
                return
            self._unacked.popleft()
            if self._error is None and (done is None or not done.cancelled()):
                self._client.ack(mid, qos)

    # ---- waiting for the broker ----------------------------------------------------------------------
    async def _reply(self, rc: int, mid: int | None, what: str, timeout: float | None = None) -> Any:
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS or mid is None:
            raise ConnectionLost(f"cannot send {what.replace('ACK', '')}: {paho.error_string(rc)}")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._replies[mid] = future
        try:
            return await self._wait(future, timeout or self._settings.connect_timeout_s, what)
        finally:
            self._replies.pop(mid, None)

    async def _wait(self, future: asyncio.Future[Any], timeout: float, what: str) -> Any:
        self._raise_if_down()
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise ConnectionLost(f"no {what} from the broker within {timeout:g} s") from None

    def _raise_if_down(self) -> None:
        if self._error is not None:
            raise self._error

    def _fail(self, error: LinkError) -> None:
        """The connection is over: fail every wait on the broker and tell the link (first error wins)."""
        if self._error is not None:
            return
        self._error = error
        for future in [self._connack, *self._replies.values()]:
            if not future.done():
                future.set_exception(error)
                future.exception()  # nobody may be waiting for it: do not warn "never retrieved"
        self._replies.clear()
        self._on_down()

    @property
    def error(self) -> LinkError | None:
        """Why the connection is over, or None while it is up."""
        return self._error
