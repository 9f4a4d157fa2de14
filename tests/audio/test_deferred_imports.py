"""PyAV, imported by faster-whisper for reading files, loads only when a file is read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from audio.edges.wav import write_wav

_CHILD = """
import inspect, json, sys
import audio.hearing
from audio.hearing.deferred_imports import is_loaded
from faster_whisper import WhisperModel, decode_audio
import device.shell.runtime  # every module the daemon imports (pydantic walks sys.modules)
inspect.getmodule(WhisperModel)
before = is_loaded("av")
samples = decode_audio(sys.argv[1], sampling_rate=16000)
import av
print(json.dumps({"before": before, "after": is_loaded("av"), "samples": len(samples),
                  "real": type(sys.modules["av"]).__name__, "open": callable(av.open)}))
"""


def test_pyav_is_deferred_until_a_file_is_decoded(tmp_path: Path) -> None:
    clip = tmp_path / "second.wav"
    write_wav(clip, np.zeros(16000, dtype=np.float32), 16000)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(clip)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] is False  # imported by faster-whisper, walked by inspect: not loaded
    assert out["after"] is True and out["real"] == "module" and out["open"]
    assert out["samples"] == 16000
