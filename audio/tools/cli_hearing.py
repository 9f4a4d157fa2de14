"""CLI for hearing: ``robot-face transcribe``, ``robot-face eval confidence``, ``robot-face bench stt``,
``robot-face bench turns``."""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.cross_check import resolve_model_dir
from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.wer import reference_words, word_errors
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.stt_clip import load_clip, transcribe_clip

_LOGGER = logging.getLogger(__name__)

BENCH_SENTENCES = (
    "Yes.",
    "Thank you.",
    "Good night.",
    "What time is it?",
    "Turn on the lights in the kitchen.",
    "Can you tell me a story about a dragon?",
    "Please remind me to call my sister tomorrow morning.",
    "I would like to listen to some quiet music while I read my book.",
    "How far away is the moon, and how long would it take to fly there?",
    "My favourite colour is blue, but my brother likes green and my sister likes red.",
)
BENCH_VOICES = ("piper:joe:1.0", "espeak:en-us", "espeak:en-gb-scotland", "piper:joe:1.15", "espeak:en-029")
"""Voices of the generated bench utterances (Piper without sampling noise: the same audio every run)."""


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _stt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="", help="Whisper model dir or name (default: packaged tiny.en)")
    p.add_argument("--beam-size", type=int, default=None, help="beam size (default from settings)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default from settings)")
    p.add_argument("--full-window", action="store_true", help="pad to 30 s like stock faster-whisper")
    p.add_argument(
        "--cross-check-model",
        default=None,
        help="second recogniser directory, or 'off' (default: from settings, the fetched Moonshine tiny)",
    )


def _settings(args: argparse.Namespace) -> HearingSettings:
    s = HearingSettings()
    changes: dict[str, object] = {"stt_model": args.model}
    if args.beam_size is not None:
        changes["stt_beam_size"] = args.beam_size
    if args.threads is not None:
        changes["stt_threads"] = args.threads
    if args.full_window:
        changes["stt_short_window"] = False
    if args.cross_check_model is not None:
        changes["stt_cross_check_model"] = args.cross_check_model
    return replace(s, **changes)  # type: ignore[arg-type]


def _gated(engine: WhisperTranscriber, settings: HearingSettings) -> SpeechGate[WhisperTranscriber]:
    """``engine`` behind the speech gate, as the device runs it."""
    return SpeechGate(engine, settings.tone_gate_share)


class _Loadable(Protocol):
    def load(self) -> None: ...


_L = TypeVar("_L", bound=_Loadable)


def _loaded(model: _L) -> _L:
    """``model`` loaded; a missing or broken model file ends the command with its message (exit 2)."""
    try:
        model.load()
    except RuntimeError as err:  # ModelUnavailable and the engines' load errors
        print(f"robot-face: {err}", file=sys.stderr)
        raise SystemExit(2) from err
    return model


