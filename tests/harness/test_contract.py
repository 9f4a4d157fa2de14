"""Contract checkers and sequence matching over hand-built event streams."""

from __future__ import annotations

import pytest

from agent_link.harness.contract import ContractError, assert_contract, check_contract
from agent_link.harness.matching import SequenceMismatch, assert_absent, assert_sequence, describe
from agent_link.protocol.messages import Event, make_event
from tests.harness.events import EventFactory


def rules(events: list[Event]) -> list[str]:
    return [v.rule for v in check_contract(events)]


def test_clean_conversation_passes() -> None:
    ev = EventFactory()
    stream = [
        ev("wake", source="sim"),
        ev("playback_started", say="r1"),
        ev("playback_finished", say="r1", interrupted=False),
        ev("speech_started", utterance="u1"),
        ev("speech_ended", utterance="u1", audio_ms=900),
        ev.transcript("hello", utterance="u1"),
        ev("speech_started", utterance="u2"),
        ev("utterance_failed", utterance="u2", reason="too_short", detail="80 ms"),
        ev("asleep", reason="tag"),
    ]
    assert check_contract(stream, from_start=True) == []
    assert_contract(stream)


def test_a_boot_starts_asleep() -> None:
    ev = EventFactory()
    stream = [ev("asleep", reason="command")]  # the device starts asleep: nothing to fall from
    assert [v.rule for v in check_contract(stream, from_start=True)] == ["asleep/wake alternate"]
    assert check_contract(stream) == []  # joined mid-boot: the wake may be before the recording


def test_unclosed_and_double_closed_utterances() -> None:
    ev = EventFactory()
    open_one = [ev("speech_started", utterance="u1")]
    assert rules(open_one) == ["utterance closed once"]
    assert check_contract(open_one, allow_open=True) == []
    ev = EventFactory()
    twice = [
        ev("speech_started", utterance="u1"),
        ev.transcript("a", utterance="u1"),
        ev("utterance_failed", utterance="u1", reason="stt_error", detail="x"),
    ]
    assert rules(twice) == ["utterance closed once"]


def test_typed_transcript_needs_no_speech_started() -> None:
    ev = EventFactory()
    typed = ev(
        "transcript",
        utterance="t1",
        text="hi",
        confidence=1.0,
        language="en",
        source="typed",
        audio_ms=0,
        decode_ms=0,
    )
    assert check_contract([typed]) == []
    voice = ev.transcript("hi", utterance="u9")
    assert rules([voice]) == ["utterance closed once"]


def test_seq_gaps_and_order_per_boot() -> None:
    def at(boot: int, seq: int) -> Event:
        return make_event("tap", {"source": "sim"}, id=f"e{boot}-{seq}", boot=boot, seq=seq, ts=1.0)

    assert check_contract([at(1, 1), at(1, 2), at(2, 1), at(1, 3), at(2, 2)]) == []
    gap = check_contract([at(1, 1), at(1, 3)])
    assert [v.rule for v in gap] == ["seq +1"] and "gap" in gap[0].detail
    back = check_contract([at(1, 2), at(1, 1)])
    assert "out of order" in back[0].detail
    assert [v.rule for v in check_contract([at(1, 3)], from_start=True)] == ["seq +1"]


def test_redelivery_is_fine_but_reused_id_is_not() -> None:
    a = make_event("tap", {"source": "sim"}, id="x", boot=1, seq=1, ts=1.0)
    b = make_event("tap", {"source": "button"}, id="x", boot=1, seq=2, ts=2.0)
    assert check_contract([a, a]) == []
    assert "unique ids" in rules([a, b])


def test_playback_and_sleep_alternation() -> None:
    ev = EventFactory()
    stream = [
        ev("playback_started", say="r1"),
        ev("playback_started", say="r1"),
        ev("playback_finished", say="r1", interrupted=False),
        ev("asleep", reason="command"),
        ev("asleep", reason="command"),
    ]
    found = rules(stream)
    assert found.count("one playback per reply") == 1
    assert found.count("asleep/wake alternate") == 1
    with pytest.raises(ContractError, match="2 contract violation"):
        assert_contract(stream)


def test_a_reply_a_dead_boot_started_must_be_finished_after_the_restart() -> None:
    first, second = EventFactory(boot=1), EventFactory(boot=2)
    started = [first("wake", source="sim"), first("playback_started", say="r1")]
    assert check_contract(started) == []  # still playing when the recording ends: fine
    restarted = [*started, second("wake", source="button")]
    assert rules(restarted) == ["reply finished once"]
    first, second = EventFactory(boot=1), EventFactory(boot=2)
    started = [first("wake", source="sim"), first("playback_started", say="r1")]
    closed = [
        *started,
        second("playback_finished", say="r1", interrupted=True),
        second("wake", source="button"),
    ]
    assert check_contract(closed) == []


def test_assert_sequence_and_absent() -> None:
    ev = EventFactory()
    stream = [ev("wake", source="sim"), ev("tap", source="sim"), ev("asleep", reason="tag")]
    found = assert_sequence(stream, ["wake", ("asleep", {"reason": "tag"})])
    assert [e.type for e in found] == ["wake", "asleep"]
    with pytest.raises(SequenceMismatch, match="asleep"):
        assert_sequence(stream, ["asleep", "wake"])
    assert_absent(stream, "sleep_ignored")
    with pytest.raises(SequenceMismatch):
        assert_absent(stream, "tap", {"source": "sim"})
    assert "wake source=sim" in describe(stream[0])
