"""The footprint benchmark's child: load the runtime's parts one at a time, print what each adds.

``python -m device.bench.parts lean|baseline`` prints one JSON line per step (``step``, ``rss``,
``uss`` in MiB, cumulative) on stdout. ``lean`` loads every part the way the daemon does now;
``baseline`` the way it did before the footprint work (onnxruntime's defaults with its memory arena,
the ``onnx`` package imported to patch Piper's graph in memory, glibc's malloc defaults). Run in a
fresh process per mode, so one mode's heap never flatters the other.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from device.memory import TRIM_INTERVAL_S, process_memory, tune_malloc

USE_TEXTS = (
    "Hello there, how are you doing today?",
    "Let's do the memory game.",
    "Apple, river, chair.",
    "No thanks. Good night.",
    "I had a lovely lunch with my daughter and we talked about the weather for a long time.",
    "Yes, please.",
)
"""Sentences spoken (Piper) and heard (Whisper + Silero + Moonshine) in the "in use" step."""


def _step(name: str) -> None:
    m = process_memory()
    print(json.dumps({"step": name, "rss": m.rss, "uss": m.uss}), flush=True)


def _baseline_piper(path: Path, threads: int) -> tuple[object, bool]:
    """How ``audio.speaking.tts`` loaded a voice before: ``onnx`` in process, patched in memory,
    the session built from the bytes with onnxruntime's defaults."""
    import onnx
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig
    from piper.patch_voice_with_alignment import add_alignment_output

    with open(f"{path}.json", encoding="utf-8") as fh:
        config = PiperConfig.from_dict(json.load(fh))
    proto = onnx.load(str(path))
    add_alignment_output(proto)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return PiperVoice(session=session, config=config), len(session.get_outputs()) > 1


def run(mode: str) -> None:
    """Load the parts in the daemon's order, printing the figures after each."""
    if mode == "lean":
        tune_malloc()
    _step("python, numpy")
    import audio.onnx_sessions
    import audio.speaking.tts as tts
    from device.config import Config

    if mode == "baseline":
        import onnx  # noqa: F401  (the runtime imported it to patch Piper)

        from audio.hearing.deferred_imports import load

        load("av")  # faster-whisper's import brought PyAV in

        audio.onnx_sessions.cpu_session = functools.partial(audio.onnx_sessions.cpu_session, lean=False)
        tts._load_piper = _baseline_piper
    import device.shell.runtime  # noqa: F401  (every module the daemon imports)

    _step("runtime imports")
    config = Config()
    whisper = _load_whisper(config)
    _step("Whisper (CTranslate2)")
    from audio.hearing.voice_prob import voice_probability

    voice_probability(np.zeros(512, dtype=np.float32))
    _step("Silero VAD (onnxruntime)")
    from audio.hearing.cross_check import MoonshineRecogniser, resolve_model_dir

    cross_dir = resolve_model_dir(config.hearing.stt_cross_check_model)
    if cross_dir is not None:
        whisper._cross = MoonshineRecogniser(cross_dir)  # eager: its memory in this step
        whisper._cross.load()
    _step("Moonshine cross-check (onnxruntime)")
    voice = tts.TtsVoice.load("", threads=config.speaking.tts_threads)
    _step("Piper voice (onnxruntime)")
    turn = _load_turn_model(config)
    _step("Smart Turn (onnxruntime)")
    face = _load_face(config)
    _step("face (controller, renderer)")
    link = _load_link(config)
    _step("link (outbox, MQTT client)")
    _use(whisper, voice, turn)
    if mode == "lean":
        time.sleep(TRIM_INTERVAL_S + 0.5)  # as the daemon: its trimming thread has run once since
    _step(f"in use ({len(USE_TEXTS)} sentences heard and spoken)")
    del face, link


def _load_whisper(config: Any) -> Any:
    from dataclasses import replace

    from faster_whisper import WhisperModel

    from audio.hearing.whisper_stt import WhisperTranscriber, packaged_model_path

    transcriber = WhisperTranscriber(replace(config.hearing, stt_cross_check_model="off"))

    s = config.hearing
    transcriber._model = WhisperModel(
        s.stt_model or packaged_model_path(),
        device="cpu",
        compute_type=s.stt_compute_type,
        cpu_threads=s.stt_threads,
        num_workers=2,
    )
    transcriber._make_tokenizer()
    return transcriber


def _load_face(config: Any) -> Any:
    from dataclasses import replace

    from device.shell.parts import make_face

    face_config = replace(config, face=replace(config.face, browser_port=0))
    noop: Callable[[str], None] = lambda _text: None  # noqa: E731
    return make_face(face_config, noop, noop)


def _load_link(config: Any) -> Any:
    from agent_link.link.mqtt_link import MqttLink
    from agent_link.link.outbox import Outbox

    folder = Path(tempfile.mkdtemp(prefix="robot-face-footprint-"))
    outbox = Outbox(folder / "outbox.sqlite3", "footprint", 1)

    def ignore(*_args: Any) -> None:
        return None

    return MqttLink(config.mqtt, "footprint", 1, outbox, ignore, ignore, simulate=True)


def _load_turn_model(config: Any) -> Any:
    from dataclasses import replace

    from audio.hearing.turn_model import make_turn_model

    model = make_turn_model(replace(config.hearing, turn_detector="smart_turn"))
    assert model is not None
    model.load()
    return model


def _use(whisper: Any, voice: Any, turn: Any) -> None:
    from audio.edges.wav import resample

    for text in USE_TEXTS:
        spoken = voice.synthesize(text)
        heard = resample(spoken.audio, spoken.rate, 16000)
        turn.predict(heard)  # at the pause, as the listener asks it
        whisper.transcribe(np.concatenate([np.zeros(4800, np.float32), heard, np.zeros(3200, np.float32)]))


if __name__ == "__main__":
    t0 = time.monotonic()
    run(sys.argv[1] if len(sys.argv) > 1 else "lean")
    print(json.dumps({"seconds": time.monotonic() - t0}), flush=True)
