"""The echo canceller ``hearing.echo_cancellation`` names, built (the daemon's front end and the
benchmark build it here, so both run the same one)."""

from __future__ import annotations

from audio.hearing.dtln_aec import DtlnCanceller, output_delay_samples, resolve_model_dir
from audio.hearing.front_end import FRAME, RATE, Canceller, EchoCanceller, FrontEndOptions
from audio.hearing.settings import HearingSettings

CANCELLERS: tuple[str, ...] = ("webrtc", "dtln")
"""The in-process cancellers (``hearing.echo_cancellation`` values that clean the microphone here)."""


def make_canceller(hearing: HearingSettings, options: FrontEndOptions) -> Canceller:
    """The canceller ``hearing.echo_cancellation`` names ("webrtc" or "dtln"); raises
    ``FrontEndUnavailable`` (saying why) when its library or model is missing."""
    if hearing.echo_cancellation == "dtln":
        return DtlnCanceller(
            resolve_model_dir(hearing.echo_model), frame=FRAME, units=hearing.echo_model_units
        )
    if hearing.echo_cancellation != "webrtc":
        raise ValueError(f"echo cancellation {hearing.echo_cancellation!r} runs no canceller here")
    return EchoCanceller(options)


def output_delay_s(hearing: HearingSettings) -> float:
    """How late the canceller's cleaned audio comes out (s): none for WebRTC's."""
    return output_delay_samples(FRAME) / RATE if hearing.echo_cancellation == "dtln" else 0.0
