"""The pure-tone check: beeps and signalling tones get no transcript; real speech always passes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from audio.edges.wav import FloatArray
from audio.hearing.engine import CancelToken, Transcription
from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.tones import is_pure_tone, tone_share
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.stt_clip import load_clip, transcribe_clip
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_noise, hearing_silence

GATE = HearingSettings().tone_gate_share
RATE = 16000


def tone(freqs: list[float], seconds: float, level: float = 0.3) -> FloatArray:
    t = np.arange(int(seconds * RATE)) / RATE
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.01)  # 10 ms ramps like a real beep
    wave = sum(np.sin(2 * np.pi * f * t) for f in freqs) / len(freqs)
    return (level * fade * wave).astype(np.float32)


def test_synthetic_tones_and_noises() -> None:
    beep = tone([1000.0], 0.5)
    assert tone_share(beep) > 0.99 and is_pure_tone(beep, GATE)
    two_tone = np.concatenate([tone([440.0], 0.3), hearing_silence(0.1), tone([620.0], 0.3)])
    assert is_pure_tone(two_tone, GATE)
    beeps_in_quiet_room = np.concatenate([tone([2000.0], 0.2), hearing_silence(0.3)] * 4)
    beeps_in_quiet_room += hearing_noise(len(beeps_in_quiet_room) / RATE, -60.0)
    assert is_pure_tone(beeps_in_quiet_room, GATE)
    assert tone_share(hearing_noise(1.0, -30.0)) < 0.2
    assert not is_pure_tone(hearing_noise(1.0, -30.0), GATE)
    # two tones at once (DTMF "5": 770 + 1336 Hz) are left to the confidence score
    assert not is_pure_tone(tone([770.0, 1336.0], 0.5), GATE)
    assert tone_share(tone([1000.0], 0.03)) == 0.0  # shorter than one analysis frame
    assert tone_share(hearing_silence(1.0)) == 0.0
    assert not is_pure_tone(beep, 1.0)  # 1.0 turns the check off


def test_real_and_synthetic_speech_is_never_a_tone(
    hearing_say: Callable[[str], FloatArray], hearing_espeak: Callable[[str], FloatArray]
) -> None:
    clips = [*sorted((HEARING_SPEECH_DIR / "fsdd").glob("*.wav")), HEARING_SPEECH_DIR / "jfk" / "jfk.flac"]
    shares = [tone_share(load_clip(p)) for p in clips]
    assert len(shares) > 100 and max(shares) < GATE, max(shares)
    for text in ("Ooooh.", "Vee.", "Mmm, yes.", "Bye."):
        assert not is_pure_tone(hearing_say(text), GATE), text
        assert not is_pure_tone(hearing_espeak(text), GATE), text


@pytest.mark.parametrize("freqs", [[1000.0], [440.0], [2600.0]])
def test_a_beep_gets_no_transcript(
    freqs: list[float],
    hearing_transcriber: WhisperTranscriber,
    hearing_settings: HearingSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gated = SpeechGate(hearing_transcriber, hearing_settings.tone_gate_share)
    reached: list[int] = []
    decode = hearing_transcriber.transcribe

    def engine(
        samples: FloatArray, speech_ratio: float | None = None, cancel: CancelToken | None = None
    ) -> Transcription:
        reached.append(len(samples))
        return decode(samples, speech_ratio, cancel)

    monkeypatch.setattr(hearing_transcriber, "transcribe", engine)
    beep = np.concatenate([hearing_silence(0.3), tone(freqs, 0.8), hearing_silence(0.9)])
    direct = gated.transcribe(beep, speech_ratio=1.0)
    assert direct.text == "" and direct.confidence == 0.0 and direct.features is None
    assert direct.audio_ms == round(len(beep) * 1000 / RATE) and direct.language == "en"
    assert transcribe_clip(beep, gated, hearing_settings).text == ""
    assert reached == []  # the engine never saw the beep
    gated.transcribe(hearing_noise(1.0, -30.0))
    assert reached == [RATE]  # what may be speech goes through
