"""Doctor checks for the microphone and the speaker (PortAudio via sounddevice)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from audio.hearing.settings import ECHO_MODEL_UNITS
from device.doctor.result import CheckResult

if TYPE_CHECKING:
    from audio.hearing.echo_check import EchoMeasurement
    from audio.hearing.front_end import Canceller

_LOGGER = logging.getLogger(__name__)

_LEVEL_S = 0.5
"""Seconds recorded by the deep microphone level check."""
_HEARD_DB = 6.0
"""A test sound counts as heard this far over the room's level (dB)."""


def _sounddevice() -> Any:
    import sounddevice

    return sounddevice


def _find(devices: list[dict[str, Any]], want: str | None, kind: str, default_index: int) -> int | None:
    """Index of the ``kind`` ("input"/"output") device named ``want`` (index, exact or substring)."""
    key = f"max_{kind}_channels"
    usable = [i for i, d in enumerate(devices) if d.get(key, 0) > 0]
    if want is None:
        return default_index if default_index in usable else (usable[0] if usable else None)
    if want.strip().isdigit():
        return int(want) if int(want) in usable else None
    exact = [i for i in usable if devices[i]["name"] == want]
    if exact:
        return exact[0]
    partial = [i for i in usable if want.lower() in devices[i]["name"].lower()]
    return partial[0] if partial else None


def _listing(devices: list[dict[str, Any]], kind: str) -> str:
    key = f"max_{kind}_channels"
    names = [f"{i}: {d['name']}" for i, d in enumerate(devices) if d.get(key, 0) > 0]
    return "; ".join(names) if names else "none"


def check_audio_device(kind: str, want: str | None, setting: str) -> tuple[CheckResult, int | None]:
    """Is the ``kind`` ("input" microphone / "output" speaker) device there? Returns its index too."""
    label = "microphone" if kind == "input" else "speaker"
    fix_hw = (
        "plug in a USB microphone (check with `arecord -l`)"
        if kind == "input"
        else "connect a speaker / USB audio device (check with `aplay -l`)"
    )
    try:
        sd = _sounddevice()
        devices = [dict(d) for d in sd.query_devices()]
        defaults = sd.default.device
        default_index = int(defaults[0] if kind == "input" else defaults[1])
    except Exception as exc:
        return CheckResult(
            label,
            "fail",
            f"PortAudio cannot list audio devices: {type(exc).__name__}: {exc}",
            "install libportaudio2 (sudo apt install libportaudio2) and check the user is in group 'audio'",
        ), None
    index = _find(devices, want, kind, default_index)
    if index is None:
        if want is None:
            detail = f"no {kind} device found (PortAudio sees {len(devices)} device(s) in total)"
            fix = f"{fix_hw}; then set {setting} if it is not the default"
        else:
            detail = f"no {kind} device matches {want!r}; {kind} devices: {_listing(devices, kind)}"
            fix = f"set {setting} to one of the listed names (or a unique part of one), or {fix_hw}"
        return CheckResult(label, "fail", detail, fix), None
    device = devices[index]
    rate = int(device.get("default_samplerate", 0))
    return CheckResult(label, "ok", f"{device['name']} (device {index}, {rate} Hz)"), index


def _dbfs(samples: Any) -> float:
    import numpy as np

    rms = float(np.sqrt(np.mean(np.square(samples.astype("float64"))))) if samples.size else 0.0
    return 20 * math.log10(rms) if rms > 0 else -math.inf


def check_levels(input_index: int, output_index: int | None) -> CheckResult:
    """Record briefly (and, with a speaker, play a tone) to see that the microphone hears anything."""
    import numpy as np

    sd = _sounddevice()
    try:
        rate = int(sd.query_devices(input_index)["default_samplerate"])
        quiet = sd.rec(int(_LEVEL_S * rate), samplerate=rate, channels=1, device=input_index, dtype="float32")
        sd.wait()
        quiet_db = _dbfs(quiet)
        if quiet_db == -math.inf:
            return CheckResult(
                "microphone level",
                "warn",
                "the microphone delivered pure digital silence",
                "unmute / raise the capture level in `alsamixer` (F4 for capture), or pick another input",
            )
        if output_index is None:
            return CheckResult("microphone level", "ok", f"room level {quiet_db:.0f} dBFS")
        t = np.arange(int(_LEVEL_S * rate)) / rate
        tone = (0.3 * np.sin(2 * np.pi * 1000.0 * t)).astype("float32").reshape(-1, 1)
        heard = sd.playrec(tone, samplerate=rate, channels=1, device=(input_index, output_index))
        sd.wait()
        tone_db = _dbfs(heard)
    except Exception as exc:
        return CheckResult(
            "microphone level",
            "warn",
            f"could not record: {type(exc).__name__}: {exc}",
            "check the device is not in use by another program (`fuser -v /dev/snd/*`)",
        )
    if tone_db - quiet_db >= _HEARD_DB:
        detail = f"room {quiet_db:.0f} dBFS, test tone heard at {tone_db:.0f} dBFS"
        return CheckResult("microphone level", "ok", detail)
    return CheckResult(
        "microphone level",
        "warn",
        f"room {quiet_db:.0f} dBFS; the 1 kHz test tone was not heard ({tone_db:.0f} dBFS)",
        "turn the speaker volume up (`alsamixer`) or check the speaker and microphone are the ones in use",
    )


