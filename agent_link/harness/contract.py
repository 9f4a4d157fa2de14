"""Contract checks over a recorded event stream (protocol v1, device side).

``check_contract(events)`` returns a list of :class:`Violation` (empty when the stream keeps every
rule the agent relies on); ``assert_contract`` raises :class:`ContractError` listing them. Used by
the conformance suite, the e2e tests and the reliability tests (restarts, broker outages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_link.harness.matching import describe
from agent_link.protocol.messages import Event


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` names it, ``detail`` says where."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


class ContractError(AssertionError):
    """An event stream broke the contract; the message lists every violation."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = list(violations)
        lines = "\n".join(f"  - {v}" for v in self.violations)
        super().__init__(f"{len(self.violations)} contract violation(s):\n{lines}")


def dedupe_redeliveries(events: Sequence[Event]) -> tuple[list[Event], list[Violation]]:
    """Drop exact re-deliveries (same id, same content; QoS 1 is at-least-once).

    Two *different* events with one id are a violation (ids must be unique).
    """
    seen: dict[str, Event] = {}
    kept: list[Event] = []
    problems: list[Violation] = []
    for ev in events:
        first = seen.get(ev.id)
        if first is None:
            seen[ev.id] = ev
            kept.append(ev)
        elif first != ev:
            problems.append(
                Violation(
                    "unique ids", f"id {ev.id!r} used by two events: {describe(first)} / {describe(ev)}"
                )
            )
    return kept, problems


def check_sequence_numbers(events: Sequence[Event], from_start: bool = False) -> list[Violation]:
    """``seq`` increases by exactly 1 per event within a boot (boots may interleave on re-sends).

    With ``from_start`` the first event of each boot must have ``seq`` 1.
    """
    problems: list[Violation] = []
    last: dict[int, Event] = {}
    for ev in events:
        prev = last.get(ev.boot)
        if prev is None:
            if from_start and ev.seq != 1:
                problems.append(Violation("seq +1", f"boot {ev.boot} starts at seq {ev.seq}, not 1"))
        elif ev.seq != prev.seq + 1:
            kind = "gap" if ev.seq > prev.seq + 1 else "out of order"
            problems.append(
                Violation(
                    "seq +1", f"{kind} in boot {ev.boot}: seq {prev.seq} then {ev.seq} ({describe(ev)})"
                )
            )
        last[ev.boot] = ev
    return problems


def check_utterances(events: Sequence[Event], allow_open: bool = False) -> list[Violation]:
    """Every ``speech_started`` is closed by exactly one ``transcript`` or ``utterance_failed``."""
    problems: list[Violation] = []
    opened: dict[str, Event] = {}
    closed: dict[str, Event] = {}
    for ev in events:
        if ev.type == "speech_started":
            if ev.utterance in opened:
                problems.append(Violation("utterance closed once", f"utterance {ev.utterance} started twice"))
            opened[ev.utterance] = ev
        elif ev.type in ("transcript", "utterance_failed"):
            utt = ev.utterance
            if utt in closed:
                problems.append(
                    Violation(
                        "utterance closed once",
                        f"utterance {utt} closed twice: {describe(closed[utt])} / {describe(ev)}",
                    )
                )
                continue
            closed[utt] = ev
            typed = ev.type == "transcript" and ev.source == "typed"
            if utt not in opened and not typed:
                problems.append(
                    Violation(
                        "utterance closed once", f"{describe(ev)} closes an utterance that never started"
                    )
                )
    if not allow_open:
        for utt, ev in opened.items():
            if utt not in closed:
                problems.append(
                    Violation("utterance closed once", f"utterance {utt} never closed ({describe(ev)})")
                )
    return problems


def check_playback(events: Sequence[Event]) -> list[Violation]:
    """Per reply: at most one ``playback_started`` and one ``playback_finished``, in that order; a
    reply a boot started is finished by the time a later boot speaks (a restart closes it)."""
    problems: list[Violation] = []
    started: dict[str, Event] = {}
    finished: set[str] = set()
    for ev in events:
        if ev.type == "playback_started":
            if ev.say in started:
                problems.append(Violation("one playback per reply", f"reply {ev.say} started twice"))
            if ev.say in finished:
                problems.append(
                    Violation("one playback per reply", f"reply {ev.say} started after finishing")
                )
            started[ev.say] = ev
        elif ev.type == "playback_finished":
            if ev.say in finished:
                problems.append(Violation("one playback per reply", f"reply {ev.say} finished twice"))
            finished.add(ev.say)
    last_boot = max((ev.boot for ev in events), default=0)
    for say, ev in started.items():
        if say not in finished and ev.boot < last_boot:
            problems.append(
                Violation(
                    "reply finished once",
                    f"reply {say} started in boot {ev.boot} and never finished, not even after the restart",
                )
            )
    return problems


def check_sleep_wake(events: Sequence[Event], *, from_start: bool = False) -> list[Violation]:
    """``asleep`` and ``wake`` alternate within a boot (no second ``asleep`` without a wake); with
    ``from_start`` the first of a boot is a ``wake``, because the device starts asleep."""
    problems: list[Violation] = []
    last: dict[int, str] = {}
    for ev in events:
        if ev.type not in ("asleep", "wake"):
            continue
        if last.get(ev.boot, "asleep" if from_start else None) == ev.type:
            problems.append(Violation("asleep/wake alternate", f"two {ev.type} in a row: {describe(ev)}"))
        last[ev.boot] = ev.type
    return problems


def check_contract(
    events: Sequence[Event], *, from_start: bool = False, allow_open: bool = False
) -> list[Violation]:
    """Every contract rule over a recorded stream; an empty list means it is clean.

    ``from_start``: the recording began before the device's first event of each boot.
    ``allow_open``: an utterance still open at the end is fine (recording cut mid-utterance).
    """
    kept, problems = dedupe_redeliveries(events)
    problems += check_sequence_numbers(kept, from_start=from_start)
    problems += check_utterances(kept, allow_open=allow_open)
    problems += check_playback(kept)
    problems += check_sleep_wake(kept, from_start=from_start)
    return problems


def assert_contract(events: Sequence[Event], *, from_start: bool = False, allow_open: bool = False) -> None:
    """Raise :class:`ContractError` if ``check_contract`` finds anything."""
    problems = check_contract(events, from_start=from_start, allow_open=allow_open)
    if problems:
        raise ContractError(problems)
