"""The clock-free debounce / tap / long-press model."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from device.buttons.press import PressDetector

DEBOUNCE = 0.03
LONG = 1.5


def _run(edges: list[tuple[bool, float]], until: float) -> list[tuple[str, float]]:
    det = PressDetector(DEBOUNCE, LONG)
    det.reset(False, 0.0)
    out: list[tuple[str, float]] = []
    for pressed, ts in edges:
        out += det.edge(pressed, ts)
    out += det.tick(until)
    return out


def test_clean_tap_emits_one_tap_on_release_with_press_time() -> None:
    assert _run([(True, 1.0), (False, 1.2)], until=2.0) == [("tap", 1.0)]


def test_bounces_within_the_window_make_one_tap() -> None:
    press_bounce = [(True, 1.0), (False, 1.002), (True, 1.004), (False, 1.005), (True, 1.008)]
    release_bounce = [(False, 1.3), (True, 1.301), (False, 1.303)]
    assert _run(press_bounce + release_bounce, until=2.0) == [("tap", 1.008)]


def test_glitch_shorter_than_debounce_is_not_a_press() -> None:
    assert _run([(True, 1.0), (False, 1.01)], until=3.0) == []


def test_held_emits_long_at_threshold_and_nothing_on_release() -> None:
    det = PressDetector(DEBOUNCE, LONG)
    det.reset(False, 0.0)
    assert det.edge(True, 1.0) == []
    assert det.tick(1.0 + DEBOUNCE) == []
    assert det.next_deadline() == 1.0 + LONG
    assert det.tick(2.4) == []
    assert det.tick(2.5) == [("long", 1.0)]
    assert det.next_deadline() is None
    assert det.edge(False, 4.0) == []
    assert det.tick(5.0) == []


def test_press_just_under_long_threshold_is_a_tap() -> None:
    assert _run([(True, 1.0), (False, 2.49)], until=3.0) == [("tap", 1.0)]


def test_button_held_at_start_is_not_a_press() -> None:
    det = PressDetector(DEBOUNCE, LONG)
    det.reset(True, 0.0)
    assert det.tick(10.0) == []
    assert det.edge(False, 11.0) + det.tick(12.0) == []
    assert det.edge(True, 13.0) + det.edge(False, 13.2) + det.tick(14.0) == [("tap", 13.0)]


def test_zero_debounce_takes_edges_at_once() -> None:
    det = PressDetector(0.0, LONG)
    det.reset(False, 0.0)
    assert det.edge(True, 1.0) == []
    assert det.pressed
    assert det.edge(False, 1.1) == [("tap", 1.0)]


@given(st.lists(st.floats(min_value=0.0001, max_value=DEBOUNCE * 0.99), min_size=1, max_size=40))
def test_pure_chatter_never_makes_a_press(gaps: list[float]) -> None:
    """Edges that never stay put for the debounce window (then released) emit nothing."""
    det = PressDetector(DEBOUNCE, LONG)
    det.reset(False, 0.0)
    ts, pressed, out = 0.0, False, []
    for gap in gaps:
        ts += gap
        pressed = not pressed
        out += det.edge(pressed, ts)
    out += det.edge(False, ts + 0.0001) + det.tick(ts + 10.0)
    assert out == []


_CLEAR_DURATIONS = st.floats(min_value=DEBOUNCE * 1.01, max_value=1.0).filter(lambda d: abs(d - 0.6) > 1e-6)


@given(st.lists(_CLEAR_DURATIONS, min_size=2, max_size=20))
def test_clean_presses_each_emit_exactly_once(durations: list[float]) -> None:
    """Alternating press/release periods longer than debounce: one tap or long per press period
    (durations within float rounding of the threshold are left out)."""
    det = PressDetector(DEBOUNCE, 0.6)
    det.reset(False, 0.0)
    ts, out, expected = 1.0, [], []
    for i, duration in enumerate(durations):
        pressed = i % 2 == 0
        out += det.edge(pressed, ts)
        if pressed:
            expected.append(("long" if duration >= 0.6 else "tap", ts))
        ts += duration
    out += det.edge(False, ts) + det.tick(ts + 10.0)
    assert out == expected
