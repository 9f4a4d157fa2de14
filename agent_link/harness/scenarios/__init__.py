"""Bundled scenarios: importing this package registers them (``scenario.REGISTRY``)."""

from agent_link.harness.scenarios import conformance

__all__ = ["conformance"]
