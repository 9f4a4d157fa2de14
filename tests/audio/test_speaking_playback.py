"""PlaybackQueue: what the output callback renders, block by block (pure, no clock)."""

from __future__ import annotations

import numpy as np

from audio.speaking.playback import PlaybackQueue, QueuedPiece, fade_edges

RATE = 1000


def _piece(say: str, reply: int, n: int, value: float = 0.5) -> QueuedPiece:
    return QueuedPiece(say, reply, np.full(n, value, np.float32), 0, 1, ())


def _render(q: PlaybackQueue, n: int = 100) -> tuple[np.ndarray, list]:
    out = np.zeros(n, np.float32)
    marks = q.render(out)
    return out, marks


def test_marks_and_samples_in_order_with_gap_accounting() -> None:
    q = PlaybackQueue(RATE, volume=1.0)
    g = q.generation
    assert q.push(_piece("a", 1, 150), g)
    out, marks = _render(q)
    assert [(m.kind, m.frame) for m in marks] == [("reply_started", 0), ("piece_started", 0)]
    assert np.all(out == 0.5)
    out, marks = _render(q)  # piece ends at 50, then underrun
    assert marks == [] and np.all(out[:50] == 0.5) and np.all(out[50:] == 0)
    q.push(_piece("a", 1, 30), g)
    q.push_end("a", 1, g)
    q.push(_piece("b", 2, 10), g)
    out, marks = _render(q)
    kinds = [(m.kind, m.say, m.frame) for m in marks]
    assert kinds == [
        ("piece_started", "a", 0),
        ("reply_finished", "a", 30),
        ("reply_started", "b", 30),
        ("piece_started", "b", 30),
    ]
    assert marks[0].gap_frames == 50
    assert not marks[1].interrupted
    assert q.busy  # b is still open (no end yet)


def test_stop_fades_out_and_finishes_interrupted() -> None:
    q = PlaybackQueue(RATE, volume=1.0, stop_fade_ms=20)  # 20 frames
    g = q.generation
    q.push(_piece("a", 1, 1000), g)
    q.push_end("a", 1, g)
    q.push(_piece("b", 2, 100), g)
    _render(q)
    handled = q.stop()
    assert handled == frozenset({1})  # b was never heard: the caller closes it
    assert not q.push(_piece("a", 1, 100), g)  # stale generation is dropped
    out, marks = _render(q)
    assert [(m.kind, m.frame, m.interrupted) for m in marks] == [("reply_finished", 20, True)]
    assert out[0] > 0.4 and np.all(np.diff(out[:20]) <= 0) and out[19] < 0.05
    assert np.all(out[20:] == 0)
    out, marks = _render(q)
    assert marks == [] and np.all(out == 0) and not q.busy


def test_stop_while_waiting_for_text_finishes_at_once() -> None:
    q = PlaybackQueue(RATE)
    q.push(_piece("a", 1, 10), q.generation)
    _render(q)
    q.stop()
    _, marks = _render(q)
    assert [(m.kind, m.frame, m.interrupted) for m in marks] == [("reply_finished", 0, True)]


def test_empty_reply_finishes_without_start() -> None:
    q = PlaybackQueue(RATE)
    q.push_end("e", 7, q.generation)
    _, marks = _render(q)
    assert [(m.kind, m.say, m.interrupted) for m in marks] == [("reply_finished", "e", False)]


def test_volume_ramps_without_jump() -> None:
    q = PlaybackQueue(RATE, volume=1.0)
    q.push(_piece("a", 1, 1000, 1.0), q.generation)
    _render(q)
    q.set_volume(0.2)
    out, _ = _render(q)
    assert abs(out[0] - 1.0) < 0.02 and abs(out[-1] - 0.2) < 0.02 and np.all(np.diff(out) <= 0)
    out, _ = _render(q)
    assert np.allclose(out, 0.2)


def test_fade_edges() -> None:
    out = fade_edges(np.ones(100, np.float32), 10)
    assert out[0] == 0 and out[-1] < 0.2 and np.all(out[10:90] == 1)


def test_hold_after_a_reply_starts_nothing_behind_it_until_released() -> None:
    q = PlaybackQueue(RATE, volume=1.0)
    g = q.generation
    q.hold("a")
    q.push(_piece("a", 1, 60), g)
    q.push_end("a", 1, g)
    q.push(_piece("b", 2, 60), g)
    q.push_end("b", 2, g)
    out, marks = _render(q)
    assert [(m.kind, m.say) for m in marks] == [
        ("reply_started", "a"),
        ("piece_started", "a"),
        ("reply_finished", "a"),
    ]
    assert np.all(out[:60] == 0.5) and np.all(out[60:] == 0)  # b not even one sample
    assert q.holding and q.busy
    out, marks = _render(q)
    assert marks == [] and np.all(out == 0)
    q.release("a")
    assert not q.holding
    out, marks = _render(q)
    assert [(m.kind, m.say) for m in marks] == [
        ("reply_started", "b"),
        ("piece_started", "b"),
        ("reply_finished", "b"),
    ]
    assert np.all(out[:60] == 0.5)


def test_a_hold_stays_through_a_stop_and_applies_at_once_after_a_finished_reply() -> None:
    q = PlaybackQueue(RATE, volume=1.0)
    q.push_end("a", 1, q.generation)
    _render(q)  # a finished at the output side before the hold arrived
    q.hold("a")
    assert q.holding
    q.push(_piece("b", 2, 10), q.generation)
    out, marks = _render(q)
    assert marks == [] and np.all(out == 0)
    q.stop()  # a stop drops what waited, not the holds: only a release does
    assert q.holding
    q.release("a")
    assert not q.holding
    q.hold("b")  # b was dropped by the stop: its end never comes here...
    q.hold("b", at_once=True)  # ...so the one who knows says hold at once (it replaces the first)
    assert q.holding
    q.release("b")
    assert not q.holding
    q.hold("c")  # c never came: nothing is held
    q.push(_piece("d", 4, 10), q.generation)
    _, marks = _render(q)
    assert [(m.kind, m.say) for m in marks][:1] == [("reply_started", "d")]
