"""CLI: ``robot-face say "text" [--out FILE.wav]`` and ``robot-face bench tts``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from audio.events import AudioEvent, PlaybackFinished
from audio.speaking.settings import SpeakingSettings

_LOGGER = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``say`` and ``bench tts``."""
    p = sub.add_parser("say", help="speak a line through the speaker (or write it to a WAV file)")
    p.add_argument("text", nargs="?", default="", help="text to speak")
    p.add_argument("--out", help="write the speech to this WAV file instead of playing it")
    p.add_argument("--device", help="output device name or substring (default: system default)")
    p.add_argument("--voice", default="", help="Piper .onnx voice (default: packaged en_US-joe-medium)")
    p.add_argument("--volume", type=float, default=0.8, help="volume 0..1 (default 0.8)")
    p.add_argument("--length-scale", type=float, default=1.0, help="speaking rate: <1 faster (default 1.0)")
    p.add_argument("--list-devices", action="store_true", help="list output devices and exit")
    p.set_defaults(func=_say)
    b = bench.add_parser("tts", help="TTS first-audio latency, real-time factor, gaps between sentences")
    b.add_argument("--runs", type=int, default=5, help="runs per reply (default 5)")
    b.add_argument("--rate", type=int, default=48000, help="simulated output rate in Hz (default 48000)")
    b.add_argument("--threads", type=int, default=1, help="onnxruntime threads (default 1)")
    b.add_argument("--word-ms", type=float, default=15.0, help="delay between streamed words (default 15)")
    b.add_argument("--json", action="store_true", help="print the figures as JSON too")
    b.set_defaults(func=_bench_tts)


def _say(args: argparse.Namespace) -> int:
    if args.list_devices:
        return _list_devices()
    if not args.text.strip():
        print("say: nothing to say (give the text as an argument)", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_say_async(args))
    except (OSError, RuntimeError, ValueError) as err:
        print(f"say: {err}", file=sys.stderr)
        return 1


async def _say_async(args: argparse.Namespace) -> int:
    from audio.edges.sinks import AudioSink, WavSink, make_sink
    from audio.speaking.speaker import Speaker

    tmp: Path | None = None
    sink: AudioSink
    if args.out:
        tmp = Path(tempfile.mkdtemp(prefix="robot-face-say-"))
        settings = SpeakingSettings(sink="wav", wav_dir=str(tmp), voice=args.voice, volume=args.volume)
        sink = WavSink(tmp, rate=settings.sim_rate)
    else:
        settings = SpeakingSettings(output_device=args.device, voice=args.voice, volume=args.volume)
        sink = make_sink(settings)
    settings = SpeakingSettings(**{**settings.__dict__, "length_scale": args.length_scale})
    done = asyncio.Event()

    def emit(event: AudioEvent) -> None:
        if isinstance(event, PlaybackFinished):
            done.set()

    speaker = Speaker(settings, sink, emit)
    await speaker.start()
    try:
        speaker.speak("say", args.text, True)
        await done.wait()
    finally:
        await speaker.aclose()
    if tmp is not None:
        produced = tmp / "say.wav"
        shutil.move(str(produced), args.out)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"wrote {args.out}")
    return 0


def _list_devices() -> int:
    import sounddevice

    outputs = [d for d in sounddevice.query_devices() if int(d["max_output_channels"]) > 0]
    if not outputs:
        print("no output devices")
    for d in outputs:
        print(f"{d['name']}  ({int(d['default_samplerate'])} Hz, {d['max_output_channels']} ch)")
    return 0


def _bench_tts(args: argparse.Namespace) -> int:
    from audio.tools.bench_tts import run_bench

    return run_bench(
        runs=args.runs, rate=args.rate, threads=args.threads, word_ms=args.word_ms, as_json=args.json
    )
