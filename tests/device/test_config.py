"""Configuration: TOML tables per part, typed keys, overrides, errors naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from device.config import SECTIONS, Config, ConfigError, field_docs, load_config, reference_toml


def test_defaults_load_without_a_file() -> None:
    config = load_config(None)
    assert isinstance(config, Config)
    assert config.mqtt.broker.startswith("mqtt://")
    assert config.device.simulate is False


def test_overrides_apply() -> None:
    config = load_config(
        None, {"broker": "mqtts://b.example:8883", "device_id": "r7", "state_dir": "/tmp/x", "simulate": True}
    )
    assert config.mqtt.broker == "mqtts://b.example:8883"
    assert (config.device.id, config.device.state_dir, config.device.simulate) == ("r7", "/tmp/x", True)


def test_file_values_and_types(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[hearing]\nend_silence_ms = 500\n[speaking]\nvolume = 1\n[face]\naliases = { yay = "happy" }\n'
    )
    config = load_config(path)
    assert config.hearing.end_silence_ms == 500
    assert config.speaking.volume == 1.0 and isinstance(config.speaking.volume, float)
    assert config.face.aliases == {"yay": "happy"}


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[hearing]\nend_silence_ms = true\n", "hearing.end_silence_ms"),
        ("[hearing]\nend_silenc_ms = 3\n", "hearing.end_silenc_ms"),
        ("[nope]\nx = 1\n", "nope"),
        ("[device]\nid = 'a/b'\n", "device.id"),
        ("[mqtt]\nbroker = 'tcp://x'\n", "mqtt.broker"),
        ("[speaking]\nvoices = { en = 3 }\n", "speaking.voices"),
        ("not toml ===", "--config"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.key == key
    assert key in str(err.value)


def test_every_key_is_documented_and_reference_parses() -> None:
    for section, cls in SECTIONS.items():
        docs = field_docs(cls)
        missing = [f for f in cls.__dataclass_fields__ if f not in docs]
        assert not missing, f"[{section}] undocumented keys: {missing}"
    parsed = tomllib.loads(reference_toml())
    assert set(parsed) == set(SECTIONS)
    load_config(None, {f"{s}.{k}": v for s, table in parsed.items() for k, v in table.items()})
