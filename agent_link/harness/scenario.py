"""Scripted scenarios with expectations, run step by step, and a report a person can read.

A scenario is an async function taking a :class:`ScenarioRun`; it wraps each expectation in
``async with run.step("what is checked"):``. The first failing step ends the scenario; the report
shows one line per step (✔/✘ and its time) and, on failure, what arrived instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from agent_link.harness.client import AgentHarness
from agent_link.protocol.messages import Event

_LOGGER = logging.getLogger(__name__)

PASS, FAIL = "✔", "✘"


@dataclass(frozen=True)
class StepResult:
    """One checked step."""

    name: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass
class ScenarioResult:
    """A whole scenario: its steps and whether all passed."""

    name: str
    steps: list[StepResult] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        """Every step passed and nothing else went wrong."""
        return not self.error and all(s.ok for s in self.steps)


class StepFailed(AssertionError):
    """A step failed; the scenario stops there."""


@dataclass
class ScenarioContext:
    """What scenarios run against: a connected harness, and how to tap and restart the device."""

    harness: AgentHarness
    restart_device: Callable[[], Awaitable[None]] | None = None
    """Restarts the daemon (e2e tests); ``None``: the person at the bench is asked to."""
    tap: Callable[[], Awaitable[None]] | None = None
    """Taps the device; ``None``: a ``sim/tap``."""
    say_to_device: Callable[[str], Awaitable[None]] | None = None
    """Speaks text into the device (``sim/audio`` of synthesised speech); ``None``: voice steps skip."""
    mumble_to_device: Callable[[str], Awaitable[None]] | None = None
    """Mumbles text into the device (quiet, muffled, in noise); ``None``: those steps skip."""
    timeout: float = 20.0
    """Default wait for something the device must do, in seconds (playback included)."""
    log: Callable[[str], None] = print
    """Where live report lines go."""


ScenarioFunc = Callable[["ScenarioRun"], Awaitable[None]]


@dataclass(frozen=True)
class Scenario:
    """A named scenario and the suites it belongs to."""

    name: str
    description: str
    func: ScenarioFunc
    suites: tuple[str, ...] = ("conformance",)
    restarts: bool = False
    """It restarts the device (needs ``restart_device`` or a person at the bench)."""


REGISTRY: dict[str, Scenario] = {}
"""Every registered scenario by name, in registration order."""


def scenario(
    name: str, description: str, suites: tuple[str, ...] = ("conformance",), restarts: bool = False
) -> Callable[[ScenarioFunc], ScenarioFunc]:
    """Decorator registering an async scenario function."""

    def register(func: ScenarioFunc) -> ScenarioFunc:
        if name in REGISTRY:
            raise ValueError(f"scenario {name!r} registered twice")
        REGISTRY[name] = Scenario(name, description, func, suites, restarts)
        return func

    return register


class ScenarioRun:
    """The running scenario: steps, and helpers that bring the device to a known state."""

    def __init__(self, ctx: ScenarioContext, result: ScenarioResult) -> None:
        self.ctx = ctx
        self.h = ctx.harness
        self.result = result
        self.timeout = ctx.timeout

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """Time one expectation; an ``AssertionError`` inside fails it and ends the scenario."""
        start = time.monotonic()
        try:
            yield
        except AssertionError as err:
            self._record(StepResult(name, False, time.monotonic() - start, str(err)))
            raise StepFailed(name) from err
        self._record(StepResult(name, True, time.monotonic() - start))

    def _record(self, step: StepResult) -> None:
        self.result.steps.append(step)
        self.ctx.log(format_step(step))

    def note(self, text: str) -> None:
        """A line in the live report that is not a check."""
        self.ctx.log(f"    · {text}")

    async def tap(self) -> None:
        """Tap the device (sim/tap unless the context says otherwise)."""
        await (self.ctx.tap() if self.ctx.tap else self.h.sim_tap())

    async def reset(self) -> None:
        """Bring the device to ``asleep`` with sleep allowed and nothing playing, then ``mark()``."""
        h = self.h
        status = await h.wait_status(timeout=self.timeout)
        if status.sleep_allowed is not True:
            await h.sleep_allowed(True)
            await h.wait_status(sleep_allowed=True, timeout=self.timeout)
        if h.status is not None and h.status.state != "asleep":
            h.mark()
            await h.stop()
            await h.sleep()
            await h.wait_for("asleep", timeout=self.timeout)
            await h.wait_status(state="asleep", timeout=self.timeout)
        h.mark()

    async def wake(self) -> Event:
        """From a reset device: tap, expect ``wake`` and an awake ``idle`` status; then ``mark()``."""
        await self.reset()
        await self.tap()
        event = await self.h.wait_for("wake", timeout=self.timeout)
        await self.h.wait_status(state="idle", timeout=self.timeout)
        self.h.mark()
        return event


def format_step(step: StepResult) -> str:
    """``  ✔ step name ........ 1.23 s`` plus an indented failure detail."""
    mark = PASS if step.ok else FAIL
    line = f"  {mark} {step.name:<62} {step.seconds:6.2f} s"
    if step.detail:
        detail = "\n".join(f"      {text}" for text in step.detail.splitlines())
        line += f"\n{detail}"
    return line


async def run_scenario(sc: Scenario, ctx: ScenarioContext) -> ScenarioResult:
    """Run one scenario; never raises for a failed expectation (see the result)."""
    result = ScenarioResult(sc.name)
    ctx.log(f"▶ {sc.name}: {sc.description}")
    start = time.monotonic()
    run = ScenarioRun(ctx, result)
    try:
        await sc.func(run)
    except StepFailed:
        pass
    except AssertionError as err:
        result.error = f"unexpected failure outside a step: {err}"
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as err:
        _LOGGER.exception("scenario %s crashed", sc.name)
        result.error = f"{type(err).__name__}: {err}"
    result.seconds = time.monotonic() - start
    if result.error:
        ctx.log(f"  {FAIL} {result.error}")
    ctx.log(f"{'PASS' if result.ok else 'FAIL'} {sc.name} ({result.seconds:.1f} s)\n")
    return result


async def run_scenarios(scenarios: Iterable[Scenario], ctx: ScenarioContext) -> list[ScenarioResult]:
    """Run scenarios one after another (each starts from a reset device)."""
    return [await run_scenario(sc, ctx) for sc in scenarios]


def summary(results: list[ScenarioResult]) -> str:
    """The closing lines of a report: one line per scenario and the totals."""
    lines = ["Summary:"]
    for r in results:
        failed = next((s.name for s in r.steps if not s.ok), r.error)
        lines.append(f"  {PASS if r.ok else FAIL} {r.name:<34} {r.seconds:6.1f} s  {failed}".rstrip())
    passed = sum(r.ok for r in results)
    total = sum(r.seconds for r in results)
    lines.append(f"{passed}/{len(results)} scenarios passed ({total:.1f} s)")
    return "\n".join(lines)
