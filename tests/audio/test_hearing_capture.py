"""Capture sources: missing device errors, the file source and the simulated microphone."""

from __future__ import annotations

import time

import numpy as np
import pytest

from audio.edges.capture import FileSource, MicrophoneUnavailable, SimulatedMicrophone, SoundDeviceMicrophone
from audio.edges.wav import FloatArray
from audio.hearing.settings import HearingSettings


def test_missing_device_names_it_and_lists_inputs() -> None:
    mic = SoundDeviceMicrophone(HearingSettings(input_device="No Such Mic 9000"))
    with pytest.raises(MicrophoneUnavailable) as info:
        mic.open(lambda block: None, lambda detail: None)
    message = str(info.value)
    assert "No Such Mic 9000" in message
    assert "available input devices" in message
    mic.close()  # closing a never-opened microphone is fine


def test_file_source_delivers_clip_then_tail() -> None:
    clip = np.linspace(-0.5, 0.5, 16000, dtype=np.float32)
    src = FileSource(clip, tail_ms=300)
    blocks: list[FloatArray] = []
    assert src.open(blocks.append, lambda d: None) == 16000
    assert src.finished.wait(5.0)
    src.close()
    audio = np.concatenate(blocks)
    assert np.array_equal(audio[:16000], clip)
    assert len(audio) >= 16000 + 4800 and not audio[16000:].any()


def test_simulated_microphone_is_real_time_and_drops_audio_while_closed() -> None:
    mic = SimulatedMicrophone()
    assert not mic.feed(np.ones(100, np.float32))  # closed: dropped
    blocks: list[FloatArray] = []
    mic.open(blocks.append, lambda d: None)
    mic.feed(np.full(4800, 0.25, np.float32))
    time.sleep(0.6)
    mic.close()
    audio = np.concatenate(blocks)
    assert 0.3 * 16000 <= len(audio) <= 0.9 * 16000  # about real time
    assert np.count_nonzero(audio == 0.25) == 4800  # injected audio, once, then silence
    assert mic.pending_samples == 0
