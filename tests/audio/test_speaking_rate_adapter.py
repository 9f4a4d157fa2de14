"""``PullResampler``: exact device blocks at another rate, continuous across blocks, right pitch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from audio.edges.rate_adapter import PullResampler
from audio.edges.wav import FloatArray


def _sine_source(rate: int, hz: float) -> tuple[list[int], Callable[[int], FloatArray]]:
    rendered = [0]

    def produce(n: int) -> FloatArray:
        start = rendered[0]
        rendered[0] += n
        return (0.5 * np.sin(2 * np.pi * hz * np.arange(start, start + n) / rate)).astype(np.float32)

    return rendered, produce


def test_every_call_returns_exactly_the_frames_asked_for_and_renders_only_what_it_needs() -> None:
    converter = PullResampler(48000, 44100)
    rendered, produce = _sine_source(48000, 440)
    sizes = [441, 512, 17, 1000, 441]
    outs = [converter.pull(n, produce) for n in sizes * 20]
    assert [len(o) for o in outs] == sizes * 20
    played = sum(sizes) * 20
    # Rendered input = played output at the input rate, plus what waits in the converter.
    waiting = converter.pending_s * 48000
    assert abs(rendered[0] - (played * 48000 / 44100 + waiting)) < 64


def test_the_converted_tone_is_continuous_and_keeps_its_pitch() -> None:
    for in_rate, out_rate in ((48000, 44100), (22050, 48000), (44100, 48000)):
        converter = PullResampler(in_rate, out_rate)
        _, produce = _sine_source(in_rate, 440)
        out = np.concatenate([converter.pull(out_rate // 100, produce) for _ in range(100)])
        steady = out[out_rate // 20 :]
        spectrum = np.abs(np.fft.rfft(steady * np.hanning(len(steady))))
        assert abs(np.argmax(spectrum) * out_rate / len(steady) - 440) < 2
        slope = 0.5 * 2 * np.pi * 440 / out_rate
        assert np.abs(np.diff(steady)).max() < slope * 1.1  # no step at block boundaries
        assert np.abs(steady).max() < 0.52


def test_silence_in_is_silence_out() -> None:
    converter = PullResampler(48000, 44100)
    out = converter.pull(4410, lambda n: np.zeros(n, np.float32))
    assert len(out) == 4410 and not out.any()
