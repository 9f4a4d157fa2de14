"""Audio sinks: the speaker (sounddevice), WAV files and null, built by ``make_sink``.

All of them run the callback path of ``audio.edges.stream_sink.StreamSink`` (the base, the software
clock and the reference tap live there; they are re-exported here). ``WavSink`` writes every reply
to ``<wav_dir>/<say-id>.wav`` (from its first to its last sample, silence inside the reply included;
a stopped reply is cut where it stopped).
"""

from __future__ import annotations

import re
import struct
import threading
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from audio.edges.stream_sink import (
    AudioSink,
    ClockedOutputStream,
    OutputDeviceUnavailable,
    ProblemFn,
    RenderFn,
    StreamSink,
    StreamTime,
)
from audio.edges.wav import FloatArray, to_pcm16
from audio.speaking.playback import PlaybackMark
from audio.speaking.settings import SINKS, SpeakingSettings

__all__ = [
    "AudioSink",
    "ClockedOutputStream",
    "NullSink",
    "OutputDeviceUnavailable",
    "ProblemFn",
    "RenderFn",
    "StreamSink",
    "StreamTime",
    "WavSink",
    "make_sink",
]


class NullSink(StreamSink):
    """Discards audio, paced in real time (simulation)."""

    def __init__(self, rate: int = 22050, block_ms: int = 10) -> None:
        super().__init__(rate, block_ms)


class WavSink(StreamSink):
    """Writes each reply to ``<directory>/<say-id>.wav`` (16-bit mono), paced in real time.

    With a ``gain_probe`` (the playback queue's ducking gain), ``<say-id>.gain`` beside it holds the
    gain each written span was rendered at: (frames uint32, linear gain float32) records, little
    endian, in the WAV's order, so a test can tell the ducking from the reply's own loudness."""

    def __init__(self, directory: str | Path, rate: int = 22050, block_ms: int = 10) -> None:
        super().__init__(rate, block_ms)
        self.directory = Path(directory)
        self._writer: wave.Wave_write | None = None
        self._gains: BinaryIO | None = None
        self._lock = threading.Lock()
        self.gain_probe: Callable[[], float] | None = None
        """The gain the latest block was rendered at, read after each block (None: no gain file)."""

    @property
    def name(self) -> str:
        """Sink name with its directory."""
        return f"WavSink({self.directory})"

    def path_for(self, say: str) -> Path:
        """The file reply ``say`` is written to."""
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", say)[:120] or "reply"
        return self.directory / f"{safe}.wav"

    def open(self, render: RenderFn, report: ProblemFn) -> None:
        """Create the directory and start the clock."""
        self.directory.mkdir(parents=True, exist_ok=True)
        super().open(render, report)

    def close(self) -> None:
        """Stop the clock and close an unfinished file."""
        super().close()
        with self._lock:
            self._close_writer()

    def _wants_all_blocks(self) -> bool:
        return self._writer is not None

    def _after_block(self, block: FloatArray, marks: list[PlaybackMark]) -> None:
        with self._lock:
            pos = 0
            for mark in marks:
                if mark.kind == "reply_started":
                    self._close_writer()
                    self._writer = wave.open(str(self.path_for(mark.say)), "wb")  # noqa: SIM115 - spans blocks
                    self._writer.setnchannels(1)
                    self._writer.setsampwidth(2)
                    self._writer.setframerate(self._rate)
                    if self.gain_probe is not None:
                        self._gains = self.path_for(mark.say).with_suffix(".gain").open("wb")
                    pos = mark.frame
                elif mark.kind == "reply_finished" and self._writer is not None:
                    self._write(block[pos : mark.frame])
                    self._close_writer()
                    pos = mark.frame
            if self._writer is not None:
                self._write(block[pos:])

    def _write(self, frames: FloatArray) -> None:
        assert self._writer is not None
        self._writer.writeframes(to_pcm16(frames))
        if self._gains is not None and self.gain_probe is not None and len(frames):
            self._gains.write(struct.pack("<If", len(frames), float(self.gain_probe())))

    def _close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._gains is not None:
            self._gains.close()
            self._gains = None


def make_sink(settings: SpeakingSettings, backend: Any = None, *, wait_for_device: bool = False) -> AudioSink:
    """The sink named by ``settings.sink``: "sounddevice", "wav" or "null" (no fallback).
    ``wait_for_device``: a missing output device is reported and waited for, not raised (daemon)."""
    if settings.sink == "sounddevice":
        from audio.edges.sounddevice_sink import SoundDeviceSink

        return SoundDeviceSink(
            settings.output_device,
            block_ms=settings.block_ms,
            latency=settings.latency,
            reopen_interval_s=settings.reopen_interval_s,
            backend=backend,
            wait_for_device=wait_for_device,
        )
    if settings.sink == "wav":
        if not settings.wav_dir:
            raise ValueError("speaking.sink = 'wav' needs speaking.wav_dir")
        return WavSink(settings.wav_dir, rate=settings.sim_rate, block_ms=settings.block_ms)
    if settings.sink == "null":
        return NullSink(rate=settings.sim_rate, block_ms=settings.block_ms)
    raise ValueError(f"unknown speaking.sink {settings.sink!r}: use one of {', '.join(SINKS)}")


def __getattr__(name: str) -> object:
    """``from audio.edges.sinks import SoundDeviceSink`` without importing sounddevice eagerly."""
    if name == "SoundDeviceSink":
        from audio.edges.sounddevice_sink import SoundDeviceSink

        return SoundDeviceSink
    raise AttributeError(name)
