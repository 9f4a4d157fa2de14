"""The private mosquitto the demo and the tests run: every listener is open once ``start`` returns."""

from __future__ import annotations

import socket
from pathlib import Path

from agent_link.harness.broker import Mosquitto, free_port


def test_start_returns_once_every_listener_accepts(tmp_path: Path) -> None:
    """mosquitto opens its listeners one after another; ``start`` waits for the last one too (the
    fleet profile's agent listener refused a client that connected right after ``start``)."""
    broker = Mosquitto(tmp_path)
    ports = [broker.port, free_port(), free_port()]
    broker.config_path.write_text(
        broker.config_path.read_text() + "".join(f"\nlistener {p} 127.0.0.1\n" for p in ports[1:])
    )
    assert broker.listener_ports() == ports
    broker.start()
    try:
        for port in ports:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                pass
    finally:
        broker.kill()


def test_a_broker_with_no_listener_line_is_waited_for_on_its_port(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.config_path.write_text(f"port {broker.port}\nallow_anonymous true\n")
    assert broker.listener_ports() == [broker.port]
