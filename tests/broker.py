"""A real mosquitto broker on a random loopback port, for tests (the package's private broker)."""

from agent_link.harness.broker import MOSQUITTO, Mosquitto, free_port

__all__ = ["MOSQUITTO", "Mosquitto", "free_port"]
