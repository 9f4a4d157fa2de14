"""WAV helpers shared by capture, STT tools, TTS sinks and tests: read any PCM WAV as float32 mono."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


class WavError(ValueError):
    """A WAV payload that cannot be used (not RIFF/WAVE, not 16-bit PCM, empty...)."""


def decode_wav(data: bytes) -> tuple[FloatArray, int]:
    """Decode a PCM WAV (8/16/32-bit int, mono or multi-channel) to float32 mono in [-1, 1] and its rate."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wf:
            channels = wf.getnchannels()
            width = wf.getsampwidth()
            rate = wf.getframerate()
            frames = wf.readframes(wf.getnframes())
    except (wave.Error, EOFError) as err:
        raise WavError(f"not a PCM WAV file: {err}") from err
    if rate <= 0 or channels <= 0:
        raise WavError(f"bad WAV header: rate={rate} channels={channels}")
    if width == 2:
        pcm = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 1:
        pcm = (np.frombuffer(frames, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 4:
        pcm = np.frombuffer(frames, dtype="<i4").astype(np.float32) / 2147483648.0
    else:
        raise WavError(f"unsupported sample width {width * 8} bit (use 16-bit PCM)")
    usable = len(pcm) - len(pcm) % channels
    mono = pcm[:usable].reshape(-1, channels).mean(axis=1).astype(np.float32)
    return mono, rate


def read_wav(path: str | Path) -> tuple[FloatArray, int]:
    """Read a WAV file as float32 mono and its sample rate."""
    return decode_wav(Path(path).read_bytes())


def resample(samples: FloatArray, rate_in: int, rate_out: int) -> FloatArray:
    """Resample float32 mono audio with soxr (high quality); a no-op when the rates match."""
    if rate_in == rate_out or len(samples) == 0:
        return samples.astype(np.float32, copy=False)
    import soxr

    return np.asarray(soxr.resample(samples, rate_in, rate_out), dtype=np.float32)


def load_audio(path_or_bytes: str | Path | bytes, rate: int = 16000) -> FloatArray:
    """Load a WAV (path or bytes) as float32 mono at ``rate`` Hz."""
    if isinstance(path_or_bytes, bytes):
        samples, rate_in = decode_wav(path_or_bytes)
    else:
        samples, rate_in = read_wav(path_or_bytes)
    return resample(samples, rate_in, rate)


def to_pcm16(samples: FloatArray) -> bytes:
    """Float32 [-1, 1] to little-endian 16-bit PCM bytes (clipped)."""
    clipped = np.clip(samples, -1.0, 1.0)
    return (clipped * 32767.0).astype("<i2").tobytes()


def encode_wav(samples: FloatArray, rate: int) -> bytes:
    """Encode float32 mono audio as a 16-bit PCM WAV file in memory."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wf:
        wf.setnchannels(1)
        wf.setsampwidth(2)
        wf.setframerate(rate)
        wf.writeframes(to_pcm16(samples))
    return buf.getvalue()


def write_wav(path: str | Path, samples: FloatArray, rate: int) -> None:
    """Write float32 mono audio as a 16-bit PCM WAV file."""
    Path(path).write_bytes(encode_wav(samples, rate))
