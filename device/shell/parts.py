"""Building the parts from configuration, each backend chosen explicitly (no silent fakes)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from audio.edges.capture import AudioSource, SimulatedMicrophone, SoundDeviceMicrophone
from audio.edges.reference import ReferenceTap
from audio.edges.sim_room import RoomEcho
from audio.edges.sinks import StreamSink, WavSink, make_sink
from audio.events import EventSink
from audio.hearing.cancellers import make_canceller
from audio.hearing.front_end import (
    FrontEnd,
    FrontEndOptions,
    FrontEndSource,
    FrontEndUnavailable,
    ResidualGate,
)
from audio.speaking.speaker import Speaker
from device.config import Config
from device.persistence import StateDir
from face.controller import FaceController
from face.renderers.choice import make_renderers
from face.web import FaceWebServer

_LOGGER = logging.getLogger(__name__)


def make_source(config: Config) -> AudioSource:
    """The simulated microphone in simulation (hearing the speaker through the simulated room
    when ``sim_room.enabled``), else the sounddevice microphone; behind the echo canceller when
    ``hearing.echo_cancellation = "webrtc"`` or ``"dtln"`` (if its library or model will not load:
    the plain microphone, half duplex, with the reason logged)."""
    hearing, room = config.hearing, config.sim_room
    mic: SimulatedMicrophone | SoundDeviceMicrophone
    if config.device.simulate:
        echo = RoomEcho(room, hearing.sample_rate) if room.enabled else None
        mic = SimulatedMicrophone(rate=hearing.sample_rate, block_ms=hearing.block_ms, echo=echo)
    else:
        mic = SoundDeviceMicrophone(hearing)
    if hearing.echo_cancellation not in ("webrtc", "dtln"):
        return mic
    simulated_delay = round(room.delay_ms) if config.device.simulate and room.enabled else 0
    options = FrontEndOptions(
        noise_suppression=hearing.noise_suppression,
        high_pass_filter=hearing.high_pass_filter,
        echo_delay_ms=hearing.echo_delay_ms or simulated_delay,
    )
    try:
        canceller = make_canceller(hearing, options)
        margin = hearing.guard_margin_db
        return FrontEndSource(
            mic,
            FrontEnd(options, canceller),
            gate=ResidualGate(
                frame_ms=hearing.block_ms, echo_delay_ms=options.echo_delay_ms, margin_db=margin
            ),
        )
    except FrontEndUnavailable as err:
        _LOGGER.warning("echo cancellation off (half duplex): %s", err)
        return mic


def reference_taps(source: AudioSource) -> list[ReferenceTap]:
    """What ``source`` needs to hear of the speaker: the canceller's reference, the simulated room."""
    taps: list[ReferenceTap] = []
    if isinstance(source, FrontEndSource):
        taps.append(source.front.reference)
        source = source.inner  # type: ignore[assignment]
    if isinstance(source, SimulatedMicrophone) and isinstance(source.echo, RoomEcho):
        taps.append(source.echo.on_rendered)
    return taps


def simulated_microphone(source: AudioSource | None) -> SimulatedMicrophone | None:
    """The simulated microphone ``sim/audio`` feeds: ``source`` itself, or the one behind the echo
    canceller (None on hardware)."""
    if isinstance(source, FrontEndSource):
        source = source.inner  # type: ignore[assignment]
    return source if isinstance(source, SimulatedMicrophone) else None


def make_speaker(
    config: Config, state_dir: StateDir, emit: EventSink, source: AudioSource | None = None
) -> Speaker:
    """The speaking pipeline; in simulation the sink writes WAV files (or nothing). What ``source``
    hears of the speaker (``reference_taps``) is tapped from the sink."""
    settings = config.speaking
    if config.device.simulate:
        if config.device.sim_speaker == "wav":
            settings = replace(settings, sink="wav", wav_dir=settings.wav_dir or str(state_dir.speech_dir))
        else:
            settings = replace(settings, sink="null")
    # The daemon keeps running without its speaker and opens it once it is plugged in.
    sink = make_sink(settings, wait_for_device=True)
    if source is not None and isinstance(sink, StreamSink):
        for tap in reference_taps(source):
            sink.add_reference_tap(tap)
    speaker = Speaker(settings, sink, emit)
    if isinstance(sink, WavSink):
        sink.gain_probe = speaker.duck_gain  # the gain file beside each reply's WAV
    return speaker


def make_face(
    config: Config, on_tap: Callable[[str], None], on_text: Callable[[str], None]
) -> tuple[FaceController, FaceWebServer | None]:
    """The face controller with the configured renderer, and the web server to start (browser face)."""
    renderers, server = make_renderers(config.face, on_tap, on_text)
    controller = FaceController(config.face, renderers)
    if server is not None:
        server.on_watched = controller.wake  # a page that connects gets the full frame rate at once
    return controller, server