def _load(settings: HearingSettings) -> WhisperTranscriber:
    """The loaded transcriber (exit 2 with the message when its model is missing)."""
    return _loaded(WhisperTranscriber(settings))


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """Add ``transcribe``, ``eval confidence`` and ``bench stt``."""
    p = sub.add_parser("transcribe", help="transcribe audio files through the runtime path (VAD + Whisper)")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--json", action="store_true", help="one JSON object per file (default: text lines)")
    _stt_args(p)
    p.set_defaults(func=_transcribe)

    ev = sub.add_parser("eval", help="evaluations")
    ev_sub = ev.add_subparsers(dest="eval_what", required=True)
    c = ev_sub.add_parser("confidence", help="WER, AUROC, ECE and reject shares on a manifest.tsv set")
    c.add_argument("dir", type=Path, help="directory holding manifest.tsv")
    c.add_argument("--rows", type=Path, default=None, help="also write per-clip rows as JSON lines here")
    _stt_args(c)
    c.set_defaults(func=_eval_confidence)

    b = bench.add_parser("stt", help="short-window decode vs faster-whisper transcribe(): latency and WER")
    b.add_argument("--dir", type=Path, default=None, help="manifest set to take 1–8 s speech clips from")
    b.add_argument("--limit", type=int, default=50, help="most utterances to use (default 50: all)")
    b.add_argument("--baseline-beams", default="5,1", help="beam sizes for the baseline (default 5,1)")
    b.add_argument(
        "--pause-ms",
        type=int,
        default=200,
        help="idle time before each timed decode, as between utterances on the robot (default 200)",
    )
    b.add_argument(
        "--baseline-threads",
        type=int,
        default=os.cpu_count() or 1,
        help="CPU threads of the baseline's own model (default: all cores, its fastest here)",
    )
    b.add_argument(
        "--stages",
        action="store_true",
        help="also time each stage of our decode and the end-of-turn model alone, and the floor "
        "their summed CPU sets on the time from the last word to the transcript",
    )
    _stt_args(b)
    b.set_defaults(func=_bench_stt)

    t = bench.add_parser(
        "turns", help="turn-taking at real time: end of speech → transcript, hesitations kept whole"
    )
    t.add_argument("dir", type=Path, help="real-speech manifest set (scripts/build_real_speech_sets.py)")
    t.add_argument(
        "--configs",
        default="smart_turn,smart_turn:words+end:0.3:120:390:0:30:0,silence",
        help="detectors side by side: smart_turn[:off|words|words+punctuation|words+end[:THRESHOLD"
        "[:PAUSE_MS[:LATE_MS[:DECODE_MS[:ASK_MS[:HOLD_MS]]]]]]] and silence, any part KEY=VALUE setting that "
        "[hearing] key (e.g. smart_turn:turn_late_end=0.7), each optionally with @blas-pool "
        "(numpy's BLAS pool at the library's default, the baseline of the runtime's one BLAS thread) "
        "(default: the runtime's rule, the same without the hold (a complete verdict ends the turn at "
        "the pause's end, 120 ms), and silence)",
    )
    t.add_argument("--limit", type=int, default=24, help="real complete sentences (default 24)")
    t.add_argument("--hesitations", type=int, default=12, help="real sentences to cut (default 12)")
    t.add_argument("--pauses", default="0.6,0.9,1.2,1.5", help="stretched pause lengths in s")
    t.add_argument("--no-piper", action="store_true", help="leave out the Piper-voiced sentences")
    t.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        help="run every configuration this many times, interleaved (the order reversed every other "
        "round); the table pools the rounds and prints each round's median (default 1)",
    )
    t.add_argument(
        "--asks",
        type=Path,
        default=None,
        help="append every question (probability, speculative text) as JSON lines here; with "
        "--configs smart_turn:off:1 every pause is asked, and --replay FILE compares verdict rules",
    )
    t.add_argument("--replay", action="store_true", help="DIR is an --asks file: replay verdict rules on it")
    t.add_argument(
        "--extract",
        type=Path,
        default=None,
        help="instead of the real-time run: cache every pause's signals (model probability at each "
        "silence, speculative text and end probability) of the clips to this JSON file",
    )
    t.add_argument(
        "--replay-cache", action="store_true", help="DIR is an --extract file: tune and compare verdict rules"
    )
    t.set_defaults(func=_bench_turns)


def _transcribe(args: argparse.Namespace) -> int:
    settings = _settings(args)
    stt = _gated(_load(settings), settings)
    status = 0
    for path in args.files:
        try:
            samples = load_clip(path, settings.sample_rate)
        except Exception as err:
            print(f"{path}: cannot read audio: {err}", file=sys.stderr)
            status = 1
            continue
        res = transcribe_clip(samples, stt, settings)
        if args.json:
            out = {
                "file": str(path),
                "text": res.text,
                "confidence": round(res.confidence, 4),
                "language": res.language,
                "audio_ms": res.audio_ms,
                "decode_ms": res.decode_ms,
            }
            print(json.dumps(out), flush=True)
        else:
            print(f"{path}\t{res.confidence:.3f}\t{res.text}", flush=True)
    return status


def _eval_confidence(args: argparse.Namespace) -> int:
    """Exit 0; 1 when some clips could not be read (the report covers the rest and lists them);
    2 when there is no usable manifest."""
    from audio.tools.eval_confidence import (
        ManifestError,
        Unreadable,
        evaluate_set,
        read_manifest,
        report,
        rows_to_jsonl,
    )

    if not (args.dir / "manifest.tsv").is_file():
        print(f"{args.dir}: no manifest.tsv", file=sys.stderr)
        return 2
    try:  # before the models load: a bad manifest is told at once (the file is read again, cheap)
        read_manifest(args.dir)
    except (ManifestError, UnicodeDecodeError, csv.Error) as err:
        print(f"{args.dir}/manifest.tsv: {err}", file=sys.stderr)
        return 2
    settings = _settings(args)
    unreadable: list[Unreadable] = []
    rows = evaluate_set(args.dir, _gated(_load(settings), settings), settings, unreadable)
    if args.rows:
        rows_to_jsonl(rows, args.rows)
    out = report(rows)
    if unreadable:
        out["unreadable"] = [{"relpath": u.relpath, "error": u.error} for u in unreadable]
        print(f"{len(unreadable)} clip(s) could not be read and are left out", file=sys.stderr)
    print(json.dumps(out, indent=2))
    return 1 if unreadable else 0


