"""The far-end reference: sinks tap what they render with the time it is played; the timeline buffer;
no import cycle between the sinks."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import numpy as np
import pytest

from audio.edges.reference import ReferenceQueue, TimedBuffer
from audio.edges.sinks import NullSink, StreamTime
from audio.edges.sounddevice_sink import SoundDeviceSink
from audio.edges.wav import FloatArray
from audio.speaking.playback import PlaybackMark
from tests.audio.fake_portaudio import FakePortAudio, wait_until

ROOT = Path(__file__).resolve().parents[2]


def _counting_render() -> tuple[list[float], object]:
    """A render that writes an increasing ramp (so blocks can be matched) and remembers its times."""
    times: list[float] = []
    state = {"n": 0}

    def render(out: FloatArray, t0: float) -> list[PlaybackMark]:
        n = len(out)
        out[:] = (np.arange(state["n"], state["n"] + n) % 1000) / 2000.0
        state["n"] += n
        times.append(t0)
        return []

    return times, render


def test_null_sink_taps_every_block_with_its_play_time_in_real_time() -> None:
    times, render = _counting_render()
    tap = ReferenceQueue()
    sink = NullSink(rate=22050, block_ms=10)
    sink.add_reference_tap(tap)
    start = time.time()
    sink.open(render, lambda ok, detail: None)  # type: ignore[arg-type]
    time.sleep(0.35)
    sink.close()
    blocks = tap.drain()
    assert len(blocks) >= 20
    assert all(b.rate == 22050 and len(b.samples) == 220 for b in blocks)
    assert [b.play_time for b in blocks] == times[: len(blocks)]
    assert abs(blocks[0].play_time - start) < 0.1
    ramp = np.concatenate([b.samples for b in blocks])
    assert np.allclose(ramp[:1000], np.arange(1000) / 2000.0, atol=1e-6)  # what was rendered, in order
    spacing = np.diff([b.play_time for b in blocks])
    assert float(np.median(spacing)) == pytest.approx(0.01, abs=0.003)


def test_a_software_clock_block_keeps_its_slot_when_the_callback_runs_late() -> None:
    """A ``ClockedOutputStream`` thread held up (a loaded machine) between reading its clock and the
    sink's callback: the block's play time is still its slot on the monotonic clock, in wall time --
    not shifted by the hold-up (PortAudio's own clock is only used as a difference)."""
    times, render = _counting_render()
    sink = NullSink(rate=16000, block_ms=10)
    sink.open(render, lambda ok, detail: None)  # type: ignore[arg-type]
    sink.close()
    times.clear()
    read = time.monotonic()
    time.sleep(0.03)  # held up 30 ms after the clock read
    slot = read + 0.005
    sink._callback(np.zeros((160, 1), np.float32), 160, StreamTime(read, slot, 0.0, True), None)
    wall_slot = time.time() + slot - time.monotonic()
    assert times and abs(times[-1] - wall_slot) < 0.003
    sink._callback(np.zeros((160, 1), np.float32), 160, StreamTime(read, slot), None)  # PortAudio's clock
    assert times[-1] - wall_slot == pytest.approx(0.03, abs=0.01)  # its lead, from the callback's time


def test_removed_tap_gets_nothing() -> None:
    _, render = _counting_render()
    tap = ReferenceQueue()
    sink = NullSink(rate=16000, block_ms=10)
    sink.add_reference_tap(tap)
    sink.remove_reference_tap(tap)
    sink.open(render, lambda ok, detail: None)  # type: ignore[arg-type]
    time.sleep(0.1)
    sink.close()
    assert tap.drain() == []


def test_sounddevice_sink_taps_the_time_each_block_is_heard(fake_pa: FakePortAudio) -> None:
    """The play time comes from PortAudio's ``outputBufferDacTime``: it matches when the fake
    device plays the block (its latency 10 ms later than the callback)."""
    _, render = _counting_render()
    tap = ReferenceQueue()
    sink = SoundDeviceSink("USB Speaker", backend=fake_pa)
    sink.add_reference_tap(tap)
    sink.open(render, lambda ok, detail: None)  # type: ignore[arg-type]
    try:
        wait_until(lambda: len(fake_pa.recorded()) >= 20)
    finally:
        sink.close()
    heard = fake_pa.recorded()
    blocks = tap.drain()
    # The ramp repeats every 25 blocks of 480 samples: a block's start value names it only among the
    # first 25 heard (a loaded machine records more before the close), so the first occurrence counts.
    by_start: dict[float, float] = {}
    for t, samples in heard:
        by_start.setdefault(round(float(samples[0]), 6), t)
    firsts = [(round(float(b.samples[0]), 6), b.play_time) for b in blocks[:10]]
    matched = [abs(by_start[first] - t) for first, t in firsts if first in by_start]
    assert len(matched) >= 5
    assert float(np.median(matched)) < 0.003  # not 10 ms off: the latency is included
    assert all(b.rate == 48000 for b in blocks)


def test_reference_queue_is_bounded_and_counts_drops() -> None:
    q = ReferenceQueue(max_blocks=3)
    for k in range(5):
        q(np.zeros(4, dtype=np.float32), float(k), 16000)
    assert [b.play_time for b in q.drain()] == [2.0, 3.0, 4.0]
    assert q.dropped == 2 and q.last_time == 4.0
    assert q.drain() == []


def test_timed_buffer_lays_blocks_on_a_timeline_and_takes_by_time() -> None:
    buf = TimedBuffer(1000, keep_s=10.0)
    buf.append(np.arange(100, dtype=np.float32), 50.0)
    buf.append(np.arange(100, 200, dtype=np.float32), 50.1004)  # 0.4 ms jitter: contiguous
    assert buf.take(5, 50.098).tolist() == [98, 99, 100, 101, 102]
    assert buf.take(4, 49.998).tolist() == [0, 0, 0, 1]  # before the first sample: zeros
    assert buf.take(3, 50.199).tolist() == [199, 0, 0]  # past the newest: zeros
    assert buf.resyncs == 0


def test_timed_buffer_re_anchors_when_the_play_time_jumps() -> None:
    buf = TimedBuffer(1000, keep_s=10.0, resync_s=0.1)
    buf.append(np.ones(100, dtype=np.float32), 10.0)
    buf.append(np.full(100, 2.0, dtype=np.float32), 12.0)  # an underrun / a reopened device
    assert buf.resyncs == 1
    assert buf.take(2, 12.0).tolist() == [2.0, 2.0]
    assert buf.take(2, 10.0).tolist() == [0.0, 0.0]


def test_timed_buffer_keeps_only_its_window() -> None:
    buf = TimedBuffer(100, keep_s=1.0)
    for k in range(30):
        buf.append(np.full(10, float(k), dtype=np.float32), k * 0.1)
    assert buf.take(1, 0.0).tolist() == [0.0]  # dropped
    assert buf.take(1, 2.95).tolist() == [29.0]
    assert buf.end_time == pytest.approx(3.0)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_sinks_and_the_sounddevice_sink_do_not_import_each_other() -> None:
    edges = ROOT / "audio" / "edges"
    assert "audio.edges.sinks" not in _imports(edges / "sounddevice_sink.py")
    base = _imports(edges / "stream_sink.py")
    assert "audio.edges.sinks" not in base and "audio.edges.sounddevice_sink" not in base