@dataclass(frozen=True)
class EchoTest:
    """What the deep echo check needs of the settings (``hearing.echo_cancellation = "webrtc"`` or
    ``"dtln"``)."""

    volume: float
    """``speaking.volume``: the test plays as loud as a reply (0..1)."""
    weak_db: float
    """``hearing.weak_canceller_db``: less removal than this is a weak canceller (dB)."""
    duck_db: float
    """``hearing.duck_db``: how deep a barge-in ducks a reply over a strong canceller (dB)."""
    duck_weak_db: float
    """``hearing.duck_weak_db``: the same over a weak one (dB)."""
    canceller: str = "webrtc"
    """``hearing.echo_cancellation``: the canceller measured."""
    echo_model: str = ""
    """``hearing.echo_model``: DTLN-aec's directory ("" = the fetched one)."""
    echo_model_units: int = 512
    """``hearing.echo_model_units``: which size of DTLN-aec."""


_ECHO_NAME = "echo on this hardware"
_ECHO_FIX_LEVELS = (
    "turn the speaker volume up (`alsamixer`) or check the speaker and microphone are the ones in use"
)


def check_echo(input_index: int, output_index: int, test: EchoTest) -> CheckResult:
    """``--deep`` with an in-process canceller: play a speech-like test sound while recording, and say
    how late the microphone hears the speaker and how much of that echo the canceller removes."""
    from audio.hearing.echo_check import TEST_S, measure_echo, probe_signal
    from audio.hearing.front_end import FrontEndUnavailable

    canceller: Canceller | None = None  # WebRTC's: built for the lag measured
    if test.canceller == "dtln":
        from audio.hearing.dtln_aec import DtlnCanceller, resolve_model_dir

        try:
            canceller = DtlnCanceller(resolve_model_dir(test.echo_model), units=test.echo_model_units)
        except FrontEndUnavailable as err:
            return CheckResult(_ECHO_NAME, "note", f"not measured: {err}")

    sd = _sounddevice()
    try:
        rate = int(sd.query_devices(input_index)["default_samplerate"])
        far = probe_signal(rate) * test.volume
        heard = sd.playrec(
            far.reshape(-1, 1), samplerate=rate, channels=1, device=(input_index, output_index)
        )
        sd.wait()
        measured = measure_echo(far, rate, heard.reshape(-1), rate, canceller)
    except FrontEndUnavailable as err:
        return CheckResult(_ECHO_NAME, "note", f"not measured: {err}")
    except Exception as exc:
        return CheckResult(
            _ECHO_NAME,
            "warn",
            f"could not play and record the {TEST_S:.0f} s test sound: {type(exc).__name__}: {exc}",
            "check the device is not in use by another program (`fuser -v /dev/snd/*`)",
        )
    return echo_verdict(measured, test)


def echo_verdict(measured: EchoMeasurement, test: EchoTest) -> CheckResult:
    """The check's result for one measurement (pure)."""
    from audio.hearing.echo_check import MATCH_MIN, MAX_LAG_MS
    from audio.hearing.front_end import HEALTH_MIN_DB  # under it the runtime falls back to half duplex

    if measured.heard_db < _HEARD_DB:
        return CheckResult(
            _ECHO_NAME,
            "warn",
            f"the microphone did not hear the test sound ({measured.heard_db:.0f} dB over the room): "
            "the echo was not measured",
            _ECHO_FIX_LEVELS,
        )
    if measured.correlation < MATCH_MIN:
        return CheckResult(
            _ECHO_NAME,
            "warn",
            f"what the microphone hears does not match what the robot plays within {MAX_LAG_MS} ms "
            f"(correlation {measured.correlation:.2f}): a speaker with more delay (Bluetooth), a "
            "speaker and a microphone on clocks far apart, or another sound; the canceller cannot "
            "follow it and barge-ins will not be heard reliably",
            "use a wired speaker, ideally on the same USB sound device as the microphone, or "
            'hearing.echo_cancellation = "off" (half duplex)',
        )
    removal = measured.removal_db
    if removal is None:
        return CheckResult(
            _ECHO_NAME, "warn", "too little of the test sound was heard to judge", _ECHO_FIX_LEVELS
        )
    removes = (
        f"WebRTC's canceller removes {removal:.0f} dB of the speaker's echo, heard "
        f"{measured.lag_ms:.0f} ms after it is played"
    )
    if removal < HEALTH_MIN_DB:
        return CheckResult(
            _ECHO_NAME,
            "warn",
            f"{removes}: it is not cancelling, so the device would fall back to half duplex",
            'let the sound server cancel (hearing.echo_cancellation = "system", docs/deploy.md), or '
            '"off" (half duplex)',
        )
    if removal < test.weak_db:
        return CheckResult(
            _ECHO_NAME,
            "warn",
            f"{removes}: weak (under hearing.weak_canceller_db, {test.weak_db:.0f} dB): barge-ins duck the "
            f"reply by {test.duck_weak_db:.0f} dB and fewer of them are heard",
            "lower the speaker volume or move the microphone away from the speaker, or let the sound "
            'server cancel (hearing.echo_cancellation = "system", docs/deploy.md)',
        )
    return CheckResult(
        _ECHO_NAME, "ok", f"{removes}: strong, barge-ins duck the reply by {test.duck_db:.0f} dB"
    )


