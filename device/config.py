"""Configuration: one TOML file, one frozen dataclass per part, clear errors that name the key.

Each part owns its settings dataclass (``audio.hearing.settings.HearingSettings`` ...); this module
composes them, reads ``[section]`` tables from TOML, checks every key and type, has each part check its
values (``__post_init__`` or ``validate()``, raising ValueError that names the key), and applies the CLI
overrides operators and tests rely on (``--broker``, ``--device-id``, ``--state-dir``, ``--simulate``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_link.link.settings import LinkSettings
from agent_link.protocol.topics import DEFAULT_DEVICE_ID
from audio.edges.sim_room import SimRoomSettings
from audio.hearing.settings import HearingSettings
from audio.settings_checks import Check, raise_first_failed
from audio.speaking.settings import SpeakingSettings
from device.buttons.settings import ButtonSettings
from face.settings import FaceSettings


class ConfigError(ValueError):
    """A configuration problem; ``key`` is the dotted TOML key (``hearing.end_silence_ms``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"config: {key}: {message}")
        self.key = key


SIM_SPEAKERS: tuple[str, ...] = ("wav", "null")
"""Valid values of ``device.sim_speaker``."""

LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")
"""Valid values of ``device.log_level`` (any case)."""


@dataclass(frozen=True)
class DeviceSettings:
    """The device itself: identity, state, simulation (TOML table ``[device]``)."""

    id: str = DEFAULT_DEVICE_ID
    """Device id: MQTT client id and the ``{device}`` part of every topic (default "robot-1")."""

    state_dir: str = "~/.local/state/robot-face"
    """Directory for all persistent state: boot counter, settings, outbox, command ids (default
    "~/.local/state/robot-face"; the systemd unit uses /var/lib/robot-face)."""

    simulate: bool = False
    """Run with no hardware: sim/tap, sim/text and sim/audio inputs over MQTT, the speaker to WAV files or
    nowhere (default False)."""

    sim_speaker: str = "wav"
    """In simulation: "wav" writes each reply to ``<state_dir>/speech/<say>.wav``, "null" discards it;
    playback timing stays real-time either way (default "wav")."""

    thinking_timeout_s: float = 15.0
    """Seconds the face shows "thinking" after a transcript when no reply starts (default 15.0)."""

    watchdog: bool = True
    """Feed the systemd watchdog while the orchestrator is healthy, when systemd asks for it (default True)."""

    log_level: str = "INFO"
    """Logging level: DEBUG, INFO, WARNING or ERROR (default "INFO")."""

    def validate(self) -> None:
        """Raise ValueError naming the key ("device.log_level: ...") for a value that cannot work."""
        checks: tuple[Check, ...] = (
            (
                "id",
                bool(self.id) and not any(c in self.id for c in "/+#"),
                "must be non-empty without '/', '+' or '#'",
            ),
            ("sim_speaker", self.sim_speaker in SIM_SPEAKERS, f"must be one of {', '.join(SIM_SPEAKERS)}"),
            ("thinking_timeout_s", self.thinking_timeout_s > 0, "must be > 0"),
            ("log_level", self.log_level.upper() in LOG_LEVELS, f"must be one of {', '.join(LOG_LEVELS)}"),
        )
        raise_first_failed("device", self, checks)


@dataclass(frozen=True)
class Config:
    """The whole configuration."""

    device: DeviceSettings = field(default_factory=DeviceSettings)
    mqtt: LinkSettings = field(default_factory=LinkSettings)
    hearing: HearingSettings = field(default_factory=HearingSettings)
    speaking: SpeakingSettings = field(default_factory=SpeakingSettings)
    face: FaceSettings = field(default_factory=FaceSettings)
    button: ButtonSettings = field(default_factory=ButtonSettings)
    sim_room: SimRoomSettings = field(default_factory=SimRoomSettings)


SECTIONS: dict[str, type] = {f.name: f.default_factory for f in dataclasses.fields(Config)}  # type: ignore[misc]

OVERRIDES: dict[str, str] = {
    "broker": "mqtt.broker",
    "device_id": "device.id",
    "state_dir": "device.state_dir",
    "simulate": "device.simulate",
}
"""CLI override name -> dotted config key."""


def _check_value(key: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check_value(key, inner[0], value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true/false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(key, f"expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(key, f"expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(key, f"expected a list of strings, got {value!r}")
        return tuple(value)
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(key, f"expected a table of strings, got {value!r}")
        return dict(value)
    raise ConfigError(key, f"unsupported setting type {hint!r}")


def _build(section: str, cls: type, table: Any) -> Any:
    if not isinstance(table, dict):
        raise ConfigError(section, f"expected a table [{section}], got {table!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{section}.{key}", f"unknown key (known: {', '.join(sorted(known))})")
        values[key] = _check_value(f"{section}.{key}", hints[key], value)
    try:
        part = cls(**values)
        validate = getattr(part, "validate", None)
        if validate is not None:
            validate()
    except (TypeError, ValueError) as err:
        raise _named(section, known, err) from err
    return part


def _named(section: str, known: set[str], err: Exception) -> ConfigError:
    """The part's own validation error as a ConfigError naming the key: ``validate()`` starts its
    message with ``section.key: ``; other messages are searched for the longest key they mention."""
    message = str(err)
    for name in known:
        prefix = f"{section}.{name}: "
        if message.startswith(prefix):
            return ConfigError(f"{section}.{name}", message.removeprefix(prefix))
    key = next((k for k in sorted(known, key=lambda k: (-len(k), k)) if k in message), None)
    return ConfigError(f"{section}.{key}" if key else section, message)


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read the TOML file (if any), apply overrides (``OVERRIDES`` names or dotted keys), validate."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError as err:
            raise ConfigError("--config", f"file not found: {path}") from err
        except tomllib.TOMLDecodeError as err:
            raise ConfigError("--config", f"{path} is not valid TOML: {err}") from err
    for name, value in (overrides or {}).items():
        if value is None:
            continue
        dotted = OVERRIDES.get(name, name)
        section, _, key = dotted.partition(".")
        data.setdefault(section, {})[key] = value
    for section in data:
        if section not in SECTIONS:
            raise ConfigError(section, f"unknown section (known: {', '.join(SECTIONS)})")
    parts = {name: _build(name, cls, data.get(name, {})) for name, cls in SECTIONS.items()}
    config = Config(**parts)
    _validate(config)
    return config


def _validate(config: Config) -> None:
    broker = config.mqtt.broker
    if not (broker.startswith("mqtt://") or broker.startswith("mqtts://")):
        raise ConfigError(
            "mqtt.broker", f"must look like mqtt://host:port or mqtts://host:port, got {broker!r}"
        )


# ---- reference documentation ---------------------------------------------------------------------------
def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (the string literal after each field) of a settings dataclass."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + " }"
    raise TypeError(value)


def reference_toml() -> str:
    """A complete, commented config file with every key at its default."""
    lines = ["# robot-face configuration: every key, its meaning, unit and default.", ""]
    for section, cls in SECTIONS.items():
        docs = field_docs(cls)
        lines.append(f"[{section}]")
        defaults = cls()
        for f in dataclasses.fields(cls):
            doc = docs.get(f.name, "")
            lines.extend(f"# {line}" for line in _wrap(doc))
            value = getattr(defaults, f.name)
            if value is None:
                lines.append(f"# {f.name} =   (unset)")
            else:
                lines.append(f"{f.name} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _wrap(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]
