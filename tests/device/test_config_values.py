"""Enumerated and ranged settings: a value that cannot work is one ConfigError naming the key, at load
time, so ``config --check``, ``doctor`` and the daemon's start all report it (exit 2 for the daemon)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audio.hearing.settings import STT_PROVIDERS, VAD_AGGRESSIVENESS, VAD_FRAME_MS
from audio.speaking.settings import SINKS
from audio.unsigned_int8 import INT8_WEIGHTS
from device.cli import main
from device.config import LOG_LEVELS, SIM_SPEAKERS, ConfigError, load_config
from face.settings import RENDERERS

BAD: list[tuple[str, Any]] = [
    ("face.renderer", "foo"),
    ("face.fps", 0),
    ("face.browser_port", 70000),
    ("face.pygame_width", 0),
    ("face.pygame_height", -1),
    ("face.eye_colour", "cyan"),
    ("face.background_colour", "#00000"),
    ("face.listening_colour", "#gg0000"),
    ("face.offline_colour", ""),
    ("face.error_colour", "red"),
    ("face.eye_size", 0.0),
    ("face.eye_spacing", -1.0),
    ("face.corner_roundness", 1.5),
    ("face.pupil_size", -0.1),
    ("face.asleep_brightness", 2.0),
    ("face.blink_min_s", 0.0),
    ("face.blink_max_s", 1.0),  # below the default blink_min_s 2.0
    ("face.saccade_min_s", -1.0),
    ("face.saccade_max_s", 0.5),  # below the default saccade_min_s 0.8
    ("face.breath_period_s", 0.0),
    ("face.wake_duration_s", -1.0),
    ("face.expression_blend_s", -0.1),
    ("face.expression_hold_s", -1.0),
    ("face.aliases", {"yay": "jolly"}),
    ("speaking.sink", "foo"),
    ("speaking.sink", "wav"),  # without speaking.wav_dir: the key named is wav_dir (below)
    ("speaking.sim_rate", 0),
    ("speaking.volume", 5.0),
    ("speaking.volume", -0.1),
    ("speaking.length_scale", 0.0),
    ("speaking.fade_ms", -1.0),
    ("speaking.stop_fade_ms", -1.0),
    ("speaking.block_ms", 0),
    ("speaking.latency", "fast"),
    ("speaking.latency", "-0.05"),
    ("speaking.tts_threads", 0),
    ("speaking.first_clause_min_words", -1),
    ("speaking.max_piece_chars", 0),
    ("speaking.reopen_interval_s", 0.0),
    ("hearing.sample_rate", 8000),
    ("hearing.device_sample_rate", -1),
    ("hearing.block_ms", 25),
    ("hearing.reopen_interval_s", 0.0),
    ("hearing.vad_aggressiveness", 7),
    ("hearing.vad_aggressiveness", -1),
    ("hearing.tone_gate_share", 1.5),
    ("hearing.tone_gate_share", 0.0),
    ("hearing.start_window_ms", 0),
    ("hearing.start_speech_ms", 0),
    ("hearing.start_speech_ms", 500),  # more than start_window_ms 240
    ("hearing.end_silence_ms", 0),
    ("hearing.pre_roll_ms", -1),
    ("hearing.post_roll_ms", -1),
    ("hearing.min_utterance_ms", -1),
    ("hearing.max_part_ms", 0),
    ("hearing.max_utterance_ms", 0),
    ("hearing.speaking_tail_ms", -1),
    ("hearing.speaking_tail_max_ms", -1),
    ("hearing.stt_provider", "foo"),
    ("hearing.stt_timeout_s", 0.0),
    ("hearing.stt_threads", 0),
    ("hearing.stt_beam_size", 0),
    ("hearing.stt_window_margin_ms", -1),
    ("hearing.stt_min_window_ms", -1),
    ("hearing.turn_int8_weights", "int8"),
    ("device.id", ""),
    ("device.sim_speaker", "speaker"),
    ("device.thinking_timeout_s", 0.0),
    ("device.log_level", "LOUD"),
]


@pytest.mark.parametrize(("key", "value"), BAD, ids=[f"{k}={v!r}" for k, v in BAD])
def test_a_bad_value_names_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, {key: value})
    expected = "speaking.wav_dir" if (key, value) == ("speaking.sink", "wav") else key
    assert err.value.key == expected
    assert str(err.value).startswith(f"config: {expected}: ")
    assert repr(value) in str(err.value) or key != expected


def test_the_message_lists_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match=r"^config: face.renderer: must be one of terminal, browser, "):
        load_config(None, {"face.renderer": "foo"})
    with pytest.raises(ConfigError, match=r"must be one of 10, 20, 30 \(webrtcvad\), got 25$"):
        load_config(None, {"hearing.block_ms": 25})


GOOD: list[tuple[str, Any]] = [
    *(("face.renderer", r) for r in RENDERERS),
    ("face.renderer", " Terminal "),  # the renderer choice ignores case and spaces
    ("face.browser_port", 0),
    ("face.eye_colour", "ff00ff"),
    ("face.corner_roundness", 0.0),
    ("face.asleep_brightness", 1.0),
    ("face.aliases", {"yay": "HAPPY"}),
    *(("speaking.sink", s) for s in SINKS if s != "wav"),
    ("speaking.volume", 0.0),
    ("speaking.volume", 1),
    ("speaking.latency", "high"),
    ("speaking.latency", "0.05"),
    ("speaking.first_clause_min_words", 0),
    *(("hearing.block_ms", ms) for ms in VAD_FRAME_MS),
    *(("hearing.vad_aggressiveness", a) for a in VAD_AGGRESSIVENESS),
    *(("hearing.stt_provider", p) for p in STT_PROVIDERS),
    ("hearing.tone_gate_share", 1.0),
    ("hearing.start_speech_ms", 240),
    ("hearing.speaking_tail_max_ms", 0),
    ("hearing.device_sample_rate", 48000),
    ("hearing.stt_beam_size", 1),
    *(("hearing.turn_int8_weights", w) for w in INT8_WEIGHTS),
    *(("device.sim_speaker", s) for s in SIM_SPEAKERS),
    *(("device.log_level", level.lower()) for level in LOG_LEVELS),
]


@pytest.mark.parametrize(("key", "value"), GOOD, ids=[f"{k}={v!r}" for k, v in GOOD])
def test_good_values_load(key: str, value: Any) -> None:
    section, _, name = key.partition(".")
    config = load_config(None, {key: value})
    assert getattr(getattr(config, section), name) == value


def test_the_wav_sink_loads_with_its_directory(tmp_path: Path) -> None:
    config = load_config(None, {"speaking.sink": "wav", "speaking.wav_dir": str(tmp_path)})
    assert config.speaking.sink == "wav"


def test_the_defaults_are_valid() -> None:
    config = load_config(None)
    for part in (config.device, config.hearing, config.speaking, config.face):
        part.validate()


def _bad_renderer(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text('[face]\nrenderer = "foo"\n')
    return path


def test_config_check_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--check", "--config", str(_bad_renderer(tmp_path))]) == 2
    captured = capsys.readouterr()
    assert "config: face.renderer: must be one of" in captured.err and "'foo'" in captured.err
    assert "configuration OK" not in captured.out


def test_doctor_fails_the_configuration_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--config", str(_bad_renderer(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "✘ configuration:" in out and "face.renderer" in out


def test_the_daemon_exits_2_before_starting(tmp_path: Path) -> None:
    """Exit 2 is the unit's RestartPreventExitStatus: no restart loop over a bad value."""
    proc = subprocess.run(
        [sys.executable, "-m", "device", "run", "--config", str(_bad_renderer(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "config: face.renderer: must be one of" in proc.stderr
    assert "Traceback" not in proc.stderr