def _bench_utterances(args: argparse.Namespace) -> list[tuple[str, FloatArray]]:
    if args.dir is not None:
        from audio.tools.eval_confidence import Unreadable, read_clip, read_manifest

        out = []
        unreadable: list[Unreadable] = []
        for e in read_manifest(args.dir):
            if e["kind"] != "speech":
                continue
            a = read_clip(args.dir, e["relpath"], 16000, unreadable)  # unreadable: warned, left out
            if a is not None and 1.0 <= len(a) / 16000 <= 8.0:
                out.append((e["transcript"], a))
        return out[: args.limit]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import build_speech_sets as bss

    rng = np.random.default_rng(3)
    utts = []
    for voice in BENCH_VOICES:
        for text in BENCH_SENTENCES:
            cond = str(rng.choice(["clean", "snr20", "snr10"]))
            utts.append((text, bss.degrade(bss.synth(text, voice, noise=False), cond, rng)))
    return utts[: args.limit]


def _bench_turns(args: argparse.Namespace) -> int:
    from audio.hearing.stt import ModelUnavailable
    from audio.tools.bench_turns import bench

    if args.replay:
        from audio.tools.bench_turns import evaluate_policies

        evaluate_policies(args.dir)
        return 0
    if args.replay_cache:
        from audio.tools.bench_turns_replay import replay_cache

        replay_cache(args.dir)
        return 0
    if args.extract is not None:
        return _extract_turns(args)
    try:
        return bench(
            args.dir,
            [c.strip() for c in args.configs.split(",") if c.strip()],
            limit=args.limit,
            hesitations=args.hesitations,
            pauses=[float(p) for p in args.pauses.split(",")],
            piper=not args.no_piper,
            base=HearingSettings(),
            asks_path=args.asks,
            rounds=args.rounds,
        )
    except (ModelUnavailable, ValueError, OSError) as err:
        print(f"bench turns: {err}", file=sys.stderr)
        return 2


def _extract_turns(args: argparse.Namespace) -> int:
    from audio.hearing.stt import make_transcriber
    from audio.hearing.turn_model import make_turn_model
    from audio.tools.bench_turns import build_clips
    from audio.tools.bench_turns_replay import extract

    base = HearingSettings()
    turn_model = make_turn_model(base)
    assert turn_model is not None  # the default detector is smart_turn
    pauses = [float(p) for p in args.pauses.split(",")]
    clips = build_clips(args.dir, args.limit, args.hesitations, pauses, not args.no_piper)
    stt = _loaded(make_transcriber(base))
    model = _loaded(turn_model)
    print(f"{len(clips)} clips → {args.extract}")
    extract(clips, stt, model, base, args.extract)
    return 0


_Decode = Callable[[FloatArray], str]
"""One way of decoding an utterance to its text (a path the bench times)."""


def _our_paths(stt: WhisperTranscriber, settings: HearingSettings) -> dict[str, _Decode]:
    """Our gated decode, with and without the cross-check when one is configured."""
    label = f"short window (beam {settings.stt_beam_size})"
    paths: dict[str, _Decode] = {}
    if resolve_model_dir(settings.stt_cross_check_model) is not None:
        # The same decode without the second recogniser: what the cross-check costs.
        plain = WhisperTranscriber(replace(settings, stt_cross_check_model="off"))
        plain._model, plain._tokenizer = stt.model, stt._tokenizer  # share the loaded model
        gated, gated_plain = _gated(stt, settings), _gated(plain, settings)
        paths[label + " + cross-check"] = lambda a: gated.transcribe(a).text
        paths[label + ", no cross-check"] = lambda a: gated_plain.transcribe(a).text
    else:
        gated = _gated(stt, settings)
        paths[label] = lambda a: gated.transcribe(a).text
    return paths


