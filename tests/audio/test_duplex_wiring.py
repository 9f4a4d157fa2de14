"""How the device builds the duplex parts from configuration: the simulated room, the front end on
the capture path, the reference taps on the sink, and what the doctor reports."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from audio.edges.capture import DeviceListSource, SimulatedMicrophone, SoundDeviceMicrophone
from audio.edges.sim_room import RoomEcho
from audio.edges.stream_sink import StreamSink
from audio.hearing.front_end import FrontEndSource
from device.config import load_config
from device.doctor.audio_checks import check_duplex
from device.persistence import StateDir
from device.shell.parts import make_source, make_speaker, reference_taps


def _config(tmp_path: Path, **keys: object) -> object:
    return load_config(None, {"simulate": True, "state_dir": str(tmp_path), **keys})


def test_half_duplex_by_default_is_the_simulated_microphone_hearing_the_room(tmp_path: Path) -> None:
    source = make_source(_config(tmp_path))  # type: ignore[arg-type]
    assert type(source) is SimulatedMicrophone
    assert isinstance(source.echo, RoomEcho)  # the echo every simulated run exercises
    assert reference_taps(source) == [source.echo.on_rendered]
    quiet = make_source(_config(tmp_path, **{"sim_room.enabled": False}))  # type: ignore[arg-type]
    assert type(quiet) is SimulatedMicrophone and quiet.echo is None
    assert reference_taps(quiet) == []


def test_sim_room_and_webrtc_build_the_front_end_over_a_microphone_hearing_the_room(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"sim_room.enabled": True, "hearing.echo_cancellation": "webrtc"})
    source = make_source(config)  # type: ignore[arg-type]
    assert isinstance(source, FrontEndSource)
    assert isinstance(source.inner, SimulatedMicrophone) and isinstance(source.inner.echo, RoomEcho)
    assert source.front.options.echo_delay_ms == 40  # the simulated room's known path
    taps = reference_taps(source)
    assert taps == [source.front.reference, source.inner.echo.on_rendered]
    speaker = make_speaker(config, StateDir(tmp_path), lambda event: None, source)  # type: ignore[arg-type]
    sink = speaker._sink
    assert isinstance(sink, StreamSink)
    assert list(sink._taps) == taps


def test_webrtc_on_hardware_wraps_the_sounddevice_microphone(tmp_path: Path) -> None:
    config = load_config(None, {"state_dir": str(tmp_path), "hearing.echo_cancellation": "webrtc"})
    source = make_source(config)
    assert isinstance(source, FrontEndSource) and isinstance(source.inner, SoundDeviceMicrophone)
    assert source.front.options.echo_delay_ms == 0
    assert isinstance(source, DeviceListSource)  # the listener still gives way for device rescans


def test_a_canceller_that_will_not_load_leaves_half_duplex_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "livekit.rtc", None)
    source = make_source(_config(tmp_path, **{"hearing.echo_cancellation": "webrtc"}))  # type: ignore[arg-type]
    assert type(source) is SimulatedMicrophone
    assert "echo cancellation off (half duplex)" in caplog.text and "livekit" in caplog.text
    result = check_duplex("webrtc")
    assert result.status == "warn" and "half duplex" in result.detail and "livekit" in result.fix


def test_dtln_builds_the_front_end_with_the_neural_canceller_and_its_wider_gate(tmp_path: Path) -> None:
    from audio.hearing.dtln_aec import DtlnCanceller

    config = _config(tmp_path, **{"sim_room.enabled": True, "hearing.echo_cancellation": "dtln"})
    source = make_source(config)  # type: ignore[arg-type]
    assert isinstance(source, FrontEndSource) and isinstance(source.front._canceller, DtlnCanceller)
    assert source.gate is not None and source.gate.guard.margin_db == 18.0
    assert source.front.delay_samples == 480
    assert reference_taps(source) == [source.front.reference, source.inner.echo.on_rendered]  # type: ignore[attr-defined]
    wider = make_source(
        _config(tmp_path, **{"hearing.echo_cancellation": "dtln", "hearing.echo_guard_margin_db": 9.0})  # type: ignore[arg-type]
    )
    assert isinstance(wider, FrontEndSource) and wider.gate is not None and wider.gate.guard.margin_db == 9.0


def test_a_dtln_model_that_is_not_there_leaves_half_duplex_and_says_where_it_looked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-model"
    source = make_source(
        _config(tmp_path, **{"hearing.echo_cancellation": "dtln", "hearing.echo_model": str(missing)})  # type: ignore[arg-type]
    )
    assert type(source) is SimulatedMicrophone
    assert "echo cancellation off (half duplex)" in caplog.text and str(missing) in caplog.text
    result = check_duplex("dtln", str(missing))
    assert result.status == "warn" and "half duplex" in result.detail and "fetch_models" in result.fix
    fine = check_duplex("dtln")
    assert (
        fine.status == "ok" and "DTLN-aec (512 units)" in fine.detail and "ms per 10 ms frame" in fine.detail
    )
    small = check_duplex("dtln", "", 256)
    assert small.status == "ok" and "DTLN-aec (256 units)" in small.detail and not small.fix


def test_the_doctor_times_dtln_with_its_stages_running() -> None:
    """DTLN-aec rests while the far end is silent: the doctor's figure is of a frame during a reply
    (a faint far end), not of the microphone passed through."""
    from audio.hearing.dtln_aec import DtlnCanceller, default_model_dir
    from device.doctor.audio_checks import _frame_ms

    canceller = DtlnCanceller(default_model_dir())
    assert _frame_ms(canceller) > 0.0
    assert canceller.idle_shifts == 0 and canceller.inferred_shifts >= 110 * 160 // 128


def test_the_config_picks_dtlns_size(tmp_path: Path) -> None:
    """``hearing.echo_model_units`` reaches the canceller the front end runs (its stages' files)."""
    from audio.hearing.dtln_aec import DtlnCanceller

    config = _config(tmp_path, **{"hearing.echo_cancellation": "dtln", "hearing.echo_model_units": 256})
    source = make_source(config)  # type: ignore[arg-type]
    assert isinstance(source, FrontEndSource) and isinstance(source.front._canceller, DtlnCanceller)
    assert source.front._canceller.units == 256


def test_the_doctor_says_which_mode_runs() -> None:
    assert check_duplex("off").status == "note" and "half duplex" in check_duplex("off").detail
    webrtc = check_duplex("webrtc")
    assert webrtc.status == "ok" and "ms per 10 ms frame" in webrtc.detail
    assert "echo-cancel" in check_duplex("system").detail


def test_bad_duplex_config_is_one_clear_error(tmp_path: Path) -> None:
    from device.config import ConfigError

    with pytest.raises(ConfigError, match=r"hearing\.echo_cancellation"):
        _config(tmp_path, **{"hearing.echo_cancellation": "speex"})
    with pytest.raises(ConfigError, match=r"hearing\.echo_guard_margin_db"):
        _config(tmp_path, **{"hearing.echo_guard_margin_db": -3.0})
    with pytest.raises(ConfigError, match=r"hearing\.echo_model_units.*512, 256"):
        _config(tmp_path, **{"hearing.echo_model_units": 300})
    with pytest.raises(ConfigError, match=r"sim_room\.rt60_s"):
        _config(tmp_path, **{"sim_room.rt60_s": 5.0})


def test_the_runtime_gives_the_core_the_ducks_timings_from_the_config(tmp_path: Path) -> None:
    """The core's rules take the hold and the early duck's release from ``[hearing]`` (ms → s); an
    early duck that could never come before the start is one clear error."""
    from device.config import ConfigError
    from device.shell.runtime import Runtime

    config = _config(
        tmp_path,
        **{
            "hearing.duck_hold_ms": 700,
            "hearing.early_duck_speech_ms": 60,
            "hearing.early_duck_release_ms": 450,
        },
    )
    rules = Runtime(config).rules  # type: ignore[arg-type]
    assert (rules.duck_hold_s, rules.early_duck_release_s) == (0.7, 0.45)
    with pytest.raises(ConfigError, match=r"hearing\.early_duck_speech_ms"):
        _config(tmp_path, **{"hearing.early_duck_speech_ms": 150})
