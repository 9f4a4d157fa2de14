"""One doctor check result, and how a list of them is shown and turned into an exit code."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["ok", "fail", "warn", "note"]
"""ok: fine; fail: a deployment needs this and it is missing/broken; warn: works but worth fixing;
note: could not be checked here, or not needed with this configuration."""

_MARK = {"ok": "✔", "fail": "✘", "warn": "!", "note": "–"}


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: what was checked, what was found, and how to fix it."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        """False only for a failure."""
        return self.status != "fail"

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def render(results: list[CheckResult]) -> str:
    """A readable checklist: one line per check, a ``fix:`` line under anything not fine."""
    lines = []
    for r in results:
        lines.append(f"{_MARK[r.status]} {r.name}: {r.detail}")
        if r.fix and r.status in ("fail", "warn"):
            lines.append(f"    fix: {r.fix}")
    failed = sum(1 for r in results if r.status == "fail")
    warned = sum(1 for r in results if r.status == "warn")
    if failed:
        lines.append(f"\n{failed} problem(s) must be fixed before this device can run robot-face.")
    elif warned:
        lines.append(f"\nReady to run, with {warned} warning(s).")
    else:
        lines.append("\nAll checks passed.")
    return "\n".join(lines)


def exit_code(results: list[CheckResult]) -> int:
    """1 when any check failed, else 0."""
    return 1 if any(r.status == "fail" for r in results) else 0
