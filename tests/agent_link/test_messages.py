"""Every message class round-trips, validates against its JSON Schema, and the docs are generated."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from agent_link.protocol import messages
from agent_link.protocol.messages import (
    COMMAND_TYPES,
    EVENT_TYPES,
    AgentStatus,
    ConfigCommand,
    Message,
    ProtocolError,
    SayCommand,
    StatusMessage,
    decode_agent_status,
    decode_command,
    decode_event,
    decode_sim_text,
    decode_status,
    make_event,
)
from agent_link.protocol.schema import asyncapi_document, json_schema, message_classes, stale_docs

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _discovered() -> list[type[Message]]:
    """Every concrete (leaf) message class in agent_link.protocol.messages, found by walking the module."""
    found = []
    for obj in vars(messages).values():
        if inspect.isclass(obj) and issubclass(obj, Message) and not obj.__subclasses__():
            found.append(obj)
    return found


DISCOVERED = _discovered()


def test_discovery_finds_every_message() -> None:
    assert all("EXAMPLE" in vars(cls) for cls in DISCOVERED), "every message class needs its own EXAMPLE"
    assert len(DISCOVERED) == len(COMMAND_TYPES) + len(EVENT_TYPES) + 4
    assert set(DISCOVERED) == set(message_classes().values())


def _decoder(cls: type[Message]):  # type: ignore[no-untyped-def]
    if cls in COMMAND_TYPES.values():
        return decode_command
    if cls in EVENT_TYPES.values():
        return decode_event
    return {
        StatusMessage: decode_status,
        AgentStatus: decode_agent_status,
        messages.SimText: decode_sim_text,
        messages.SimTap: lambda p: messages.SimTap.model_validate(json.loads(p)),
    }[cls]


@pytest.mark.parametrize("cls", DISCOVERED, ids=lambda c: c.__name__)
def test_round_trip(cls: type[Message]) -> None:
    example = cls.model_validate(cls.EXAMPLE)
    encoded = example.encode()
    assert json.loads(encoded) == example.to_json()
    decoded = _decoder(cls)(encoded)
    assert decoded == example and type(decoded) is cls
    # the documented example is exactly what the class encodes (no field lost or invented)
    assert example.to_json() == {**cls.model_validate(cls.EXAMPLE).to_json()}
    assert set(cls.EXAMPLE) <= set(example.to_json())


@pytest.mark.parametrize("cls", DISCOVERED, ids=lambda c: c.__name__)
def test_json_schema_validates_example_and_rejects_wrong_type(cls: type[Message]) -> None:
    schema = json_schema(cls)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(cls.model_validate(cls.EXAMPLE).encode()))
    for field in cls.model_fields:
        if field in cls.EXAMPLE and field != "type":
            bad = {**cls.EXAMPLE, field: [1, 2]}
            assert not validator.is_valid(bad), field


def test_committed_docs_match_the_generator() -> None:
    assert stale_docs(DOCS) == [], "run: robot-face schema"


def test_asyncapi_refs_resolve_and_cover_every_message() -> None:
    doc = asyncapi_document()
    assert doc["asyncapi"].startswith("3.")
    refs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            refs.extend(v for k, v in node.items() if k == "$ref")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    for ref in refs:
        target: object = doc
        for part in ref.removeprefix("#/").split("/"):
            assert isinstance(target, dict) and part in target, ref
            target = target[part]
    event_messages = doc["channels"]["event"]["messages"]
    command_messages = doc["channels"]["command"]["messages"]
    assert len(event_messages) == len(EVENT_TYPES) and len(command_messages) == len(COMMAND_TYPES)
    assert yaml.safe_load((DOCS / "asyncapi.yaml").read_text()) == json.loads(json.dumps(doc))


def test_unknown_fields_are_tolerated() -> None:
    cmd = decode_command(b'{"v":1,"type":"stop","id":"c1","future_field":{"x":1}}')
    assert cmd.type == "stop" and cmd.id == "c1"


def test_int_accepted_for_float_bool_never_a_number() -> None:
    cmd = decode_command(b'{"v":1,"type":"config","id":"c1","volume":1,"expires_at":1764441600}')
    assert isinstance(cmd, ConfigCommand) and cmd.volume == 1.0 and cmd.expires_at == 1764441600.0
    with pytest.raises(ProtocolError) as err:
        decode_command(b'{"v":1,"type":"config","id":"c1","volume":true}')
    assert "volume" in err.value.detail


def test_say_defaults_final_true() -> None:
    cmd = decode_command(b'{"v":1,"type":"say","id":"c1","say":"r1","text":"hi"}')
    assert cmd == SayCommand(id="c1", say="r1", text="hi", final=True)


def test_status_will_shape() -> None:
    assert StatusMessage(online=False, boot=7).encode() == b'{"v":1,"online":false,"boot":7}'
    assert decode_status(b'{"v":1,"online":false,"boot":7}') == StatusMessage(online=False, boot=7)


def test_agent_status_absent_is_offline() -> None:
    assert decode_agent_status(b"") == AgentStatus(online=False)
    assert decode_agent_status(b'{"online":true}').online is True
    with pytest.raises(ProtocolError):
        decode_agent_status(b'{"online":"yes"}')


def test_make_event_validates() -> None:
    ev = make_event(
        "transcript",
        {
            "utterance": "u1",
            "text": "hi",
            "confidence": 1,
            "language": "en",
            "source": "typed",
            "audio_ms": 0,
            "decode_ms": 0,
        },
        id="d-1-1",
        boot=1,
        seq=1,
        ts=5,
    )
    assert ev.type == "transcript" and ev.confidence == 1.0
    with pytest.raises(ProtocolError) as err:
        make_event("wake", {"source": "elbow"}, id="d-1-2", boot=1, seq=2, ts=5.0)
    assert err.value.reason == "invalid" and "source" in err.value.detail
    with pytest.raises(ProtocolError) as err:
        make_event("wake", {"source": "sim", "sorce": "x"}, id="d-1-2", boot=1, seq=2, ts=5.0)
    assert "sorce" in err.value.detail
    with pytest.raises(ProtocolError) as err:
        make_event("nap", {}, id="d-1-2", boot=1, seq=2, ts=5.0)
    assert err.value.reason == "unknown_type"
    with pytest.raises(ProtocolError):
        make_event(
            "transcript",
            {
                "utterance": "u",
                "text": "x",
                "confidence": 1.5,
                "language": "en",
                "source": "voice",
                "audio_ms": 1,
                "decode_ms": 1,
            },
            id="i",
            boot=1,
            seq=3,
            ts=1.0,
        )


def test_command_rejected_allows_null_command() -> None:
    ev = make_event(
        "command_rejected",
        {"command": None, "reason": "invalid", "detail": "bad JSON"},
        id="d-1-3",
        boot=1,
        seq=3,
        ts=1.0,
    )
    assert json.loads(ev.encode())["command"] is None
