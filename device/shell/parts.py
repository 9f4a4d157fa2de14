"""Building the parts from configuration, each backend chosen explicitly (no silent fakes)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from audio.edges.capture import AudioSource, SimulatedMicrophone, SoundDeviceMicrophone
from audio.edges.sinks import make_sink
from audio.events import EventSink
from audio.speaking.speaker import Speaker
from device.config import Config
from device.persistence import StateDir
from face.controller import FaceController
from face.renderers.choice import make_renderers
from face.web import FaceWebServer

_LOGGER = logging.getLogger(__name__)


def make_source(config: Config) -> AudioSource:
    """The simulated microphone in simulation, else the sounddevice microphone."""
    if config.device.simulate:
        return SimulatedMicrophone(rate=config.hearing.sample_rate, block_ms=config.hearing.block_ms)
    return SoundDeviceMicrophone(config.hearing)


def make_speaker(config: Config, state_dir: StateDir, emit: EventSink) -> Speaker:
    """The speaking pipeline; in simulation the sink writes WAV files (or nothing)."""
    settings = config.speaking
    if config.device.simulate:
        if config.device.sim_speaker == "wav":
            settings = replace(settings, sink="wav", wav_dir=settings.wav_dir or str(state_dir.speech_dir))
        else:
            settings = replace(settings, sink="null")
    # The daemon keeps running without its speaker and opens it once it is plugged in.
    return Speaker(settings, make_sink(settings, wait_for_device=True), emit)


def make_face(
    config: Config, on_tap: Callable[[str], None], on_text: Callable[[str], None]
) -> tuple[FaceController, FaceWebServer | None]:
    """The face controller with the configured renderer, and the web server to start (browser face)."""
    renderers, server = make_renderers(config.face, on_tap, on_text)
    return FaceController(config.face, renderers), server
