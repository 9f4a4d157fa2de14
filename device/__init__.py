"""The device runtime: orchestrator state machine, config, CLI, button, systemd integration."""

__version__ = "0.1.0"
