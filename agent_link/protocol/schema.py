"""JSON Schema and AsyncAPI 3 documents generated from the message classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agent_link.protocol.messages import (
    COMMAND_TYPES,
    EVENT_TYPES,
    MAX_PAYLOAD_BYTES,
    AgentStatus,
    Message,
    SimTap,
    SimText,
    StatusMessage,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def message_classes() -> dict[str, type[Message]]:
    """Every wire message, by schema name (``command.say``, ``event.wake``, ``status``, ...)."""
    classes: dict[str, type[Message]] = {}
    for name, cls in COMMAND_TYPES.items():
        classes[f"command.{name}"] = cls
    for name, ecls in EVENT_TYPES.items():
        classes[f"event.{name}"] = ecls
    classes["status"] = StatusMessage
    classes["agent_status"] = AgentStatus
    classes["sim_tap"] = SimTap
    classes["sim_text"] = SimText
    return classes


def json_schema(cls: type[Message]) -> dict[str, Any]:
    """The JSON Schema (2020-12) of one message class, with its example; ``v``/``type`` required."""
    schema = cls.model_json_schema(mode="validation")
    required = list(schema.get("required", []))
    props = schema.get("properties", {})
    for key in ("type", "id", "v"):
        if key in props and key not in required:
            required.insert(0, key)
    if required:
        schema["required"] = required
    schema["examples"] = [cls.EXAMPLE]
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def all_schemas() -> dict[str, dict[str, Any]]:
    """Schema name → JSON Schema, for every message."""
    return {name: json_schema(cls) for name, cls in message_classes().items()}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/messages/{name}"}


def _msg_key(name: str) -> str:
    return name.replace(".", "_")


def asyncapi_document() -> dict[str, Any]:
    """The AsyncAPI 3.0 description of the device side of protocol v1."""
    schemas = all_schemas()
    messages: dict[str, Any] = {}
    for name, schema in schemas.items():
        body = {k: v for k, v in schema.items() if k not in ("$schema", "examples", "title")}
        messages[_msg_key(name)] = {
            "name": name,
            "title": schema.get("title", name),
            "summary": schema.get("description", ""),
            "contentType": "application/json",
            "payload": body,
            "examples": [{"name": "example", "payload": ex} for ex in schema["examples"]],
        }
    messages["sim_audio"] = {
        "name": "sim_audio",
        "title": "SimAudio",
        "summary": "A WAV file (PCM 16-bit, mono or stereo, any rate) fed into the microphone pipeline.",
        "contentType": "audio/wav",
        "payload": {"type": "string", "format": "binary"},
    }
    params = {
        "root": {"description": "Topic root (configurable).", "default": "robotface"},
        "device": {"description": "Device id (also the MQTT client id)."},
    }
    root_only = {"root": params["root"]}

    def channel(address: str, names: list[str], description: str, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "address": address,
            "description": description,
            "parameters": p,
            "messages": {_msg_key(n): _ref(_msg_key(n)) for n in names},
        }

    channels = {
        "status": channel(
            "{root}/{device}/status",
            ["status"],
            "Retained birth / death / current state; also the Last Will `{v:1, online:false, boot}`.",
            params,
        ),
        "event": channel(
            "{root}/{device}/event",
            [f"event.{n}" for n in EVENT_TYPES],
            "Ordered device → agent event stream; `seq` +1 per event within a boot.",
            params,
        ),
        "command": channel(
            "{root}/{device}/command",
            [f"command.{n}" for n in COMMAND_TYPES],
            f"Ordered agent → device command stream; payloads over {MAX_PAYLOAD_BYTES} bytes are rejected.",
            params,
        ),
        "agentStatus": channel(
            "{root}/agent/status",
            ["agent_status"],
            "Retained; absent or online:false = agent unreachable.",
            root_only,
        ),
        "simTap": channel("{root}/{device}/sim/tap", ["sim_tap"], "Simulation only: a tap.", params),
        "simText": channel("{root}/{device}/sim/text", ["sim_text"], "Simulation only: typed text.", params),
        "simAudio": channel("{root}/{device}/sim/audio", ["sim_audio"], "Simulation only: audio.", params),
    }

    def operation(action: str, chan: str, summary: str, retain: bool = False) -> dict[str, Any]:
        return {
            "action": action,
            "channel": {"$ref": f"#/channels/{chan}"},
            "summary": summary,
            "messages": [{"$ref": f"#/channels/{chan}/messages/{key}"} for key in channels[chan]["messages"]],
            "bindings": {"mqtt": {"qos": 1, "retain": retain, "bindingVersion": "0.2.0"}},
        }

    operations = {
        "publishStatus": operation("send", "status", "Device publishes its status (retained).", retain=True),
        "publishEvent": operation("send", "event", "Device publishes events, written to disk first."),
        "receiveCommand": operation("receive", "command", "Device executes commands (duplicates once)."),
        "receiveAgentStatus": operation(
            "receive", "agentStatus", "Device watches the agent's presence (retained).", retain=True
        ),
        "receiveSimTap": operation("receive", "simTap", "Simulated tap (simulation only)."),
        "receiveSimText": operation("receive", "simText", "Simulated typed input (simulation only)."),
        "receiveSimAudio": operation("receive", "simAudio", "Simulated microphone audio (simulation only)."),
    }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "robot-face device ↔ cloud agent",
            "version": "1",
            "description": (
                "MQTT contract version 1 between the robot-face device runtime and its cloud agent. "
                "Generated from agent_link/protocol/messages.py by `robot-face schema`; see docs/protocol.md."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "broker": {
                "host": "127.0.0.1:1883",
                "protocol": "mqtt",
                "protocolVersion": "5",
                "description": "Any MQTT 5 broker (mosquitto 2.x is the reference). mqtts:// for TLS.",
                "bindings": {
                    "mqtt": {
                        "clientId": "{device}",
                        "cleanSession": False,
                        "keepAlive": 30,
                        "sessionExpiryInterval": 3600,
                        "lastWill": {
                            "topic": "{root}/{device}/status",
                            "qos": 1,
                            "message": '{"v":1,"online":false,"boot":<boot>}',
                            "retain": True,
                        },
                        "bindingVersion": "0.2.0",
                    }
                },
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


def asyncapi_yaml() -> str:
    """The AsyncAPI document as YAML text (what ``docs/asyncapi.yaml`` must contain)."""
    header = "# Generated by `robot-face schema` from agent_link/protocol/messages.py. Do not edit.\n"
    document = json.loads(json.dumps(asyncapi_document()))  # plain copies: no YAML anchors/aliases
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)


def generated_files() -> dict[str, str]:
    """Relative path (under ``docs/``) → content of every generated document."""
    files = {"asyncapi.yaml": asyncapi_yaml()}
    for name, schema in all_schemas().items():
        files[f"schemas/{name}.json"] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return files


def write_docs(docs_dir: Path) -> list[Path]:
    """(Re)write the generated documents under ``docs_dir``; return the paths that changed."""
    changed = []
    for rel, content in generated_files().items():
        path = docs_dir / rel
        if path.exists() and path.read_text(encoding="utf-8") == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        changed.append(path)
    return changed


def stale_docs(docs_dir: Path) -> list[str]:
    """Generated documents under ``docs_dir`` that are missing or differ from the generator output."""
    stale = []
    for rel, content in generated_files().items():
        path = docs_dir / rel
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            stale.append(rel)
    return stale
