"""``robot-face bench tts``: streamed TTS against the synthesise-everything-then-play baseline.

Each reply is streamed word by word (``word_ms`` apart, like an LLM) into a Speaker playing into a
real-time NullSink at ``rate`` Hz. Reported per reply (median / p95 over runs):
first audio (first ``say`` chunk → first sample at the sink, from ``PlaybackStarted.ts``), the
largest underrun gap between pieces, and the baseline's first audio (Piper on the whole text, then
resample; playback could only start after that). Real-time factor = synthesis time / audio time.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from audio.edges.sinks import NullSink
from audio.edges.wav import resample
from audio.events import AudioEvent, PlaybackFinished, PlaybackStarted
from audio.speaking.settings import SpeakingSettings
from audio.speaking.speaker import Speaker
from audio.speaking.tts import load_voice

REPLIES: dict[str, str] = {
    "short": "Sure, I can help with that.",
    "short-2": "Hi! It is nice to see you again.",
    "long": (
        "Okay, here is the plan for today. First we water the plants on the balcony, because they "
        "looked a little thirsty yesterday. Then we can read the next chapter of your book together. "
        "After lunch, if the weather stays nice, we could go for a walk in the park. "
        "And in the evening, I will remind you to call your sister."
    ),
}


@dataclass
class _Figures:
    first_ms: list[float]
    max_gap_ms: list[float]
    baseline_ms: list[float]
    rtf: list[float]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def _stream(speaker: Speaker, say: str, text: str, word_ms: float) -> tuple[float, float]:
    """Stream ``text``; return (first-audio ms, largest gap ms)."""
    started = asyncio.Event()
    finished = asyncio.Event()
    first_ts: list[float] = []

    def on_event(event: AudioEvent) -> None:
        if isinstance(event, PlaybackStarted) and event.say == say:
            first_ts.append(event.ts)
            started.set()
        elif isinstance(event, PlaybackFinished) and event.say == say:
            finished.set()

    _listeners.append(on_event)
    words = text.split(" ")
    t0 = time.time()
    for i, word in enumerate(words):
        speaker.speak(say, word if i == 0 else " " + word, i == len(words) - 1)
        if word_ms > 0 and i < len(words) - 1:
            await asyncio.sleep(word_ms / 1000)
    await finished.wait()
    _listeners.remove(on_event)
    gaps = [p.gap_s for p in speaker.piece_log if p.say == say]
    return (first_ts[0] - t0) * 1000 if first_ts else float("nan"), max(gaps, default=0.0) * 1000


_listeners: list[Callable[[AudioEvent], None]] = []


def _emit(event: AudioEvent) -> None:
    for listener in list(_listeners):
        listener(event)


async def _bench(runs: int, rate: int, threads: int, word_ms: float) -> dict[str, _Figures]:
    settings = SpeakingSettings(sink="null", sim_rate=rate, tts_threads=threads)
    speaker = Speaker(settings, NullSink(rate=rate), _emit)
    await speaker.start()
    voice = load_voice("", threads=threads)
    results: dict[str, _Figures] = {}
    try:
        for name, text in REPLIES.items():
            figures = _Figures([], [], [], [])
            for run in range(runs):
                first, gap = await _stream(speaker, f"{name}-{run}", text, word_ms)
                figures.first_ms.append(first)
                figures.max_gap_ms.append(gap)
                t = time.perf_counter()
                whole = await asyncio.to_thread(voice.synthesize, text)
                await asyncio.to_thread(resample, whole.audio, whole.rate, rate)
                elapsed = time.perf_counter() - t
                figures.baseline_ms.append(elapsed * 1000)
                figures.rtf.append(elapsed / whole.duration)
            results[name] = figures
    finally:
        await speaker.aclose()
    return results


def run_bench(
    runs: int = 5, rate: int = 48000, threads: int = 1, word_ms: float = 15.0, as_json: bool = False
) -> int:
    """Run the benchmark and print a table; returns an exit code."""
    load_before = os.getloadavg()[0]
    results = asyncio.run(_bench(runs, rate, threads, word_ms))
    print(f"load average (1 min) before/after: {load_before:.1f} / {os.getloadavg()[0]:.1f}")
    print(
        f"bench tts: {runs} runs/reply, output {rate} Hz, {threads} onnx threads, words {word_ms:.0f} ms apart"
    )
    print(
        f"{'reply':8} {'first audio ms (med/p95)':>25} {'baseline ms (med/p95)':>23} {'max gap ms':>11} {'RTF':>6}"
    )
    summary: dict[str, dict[str, float]] = {}
    for name, f in results.items():
        row = {
            "first_audio_ms_median": statistics.median(f.first_ms),
            "first_audio_ms_p95": _p95(f.first_ms),
            "baseline_ms_median": statistics.median(f.baseline_ms),
            "baseline_ms_p95": _p95(f.baseline_ms),
            "max_gap_ms": max(f.max_gap_ms),
            "rtf": statistics.median(f.rtf),
        }
        summary[name] = row
        print(
            f"{name:8} {row['first_audio_ms_median']:>14.0f} / {row['first_audio_ms_p95']:<8.0f}"
            f" {row['baseline_ms_median']:>12.0f} / {row['baseline_ms_p95']:<8.0f}"
            f" {row['max_gap_ms']:>11.1f} {row['rtf']:>6.3f}"
        )
    if as_json:
        print(json.dumps(summary, indent=2))
    return 0
