"""What a reliability run found: ``ReliabilityReport``, and reading the daemon's log for stored events."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from agent_link.harness.reliability.daemon import DaemonProcess

_STORED = re.compile(r"INFO +device\.\S+: → (\w+) #(\d+)")
_BOOT = re.compile(r"device (\S+) boot (\d+)")


class Broker(Protocol):
    """What the runner needs from a broker (``agent_link.harness.broker.Mosquitto`` fits)."""

    host: str
    port: int

    @property
    def url(self) -> str: ...

    def start(self, timeout: float = 10.0) -> None: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...


@dataclass
class ReliabilityReport:
    """What a run did and found; ``lost`` and ``violations`` must stay empty."""

    runs: int = 0
    """Scenario runs completed."""
    faults: Counter[str] = field(default_factory=Counter)
    """Faults injected, by kind."""
    events_checked: int = 0
    """Distinct events checked against the contract."""
    lost: int = 0
    """Events the daemon stored that never reached the agent."""
    violations: list[str] = field(default_factory=list)
    """Broken promises, readable."""
    timings: dict[str, list[float]] = field(default_factory=dict)
    """Measured durations in seconds (reconnect, LWT, notice, recovery, restart)."""
    fuzz: Counter[str] = field(default_factory=Counter)
    """Fuzz inputs by outcome (sent, malformed, rejected, valid, executed...)."""

    def timing(self, name: str, seconds: float) -> None:
        """Record one measurement."""
        self.timings.setdefault(name, []).append(seconds)

    def summary(self) -> str:
        """The figures as printed by the bench."""
        lines = [
            f"runs: {self.runs}",
            f"faults injected: {sum(self.faults.values())} ({', '.join(f'{k} {v}' for k, v in sorted(self.faults.items()))})",
            f"events checked: {self.events_checked}",
            f"lost: {self.lost}",
            f"violations: {len(self.violations)}",
        ]
        for name, values in sorted(self.timings.items()):
            values = sorted(values)
            mid = values[len(values) // 2]
            lines.append(f"{name}: n={len(values)} median {mid:.2f} s, max {values[-1]:.2f} s")
        if self.fuzz:
            lines.append("fuzz: " + ", ".join(f"{k} {v}" for k, v in sorted(self.fuzz.items())))
        lines.extend(f"  VIOLATION {v}" for v in self.violations[:50])
        return "\n".join(lines)


def stored_events(daemon_log: str) -> set[tuple[int, int]]:
    """``(boot, seq)`` of every event the daemon logged as stored in its outbox."""
    stored: set[tuple[int, int]] = set()
    boot = 0
    for line in daemon_log.splitlines():
        if m := _BOOT.search(line):
            boot = int(m.group(2))
        elif (m := _STORED.search(line)) and boot:
            stored.add((boot, int(m.group(2))))
    return stored


def current_boot(daemon: DaemonProcess) -> int:
    """The boot number of the daemon's latest start (0 before its first log line)."""
    boots = _BOOT.findall(daemon.log())
    return int(boots[-1][1]) if boots else 0
