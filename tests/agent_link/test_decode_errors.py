"""Malformed input raises ProtocolError with the right reason and a detail naming the problem."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_link.protocol.messages import (
    MAX_PAYLOAD_BYTES,
    ConfigCommand,
    ProtocolError,
    SayCommand,
    decode_command,
    decode_event,
)

SAY = {"v": 1, "type": "say", "id": "c-1", "say": "r-1", "text": "hi"}


def _j(obj: object) -> bytes:
    return json.dumps(obj).encode()


CASES = [
    # (payload, reason, words in detail, command id)
    (b"{not json", "invalid", ["JSON"], None),
    (b"\xff\xfe\x00", "invalid", ["UTF-8"], None),
    (b"", "invalid", ["JSON"], None),
    (b"[1,2]", "invalid", ["object", "list"], None),
    (b'"say"', "invalid", ["object", "str"], None),
    (b"null", "invalid", ["object"], None),
    (b'{"v":1,"type":"stop","id":"c","x":NaN}', "invalid", ["NaN"], None),
    (_j({**SAY, "v": 2}), "unsupported_version", ["version", "2"], "c-1"),
    (_j({**SAY, "v": "1"}), "invalid", ["'v'"], "c-1"),
    (_j({**SAY, "v": True}), "invalid", ["'v'", "bool"], "c-1"),
    (_j({k: v for k, v in SAY.items() if k != "v"}), "invalid", ["'v'"], "c-1"),
    (_j({k: v for k, v in SAY.items() if k != "id"}), "invalid", ["'id'"], None),
    (_j({k: v for k, v in SAY.items() if k != "type"}), "invalid", ["'type'"], "c-1"),
    (_j({**SAY, "type": 5}), "invalid", ["'type'"], "c-1"),
    (_j({**SAY, "type": "dance"}), "unknown_type", ["dance"], "c-1"),
    (_j({**SAY, "id": 17}), "invalid", ["'id'"], None),
    (_j({**SAY, "id": ""}), "invalid", ["'id'"], None),
    (_j({**SAY, "text": 5}), "invalid", ["'text'", "int"], "c-1"),
    (_j({**SAY, "text": None}), "invalid", ["'text'"], "c-1"),
    (_j({k: v for k, v in SAY.items() if k != "text"}), "invalid", ["missing", "'text'"], "c-1"),
    (_j({**SAY, "final": "yes"}), "invalid", ["'final'"], "c-1"),
    (_j({**SAY, "final": 1}), "invalid", ["'final'"], "c-1"),
    (_j({**SAY, "expires_at": True}), "invalid", ["'expires_at'", "bool"], "c-1"),
    (_j({**SAY, "expires_at": "soon"}), "invalid", ["'expires_at'"], "c-1"),
    (_j({"v": 1, "type": "sleep_allowed", "id": "c-2", "value": 0}), "invalid", ["'value'"], "c-2"),
    (_j({"v": 1, "type": "sleep_allowed", "id": "c-2"}), "invalid", ["'value'"], "c-2"),
    (_j({"v": 1, "type": "config", "id": "c-3", "volume": True}), "invalid", ["'volume'", "bool"], "c-3"),
    (_j({"v": 1, "type": "config", "id": "c-3", "volume": 1.5}), "invalid", ["'volume'"], "c-3"),
    (_j({"v": 1, "type": "config", "id": "c-3", "language": 5}), "invalid", ["'language'"], "c-3"),
]


@pytest.mark.parametrize(("payload", "reason", "words", "command_id"), CASES)
def test_malformed_command(payload: bytes, reason: str, words: list[str], command_id: str | None) -> None:
    with pytest.raises(ProtocolError) as err:
        decode_command(payload)
    assert err.value.reason == reason
    for word in words:
        assert word in err.value.detail, (word, err.value.detail)
    assert err.value.command_id == command_id
    assert isinstance(err.value, ValueError)


def test_payload_over_64_kib() -> None:
    payload = _j({**SAY, "text": "a" * (65 * 1024)})
    with pytest.raises(ProtocolError) as err:
        decode_command(payload)
    assert err.value.reason == "invalid"
    assert str(len(payload)) in err.value.detail and str(MAX_PAYLOAD_BYTES) in err.value.detail


def test_payload_exactly_at_limit_is_decoded_not_size_rejected() -> None:
    pad = MAX_PAYLOAD_BYTES - len(_j({**SAY, "pad": ""}))
    payload = _j({**SAY, "pad": "x" * pad})
    assert len(payload) == MAX_PAYLOAD_BYTES
    assert decode_command(payload).id == "c-1"


def test_long_fields_within_64_kib_are_valid() -> None:
    # The contract rejects only malformed input and payloads over 64 KiB: no other length limits.
    long_id, reply, text = "c-" + "1" * 500, "r-" + "2" * 500, "Hello there. " * 4000
    cmd = decode_command(_j({**SAY, "id": long_id, "say": reply, "text": text}))
    assert isinstance(cmd, SayCommand) and (cmd.id, cmd.say, cmd.text) == (long_id, reply, text)
    config = decode_command(
        _j({"v": 1, "type": "config", "id": "c-3", "language": "x" * 100, "voice": "v" * 500})
    )
    assert isinstance(config, ConfigCommand) and config.voice == "v" * 500


def test_malformed_event() -> None:
    with pytest.raises(ProtocolError) as err:
        decode_event(
            _j({"v": 1, "type": "wake", "id": "e", "boot": 1, "seq": True, "ts": 1.0, "source": "sim"})
        )
    assert "'seq'" in err.value.detail and err.value.command_id == "e"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
command_like = st.fixed_dictionaries(
    {},
    optional={
        "v": st.sampled_from([1, 2, 0, True, "1", 1.0, None]),
        "type": st.sampled_from(["say", "stop", "sleep", "sleep_allowed", "config", "x", 3]),
        "id": st.text(max_size=5) | st.integers(),
        "expires_at": json_values,
        "say": json_values,
        "text": json_values,
        "final": json_values,
        "value": json_values,
        "language": json_values,
        "voice": json_values,
        "volume": json_values,
    },
)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200) | json_values.map(_j) | command_like.map(_j))
def test_fuzz_decode_command_only_raises_protocol_error(payload: bytes) -> None:
    try:
        cmd = decode_command(payload)
    except ProtocolError as err:
        assert err.reason in ("invalid", "unknown_type", "unsupported_version")
        assert err.detail
    else:
        assert cmd.v == 1 and cmd.id