def _baseline_paths(
    stt: WhisperTranscriber, settings: HearingSettings, beams: str, threads: int
) -> dict[str, _Decode]:
    """faster-whisper's own ``transcribe()`` at each of the ``beams`` (comma-separated), on ``threads``."""
    # The baseline gets its own model with its own thread count: the plain library at its best
    # (its 30 s encoder gains from every core; our short decode is fastest on one).
    base_settings = replace(settings, stt_threads=threads, stt_cross_check_model="off")
    base_model = stt if threads == settings.stt_threads else _load(base_settings)
    paths: dict[str, _Decode] = {}
    for beam in [int(b) for b in beams.split(",") if b.strip()]:
        base = WhisperTranscriber(replace(base_settings, stt_beam_size=beam))
        base._model, base._tokenizer = base_model.model, base_model._tokenizer
        paths[f"faster-whisper transcribe() beam {beam}"] = base.transcribe_baseline
    return paths


def _time_paths(
    paths: dict[str, _Decode], utts: list[tuple[str, FloatArray]], pause_ms: int
) -> tuple[dict[str, list[float]], dict[str, int], int]:
    """Each path's decode times and word errors over ``utts`` (after a warm-up), and the words said."""
    for fn in paths.values():  # warm-up
        fn(utts[0][1])
    times: dict[str, list[float]] = {name: [] for name in paths}
    errors = dict.fromkeys(paths, 0)
    words = 0
    for ref, audio in utts:  # interleaved, so load changes hit every path alike
        words += reference_words(ref)
        for name, fn in paths.items():
            time.sleep(pause_ms / 1000)  # work a decode leaves running ends before the next
            t0 = time.perf_counter()
            text = fn(audio)
            times[name].append(time.perf_counter() - t0)
            errors[name] += word_errors(ref, text)
    return times, errors, words


def _print_comparison(times: dict[str, list[float]], errors: dict[str, int], words: int, n_ours: int) -> None:
    """Each path's median, p95 and WER, then each of our first ``n_ours`` paths against each baseline."""
    stats = {}
    for name in times:
        med, p95 = statistics.median(times[name]), float(np.percentile(times[name], 95))
        wer = errors[name] / max(1, words)
        stats[name] = (med, p95, wer)
        print(f"{name:45s} median {med * 1000:6.0f} ms   p95 {p95 * 1000:6.0f} ms   WER {wer * 100:5.1f} %")
    named = list(stats.items())
    for ours_name, ours in named[:n_ours]:
        for name, base_stats in named[n_ours:]:
            print(
                f"  {ours_name} vs {name}: median {ours[0] / base_stats[0]:.2f}x, "
                f"p95 {ours[1] / base_stats[1]:.2f}x, WER {(ours[2] - base_stats[2]) * 100:+.1f} points"
            )


def _bench_stt(args: argparse.Namespace) -> int:
    """``robot-face bench stt``: our short-window decode against faster-whisper's ``transcribe()``."""
    logging.getLogger("faster_whisper").setLevel(logging.WARNING)  # it logs every transcribe() call
    from audio.tools.eval_confidence import ManifestError

    settings = _settings(args)
    try:
        utts = _bench_utterances(args)
    except (ManifestError, OSError, UnicodeDecodeError, csv.Error) as err:
        print(f"bench stt: {err}", file=sys.stderr)
        return 2
    stt = _load(settings)
    if not utts:
        print("no 1–8 s utterances found", file=sys.stderr)
        return 2
    durations = [len(a) / 16000 for _, a in utts]
    print(
        f"{len(utts)} utterances, {min(durations):.1f}–{max(durations):.1f} s, "
        f"threads: ours {settings.stt_threads}, baseline {args.baseline_threads}"
    )
    paths = _our_paths(stt, settings)
    n_ours = len(paths)
    paths.update(_baseline_paths(stt, settings, args.baseline_beams, args.baseline_threads))
    times, errors, words = _time_paths(paths, utts, args.pause_ms)
    _print_comparison(times, errors, words, n_ours)
    if args.stages:
        _print_stages(stt, settings, [a for _, a in utts], args.pause_ms)
    return 0


def _print_stages(
    stt: WhisperTranscriber, settings: HearingSettings, utts: list[FloatArray], idle_ms: int
) -> None:
    from audio.hearing.turn_model import make_turn_model
    from audio.tools.bench_stages import print_stages, time_stages

    model = make_turn_model(settings)
    if model is not None:
        _loaded(model)
    print()
    table = time_stages(stt, model, utts, idle_s=idle_ms / 1000, whole=_gated(stt, settings))
    print_stages(table, settings.turn_question_ms, settings.turn_floor_ms)
