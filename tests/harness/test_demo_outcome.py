"""The demo's summary says what became of the line said over a reply."""

from __future__ import annotations

from agent_link.harness.demo import barge_in_outcome
from tests.harness.events import EventFactory


def test_a_barge_in_heard_poorly_is_not_reported_as_one_that_came_too_late() -> None:
    ev = EventFactory()
    clear, poor = ev.transcript("Actually, please stop the story."), ev.transcript("Actually, 3 stop.", 0.24)
    failed = ev("utterance_failed", utterance="u1", reason="too_short", detail="80 ms")
    assert barge_in_outcome(clear, True, 0.4) == ("heard over the reply; the companion stopped it", None)
    outcome, problem = barge_in_outcome(poor, False, 0.4)
    assert problem is None and "poorly (confidence 0.24)" in outcome and "ended" not in outcome
    assert "ended before the companion stopped it" in barge_in_outcome(clear, False, 0.4)[0]
    assert barge_in_outcome(failed, False, 0.4) == (
        "heard over the reply, then failed: too_short",
        "too_short",
    )