def check_duplex(mode: str, echo_model: str = "", units: int = 512) -> CheckResult:
    """Which echo handling runs (``hearing.echo_cancellation``; ``hearing.echo_model`` and
    ``hearing.echo_model_units`` for "dtln") and why."""
    name = "echo cancellation"
    if mode == "off":
        return CheckResult(
            name, "note", "off: half duplex (the microphone is not heard while the robot speaks)"
        )
    if mode == "system":
        return CheckResult(
            name,
            "note",
            "system: the sound server cancels; hearing.input_device / speaking.output_device must be "
            "its echo-cancel source and sink (docs/deploy.md); the device stays half duplex",
        )
    if mode == "dtln":
        return _check_dtln(name, echo_model, units)
    from audio.hearing.front_end import EchoCanceller, FrontEndOptions, FrontEndUnavailable

    try:
        ms = _frame_ms(EchoCanceller(FrontEndOptions()))
    except (FrontEndUnavailable, RuntimeError) as err:
        return CheckResult(
            name,
            "warn",
            f"webrtc configured but unavailable, runs half duplex: {err}",
            "install the canceller into the venv: pip install 'livekit>=1.2,<2'",
        )
    return CheckResult(
        name,
        "ok",
        f"webrtc: WebRTC's canceller cleans the microphone ({ms:.2f} ms per 10 ms frame); "
        "full duplex once it has heard 5 s of the speaker (status.duplex says which runs)",
    )


def _check_dtln(name: str, echo_model: str, units: int) -> CheckResult:
    """``check_duplex`` for DTLN-aec: its runtime and model (of ``units``) load, and what a frame
    costs here."""
    from audio.hearing.dtln_aec import DtlnCanceller, resolve_model_dir
    from audio.hearing.front_end import FrontEndUnavailable

    directory = resolve_model_dir(echo_model)
    try:
        ms = _frame_ms(DtlnCanceller(directory, units=units))
    except FrontEndUnavailable as err:
        return CheckResult(
            name,
            "warn",
            f"dtln configured but unavailable, runs half duplex: {err}",
            "install the runtime and the model: make bootstrap (python -m audio.fetch_models), or "
            "set hearing.echo_model to a directory holding the two DTLN-aec stages",
        )
    heavy = ms > FRAME_BUDGET_MS and units != min(ECHO_MODEL_UNITS)
    return CheckResult(
        name,
        "ok",
        f"dtln: DTLN-aec ({units} units) cleans the microphone ({ms:.2f} ms per 10 ms frame, "
        f"{directory}); full duplex from the first reply (status.duplex says which runs)",
        f"over {FRAME_BUDGET_MS:g} ms a frame (a tenth of a core) on this CPU: hearing.echo_model_units = "
        f"{min(ECHO_MODEL_UNITS)} costs a quarter to a third of it"
        if heavy
        else "",
    )


FRAME_BUDGET_MS = 1.0
"""What a 10 ms frame through the canceller may cost (ms): a tenth of a core (issue 25's goal)."""


def _frame_ms(canceller: Canceller) -> float:
    """What one 10 ms frame through ``canceller`` costs here (ms, wall time over 100 frames after
    10 unmeasured), the far end faint noise at -70 dBFS: playing, so a canceller that rests while
    nothing plays (DTLN-aec's stages) runs as it does during a reply."""
    import time

    import numpy as np

    from audio.hearing.front_end import FRAME

    rng = np.random.default_rng(0)
    frames = (rng.standard_normal((110, 2, FRAME)) * 10 ** (-70 / 20)).astype(np.float32)
    for mic, far in frames[:10]:
        canceller.process(mic, far)
    start = time.perf_counter()
    for mic, far in frames[10:]:
        canceller.process(mic, far)
    return (time.perf_counter() - start) * 10.0
