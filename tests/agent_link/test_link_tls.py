"""MqttLink over TLS with a client certificate, against mosquitto with a throw-away CA."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_link.link.mqtt_link import MqttLink
from agent_link.link.outbox import Outbox
from agent_link.link.settings import LinkSettings
from agent_link.protocol.event_messages import TapBody
from agent_link.protocol.messages import StatusMessage
from agent_link.protocol.topics import Topics
from tests.agent_link.agent_client import agent
from tests.broker import Mosquitto, free_port
from tests.pki import make_ca, make_cert


@pytest.fixture
def tls_broker(tmp_path: Path) -> Iterator[tuple[Mosquitto, Path]]:
    """Mosquitto with a TLS listener requiring a client certificate signed by the test CA."""
    d = tmp_path / "pki"
    d.mkdir()
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    make_cert(d, "server", "ca", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "client", "ca", "DNS:dev1")
    extra = (
        f"cafile {d / 'ca.crt'}\ncertfile {d / 'server.crt'}\nkeyfile {d / 'server.key'}\n"
        "require_certificate true\n"
    )
    broker = Mosquitto(tmp_path / "broker", extra_config=extra)
    broker.start()
    yield broker, d
    broker.kill()


def _settings(broker: Mosquitto, d: Path, ca: str) -> LinkSettings:
    return LinkSettings(
        broker=f"mqtts://127.0.0.1:{broker.port}",
        ca_file=str(d / ca),
        cert_file=str(d / "client.crt"),
        key_file=str(d / "client.key"),
        keepalive_s=5,
        reconnect_min_s=0.1,
        reconnect_max_s=0.5,
    )


async def _run_for(link: MqttLink, seconds: float) -> bool:
    task = asyncio.create_task(link.run())
    connected = False
    for _ in range(int(seconds * 20)):
        await asyncio.sleep(0.05)
        if link.connected:
            connected = True
            break
    await link.shutdown(StatusMessage(online=False, boot=1), flush_timeout=1.0)
    await task
    return connected


async def test_tls_with_client_certificate(tls_broker: tuple[Mosquitto, Path], tmp_path: Path) -> None:
    broker, d = tls_broker
    outbox = Outbox(tmp_path / "o.db", "dev1", 1)
    link = MqttLink(_settings(broker, d, "ca.crt"), "dev1", 1, outbox, lambda *a: None, lambda *a: None)
    assert await _run_for(link, 10.0)


async def test_tls_untrusted_broker_is_refused_and_logged(
    tls_broker: tuple[Mosquitto, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker, d = tls_broker
    outbox = Outbox(tmp_path / "o.db", "dev1", 1)
    link = MqttLink(_settings(broker, d, "other-ca.crt"), "dev1", 1, outbox, lambda *a: None, lambda *a: None)
    assert not await _run_for(link, 1.5)
    failures = [
        r.getMessage() for r in caplog.records if "dev1" in r.getMessage() or "mqtts" in r.getMessage()
    ]
    assert any("certificate verify failed" in m for m in failures), failures


async def test_tls_burst_of_commands_and_events_flows_without_stalling(
    tls_broker: tuple[Mosquitto, Path], tmp_path: Path
) -> None:
    """Commands and events flow over TLS in order and at once (within 3 s, under the 5 s keepalive:
    nothing waits for the next PINGRESP to be read)."""
    broker, d = tls_broker
    plain = copy.copy(broker)  # a plain listener for the stand-in agent on the same broker
    plain.port = free_port()
    broker.stop()
    broker.config_path.write_text(broker.config_path.read_text() + f"\nlistener {plain.port} 127.0.0.1\n")
    broker.start()
    topics = Topics("robotface", "dev1")
    outbox = Outbox(tmp_path / "o.db", "dev1", 1)
    received: list[bytes] = []
    settings = _settings(broker, d, "ca.crt")
    link = MqttLink(settings, "dev1", 1, outbox, lambda k, p, t: received.append(p), lambda *a: None)
    task = asyncio.create_task(link.run())
    try:
        async with agent(plain, [topics.event]) as ag:
            async with asyncio.timeout(10):
                while not link.connected:
                    await asyncio.sleep(0.02)
            commands = [b'{"v":1,"type":"stop","id":"c-%d"}' % i for i in range(40)]
            await asyncio.gather(*(ag.publish(topics.command, c) for c in commands))
            async with asyncio.timeout(3):  # well under the 5 s keepalive
                while len(received) < len(commands):
                    await asyncio.sleep(0.01)
            assert received == commands
            for i in range(40):
                outbox.append(TapBody(source="sim", ts=1.0 + i))
            link.notify_outbox()
            await ag.wait_for(lambda: len(ag.payloads(topics.event)) == 40, timeout=3)
            assert [e["seq"] for e in ag.payloads(topics.event)] == list(range(1, 41))
    finally:
        await link.shutdown(StatusMessage(online=False, boot=1), flush_timeout=1.0)
        await task


@pytest.mark.parametrize(
    ("error", "tls"),
    [
        # TLS 1.3: a broker rejecting the client certificate may only close the socket (paho's text)
        (
            "connect returned without a socket (failed to receive on socket: EOF occurred in violation "
            "of protocol (_ssl.c:2427))",
            True,
        ),
        ("[SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca (_ssl.c:2580)", True),
        ("certificate verify failed: unable to get local issuer certificate", True),
        ("connect returned without a socket ([Errno 111] Connection refused)", False),
        ("keepalive: no PINGRESP in 30 s", False),
    ],
)
def test_tls_failures_are_told_apart_from_other_losses(error: str, tls: bool) -> None:
    from agent_link.link.connection import ConnectionLost
    from agent_link.link.mqtt_link import _is_tls_failure

    assert _is_tls_failure(ConnectionLost(error)) is tls
