"""Smart Turn v3.2 (Daily / pipecat, BSD-2-Clause): the probability that the user's turn is complete.

The model reads the utterance's last 8 s at 16 kHz (zero-padded at the front) as Whisper's 80-bin
log-mel (800 frames of 10 ms) computed from the waveform normalised to zero mean and unit variance,
and returns one sigmoid probability. The log-mel is faster-whisper's own ``FeatureExtractor`` (the
test ``tests/audio/test_hearing_turn_model.py`` checks it against pipecat's reference); inference is
onnxruntime on one intra-op thread, called from a worker thread (never the event loop).

``python -m audio.fetch_models`` installs the ONNX file from the pinned ``pipecat-ai`` wheel into
``default_model_path()``, with its int8 weights also prepared as uint8 (``audio.unsigned_int8``:
on x86 CPUs without VNNI onnxruntime's kernels for the signed weights saturate, and the probability
drifts); ``hearing.turn_model`` may point anywhere else (its unsigned form is prepared on first load).
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.engine import SAMPLE_RATE, ModelUnavailable
from audio.hearing.settings import HearingSettings
from audio.unsigned_int8 import Int8Weights, unsigned_model, wants_unsigned

_LOGGER = logging.getLogger(__name__)

MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
MODEL_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
"""SHA-256 of the file as shipped in ``pipecat-ai==1.14.0``."""
WINDOW_S = 8
"""Seconds of audio the model reads (the end of the utterance)."""
WINDOW_SAMPLES = WINDOW_S * SAMPLE_RATE
N_MELS = 80
N_FRAMES = 800
"""Mel frames of the 8 s window (10 ms hop)."""
_NORM_EPS = 1e-7
FETCH_COMMAND = "python -m audio.fetch_models"
PREPARED_KIND = "smart-turn"
"""Where the unsigned form is prepared: next to the fetched model, or under the cache directory."""


def default_model_path() -> Path:
    """Where ``python -m audio.fetch_models`` installs Smart Turn (inside the environment)."""
    return Path(sys.prefix) / "share" / "robot-face" / "smart-turn" / MODEL_FILE


def resolve_model_path(setting: str) -> Path:
    """``hearing.turn_model``: "" → the fetched default, else a file path."""
    return Path(setting).expanduser() if setting.strip() else default_model_path()


def model_window(audio: FloatArray) -> FloatArray:
    """The last ``WINDOW_S`` seconds of ``audio``, zero-padded at the front to exactly that length."""
    x = np.asarray(audio, dtype=np.float32)[-WINDOW_SAMPLES:]
    if len(x) < WINDOW_SAMPLES:
        x = np.concatenate([np.zeros(WINDOW_SAMPLES - len(x), np.float32), x])
    return x


class TurnFeatures:
    """The model's input: faster-whisper's Whisper log-mel of the normalised 8 s window."""

    def __init__(self) -> None:
        from faster_whisper.feature_extractor import FeatureExtractor

        self._fe = FeatureExtractor(feature_size=N_MELS, chunk_length=WINDOW_S)

    def __call__(self, audio: FloatArray) -> np.ndarray:
        """(80, 800) float32 log-mel of the last 8 s of 16 kHz ``audio``."""
        x = model_window(audio)
        x = ((x - x.mean()) / np.sqrt(x.var() + _NORM_EPS)).astype(np.float32)
        mel = np.asarray(self._fe(x, padding=0), dtype=np.float32)
        return mel[:, :N_FRAMES]


def _session(path: Path) -> Any:
    """An onnxruntime session on one thread, without the CPU memory arena or memory patterns
    (``audio.onnx_sessions.cpu_session``): with onnxruntime's defaults the arena kept ~33 MiB of
    activations after the first predictions, lean ~6 MiB, at the same speed within noise
    (40 predictions of 2–8 s windows, one thread)."""
    from audio.onnx_sessions import cpu_session

    return cpu_session(path, threads=1)


def check_model_file(path: Path, key: str = "hearing.turn_model") -> None:
    """Raise ``ModelUnavailable`` naming ``key`` and the fetch command unless ``path`` is a readable file.

    The default file is also checked against its pinned SHA-256 (a truncated download is caught
    here, not as a crash at the first pause); a file of the user's own is only loaded.
    """
    if not path.is_file():
        raise ModelUnavailable(
            f"{key}: end-of-turn model {path} not found: run `{FETCH_COMMAND}` (the bootstrap does), "
            f'point {key} at a Smart Turn v3 ONNX file, or set hearing.turn_detector = "silence"'
        )
    if path == default_model_path():
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != MODEL_SHA256:
            raise ModelUnavailable(
                f"{key}: {path} is corrupt (SHA-256 {got[:12]}…, expected {MODEL_SHA256[:12]}…): "
                f"run `{FETCH_COMMAND} --force`"
            )


@dataclass(frozen=True, slots=True)
class TurnVerdict:
    """One answer of the model."""

    probability: float
    """Probability that the turn is complete, 0..1."""
    cpu_ms: float
    """Thread CPU time of features + inference, in ms."""


class SmartTurnModel:
    """Smart Turn v3 on onnxruntime; ``load`` once (slow), then ``predict`` from a worker thread."""

    def __init__(self, path: Path, int8_weights: Int8Weights = "auto") -> None:
        self.path = path
        self.int8_weights: Int8Weights = int8_weights
        self.loaded_path: Path | None = None
        """The file onnxruntime runs: ``path`` or its unsigned form (``hearing.turn_int8_weights``)."""
        self._session: Any = None
        self._features: TurnFeatures | None = None
        self._lock = threading.Lock()

    def load(self, key: str = "hearing.turn_model") -> None:
        """Open the model; raises ``ModelUnavailable`` (naming ``key`` and the fetch command)."""
        check_model_file(self.path, key)
        run = self._runnable_path()
        try:
            session = _session(run)
            self._features = TurnFeatures()
            names = [i.name for i in session.get_inputs()]
            if names != ["input_features"]:
                raise ValueError(f"inputs {names}, expected ['input_features']")
        except Exception as err:
            raise ModelUnavailable(
                f"{key}: {self.path} is not a Smart Turn v3 ONNX model ({err}): run `{FETCH_COMMAND} --force`"
            ) from err
        self._session, self.loaded_path = session, run

    def _runnable_path(self) -> Path:
        """``path``, or its unsigned form when ``int8_weights`` wants it; the shipped file, with a
        warning saying why, when that form cannot be prepared (no writable cache directory)."""
        if not wants_unsigned(self.int8_weights):
            return self.path
        try:
            return unsigned_model(self.path, PREPARED_KIND)
        except RuntimeError as err:
            _LOGGER.warning(
                "hearing.turn_int8_weights: cannot prepare %s with unsigned weights (%s); running it "
                "as shipped, whose verdicts drift on x86 CPUs without VNNI",
                self.path,
                err,
            )
            return self.path

    def predict(self, audio: FloatArray) -> TurnVerdict:
        """Probability that the turn whose audio (16 kHz, ending now) is ``audio`` is complete."""
        if self._session is None or self._features is None:
            raise RuntimeError("SmartTurnModel.predict before load()")
        start = time.thread_time()
        feats = self._features(audio)[np.newaxis]
        with self._lock:
            out = self._session.run(None, {"input_features": feats})
        prob = float(np.asarray(out[0]).reshape(-1)[0])
        return TurnVerdict(probability=prob, cpu_ms=(time.thread_time() - start) * 1000.0)


class TurnModel(Protocol):
    """What the Listener needs from an end-of-turn model (``predict`` runs on a worker thread)."""

    def predict(self, audio: FloatArray) -> TurnVerdict:
        """Probability that the turn ending with ``audio`` (16 kHz) is complete."""
        ...


def make_turn_model(settings: HearingSettings) -> SmartTurnModel | None:
    """The model ``hearing.turn_detector`` needs (not loaded yet); None for ``silence``."""
    if settings.turn_detector != "smart_turn":
        return None
    weights = cast(Int8Weights, settings.turn_int8_weights)  # checked by HearingSettings
    return SmartTurnModel(resolve_model_path(settings.turn_model), weights)
