"""Bundled scenarios: importing this package registers them (``scenario.REGISTRY``), in order."""

from agent_link.harness.scenarios import conformance, conformance_commands

__all__ = ["conformance", "conformance_commands"]
