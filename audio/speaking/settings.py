"""Settings of the speaking part: voice, sink, volume, rate, streaming and playback tuning."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from audio.settings_checks import Check, raise_first_failed

SINKS: tuple[str, ...] = ("sounddevice", "wav", "null")
"""Valid values of ``sink`` (the backends ``audio.edges.sinks.make_sink`` builds)."""

LATENCY_NAMES: tuple[str, ...] = ("low", "high")
"""PortAudio's named latencies; ``latency`` is one of them or a number of seconds."""


@dataclass(frozen=True)
class SpeakingSettings:
    """Everything the Speaker and its sinks read; one frozen dataclass (TOML section ``[speaking]``)."""

    sink: str = "sounddevice"
    """Output backend: "sounddevice" (speaker), "wav" (one file per reply in ``wav_dir``) or "null"
    (discard, real-time paced). Default "sounddevice"."""

    output_device: str | None = None
    """Output device name or case-insensitive substring (see ``robot-face say --list-devices``);
    None = the system default output. Default None."""

    wav_dir: str | None = None
    """Directory the "wav" sink writes ``<say-id>.wav`` into; required for sink "wav". Default None."""

    sim_rate: int = 22050
    """Sample rate of the "wav" and "null" sinks, in Hz (default 22050, the packaged voice's rate)."""

    voice: str = ""
    """Default Piper voice: path to a ``.onnx`` model (its ``.onnx.json`` next to it); "" = the packaged
    en_US-joe-medium voice. Default ""."""

    voices: dict[str, str] = field(default_factory=dict)
    """Voice per language code, e.g. {"de": "/voices/de_DE-thorsten-medium.onnx"}; a language not listed
    (or mapped to "") uses ``voice``. Default {}."""

    preload_voices: bool = False
    """Load every voice in ``voices`` at start (language switches are then instant) instead of on the
    first switch to that language. Default False."""

    volume: float = 0.8
    """Output volume, 0.0 (mute) to 1.0 (full scale), applied at playback. Default 0.8."""

    length_scale: float = 1.0
    """Speaking rate as Piper's phoneme length scale: < 1 faster, > 1 slower. Default 1.0."""

    fade_ms: float = 4.0
    """Fade in/out applied at the edges of every synthesised piece, in ms (no clicks). Default 4.0."""

    stop_fade_ms: float = 8.0
    """Fade-out when ``stop`` cuts speech off mid-sample, in ms. Default 8.0."""

    block_ms: int = 10
    """Audio callback block length in ms (stop reacts within one block + fade). Default 10."""

    latency: str = "low"
    """PortAudio output latency for the sounddevice sink: "low", "high" or seconds, e.g. "0.05".
    Default "low"."""

    tts_threads: int = 1
    """onnxruntime intra-op threads for Piper synthesis. Default 1 (on a busy 2-core machine 2 threads
    were slower: see ``robot-face bench tts --threads``)."""

    first_clause_min_words: int = 1
    """The first piece of a reply may end at a comma/semicolon/colon once it has this many words, so
    audio starts sooner. 0 disables clause splitting of the first piece. Default 1."""

    max_piece_chars: int = 160
    """A sentence longer than this (characters) is split at a clause boundary (or a space), so one
    long sentence never delays the next piece. Default 160."""

    reopen_interval_s: float = 1.0
    """Seconds between attempts to reopen an output device that disappeared. Default 1.0."""

    def validate(self) -> None:
        """Raise ValueError naming the key ("speaking.volume: ...") for a value that cannot work;
        ``device.config`` calls it when it loads the configuration."""
        checks: tuple[Check, ...] = (
            ("sink", self.sink in SINKS, f"must be one of {', '.join(SINKS)}"),
            ("wav_dir", self.sink != "wav" or bool(self.wav_dir), 'is required when sink = "wav"'),
            ("sim_rate", self.sim_rate > 0, "must be > 0"),
            ("volume", 0.0 <= self.volume <= 1.0, "must be between 0.0 and 1.0"),
            ("length_scale", self.length_scale > 0, "must be > 0"),
            ("fade_ms", self.fade_ms >= 0, "must be >= 0"),
            ("stop_fade_ms", self.stop_fade_ms >= 0, "must be >= 0"),
            ("block_ms", self.block_ms > 0, "must be > 0"),
            (
                "latency",
                _is_latency(self.latency),
                f"must be {' or '.join(map(repr, LATENCY_NAMES))} or a number of seconds >= 0",
            ),
            ("tts_threads", self.tts_threads >= 1, "must be >= 1"),
            ("first_clause_min_words", self.first_clause_min_words >= 0, "must be >= 0 (0 = off)"),
            ("max_piece_chars", self.max_piece_chars > 0, "must be > 0"),
            ("reopen_interval_s", self.reopen_interval_s > 0, "must be > 0"),
        )
        raise_first_failed("speaking", self, checks)


def _is_latency(value: str) -> bool:
    if value in LATENCY_NAMES:
        return True
    try:
        seconds = float(value)
    except ValueError:
        return False
    return math.isfinite(seconds) and seconds >= 0
