"""Bundled scenarios: importing this package registers them (``scenario.REGISTRY``), in order; and
picking them by name or suite (``select``).

The selection lives here, not in ``agent_link.harness.scenario``: the scenarios import the
decorator from there, so the registry module importing them back would close a circle.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_link.harness.scenario import REGISTRY, Scenario

from agent_link.harness.scenarios import conformance, conformance_duplex  # isort: skip
from agent_link.harness.scenarios import conformance_commands  # isort: skip  (last: ends with "contract")

__all__ = ["conformance", "conformance_commands", "conformance_duplex", "load_scenarios", "select"]


def load_scenarios() -> dict[str, Scenario]:
    """The registry of every bundled scenario (registered when this package was imported)."""
    return REGISTRY


def select(names: Iterable[str]) -> list[Scenario]:
    """Scenarios by name or suite name, in registry order; unknown names raise ``KeyError``."""
    registry = load_scenarios()
    chosen: list[Scenario] = []
    for name in names:
        if name in registry:
            found = [registry[name]]
        else:
            found = [s for s in registry.values() if name in s.suites]
            if not found:
                known = ", ".join(sorted({*registry, *(x for s in registry.values() for x in s.suites)}))
                raise KeyError(f"no scenario or suite named {name!r} (known: {known})")
        chosen += [s for s in found if s not in chosen]
    return chosen
