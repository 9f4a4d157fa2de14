"""Evaluate (and fit) the transcript confidence on a ``manifest.tsv`` set.

``evaluate_set`` transcribes every clip through the runtime path and returns per-clip rows with the
raw confidence features; ``report`` computes WER, AUROC (correct vs wrong), expected calibration
error and the non-speech / clear-speech shares; ``fit_calibration`` fits the logistic regression
stored in ``audio/confidence_calibration.json``:

    .venv/bin/python -m audio.tools.eval_confidence fit /tmp/sets/train [more dirs]
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.confidence import (
    CALIBRATION_PATH,
    SINGLE_CALIBRATION_PATH,
    Calibration,
    ConfidenceFeatures,
    calibration_names,
    feature_vector,
    has_repeated_word,
    is_filler,
    score,
)
from audio.hearing.cross_check import resolve_model_dir
from audio.hearing.engine import Engine
from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.wer import normalise_for_wer, reference_words, word_errors
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools.stt_clip import load_clip, transcribe_clip

_LOGGER = logging.getLogger(__name__)
GOODBYES = frozenset({"thank you", "bye", "good night", "goodbye", "thanks", "thank you very much"})
CLEAR_CONDITIONS = frozenset({"clean", "snr20", ""})
"""Conditions counted as clearly spoken ("" = real recordings without a condition column)."""
THRESHOLD = 0.4


@dataclass(frozen=True, slots=True)
class ClipRow:
    """One evaluated clip."""

    relpath: str
    reference: str
    kind: str
    condition: str
    text: str
    confidence: float
    errors: int
    ref_words: int
    features: dict[str, float] | None

    @property
    def correct(self) -> bool:
        """Transcript right: non-speech must be empty; speech within 10 % word errors."""
        if self.kind != "speech":
            return not self.text
        return bool(self.text) and self.errors <= 0.1 * self.ref_words


class ManifestError(ValueError):
    """A ``manifest.tsv`` that cannot be read as one (says which file and why)."""


def read_manifest(directory: Path) -> list[dict[str, str]]:
    """Rows of ``directory/manifest.tsv`` (tab-separated, header row; ``relpath`` required,
    ``transcript``, ``kind`` and ``condition`` optional). Column names and values are stripped,
    names compared in lower case, blank lines skipped; ``kind`` is lower-cased and, when missing,
    is "speech" for a row with a transcript and "nonspeech" for one without."""
    path = directory / "manifest.tsv"
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        names = [(n or "").strip().lower() for n in reader.fieldnames or []]
        if "relpath" not in names:
            raise ManifestError(f"{path}: no 'relpath' column (columns: {', '.join(names) or 'none'})")
        rows = []
        for line, raw in enumerate(reader, start=2):
            entry = {
                (k or "").strip().lower(): (v or "").strip()
                for k, v in raw.items()
                if k is not None and isinstance(v, str | None)
            }
            if not any(entry.values()):
                continue
            if not entry.get("relpath"):
                raise ManifestError(f"{path}, line {line}: empty relpath")
            kind = entry.get("kind", "").lower()
            entry["kind"] = kind or ("speech" if entry.get("transcript") else "nonspeech")
            rows.append(entry)
    return rows


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A clip of the manifest whose audio could not be read (missing, not audio, damaged)."""

    relpath: str
    error: str


def read_clip(
    directory: Path, relpath: str, rate: int, unreadable: list[Unreadable] | None
) -> FloatArray | None:
    """The clip's samples, or None (logged and added to ``unreadable``) when it cannot be read;
    without an ``unreadable`` list the error is raised."""
    try:
        return load_clip(directory / relpath, rate)
    except Exception as err:
        if unreadable is None:
            raise
        _LOGGER.warning("%s: cannot read audio, left out: %s", relpath, err)
        unreadable.append(Unreadable(relpath, f"{type(err).__name__}: {err}"))
        return None


def evaluate_set(
    directory: Path,
    transcriber: Engine,
    settings: HearingSettings,
    unreadable: list[Unreadable] | None = None,
) -> list[ClipRow]:
    """Transcribe every clip of a manifest set. A clip that cannot be read is left out and listed
    in ``unreadable`` when given (raised otherwise)."""
    rows = []
    for entry in read_manifest(directory):
        samples = read_clip(directory, entry["relpath"], settings.sample_rate, unreadable)
        if samples is None:
            continue
        res = transcribe_clip(samples, transcriber, settings)
        ref = entry.get("transcript", "") or ""
        spoken = [u for u in res.utterances if u.text]
        # Features describe one decode: a clip heard as several utterances (or parts) has none,
        # and keeps its joined confidence (fitting on the first part's would mislabel it).
        feats = spoken[0].features if len(spoken) == 1 else None
        rows.append(
            ClipRow(
                relpath=entry["relpath"],
                reference=ref,
                kind=entry.get("kind", "speech"),
                condition=entry.get("condition", "") or "",
                text=res.text,
                confidence=res.confidence,
                errors=word_errors(ref, res.text),
                ref_words=reference_words(ref),
                features=feats.as_dict() if feats is not None else None,
            )
        )
    return rows


def speech_share(samples: np.ndarray, settings: HearingSettings) -> float:
    """Share of VAD speech frames in ``samples`` (what the endpointer would report)."""
    from audio.hearing.vad import SpeechDetector

    det = SpeechDetector(settings)
    n = settings.sample_rate * settings.block_ms // 1000
    frames = [samples[i : i + n] for i in range(0, len(samples) - n + 1, n)]
    return sum(det.is_speech(f) for f in frames) / max(1, len(frames))


def evaluate_nonspeech_direct(
    directory: Path, transcriber: Engine, settings: HearingSettings
) -> list[ClipRow]:
    """Feed every non-speech clip straight to the STT (as if the VAD had let it through).

    The VAD rejects most non-speech, so without these rows the fit sees almost no invented
    "Thank you." over noise; the runtime still must score such text low when it does get through.
    """
    rows = []
    for entry in read_manifest(directory):
        if entry["kind"] == "speech":
            continue
        samples = load_clip(directory / entry["relpath"], settings.sample_rate)
        res = transcriber.transcribe(samples, speech_ratio=speech_share(samples, settings))
        rows.append(
            ClipRow(
                relpath=entry["relpath"],
                reference="",
                kind="nonspeech",
                condition="direct_" + (entry.get("condition", "") or ""),
                text=res.text,
                confidence=res.confidence,
                errors=word_errors("", res.text),
                ref_words=0,
                features=res.features.as_dict() if res.features is not None else None,
            )
        )
    return rows


def auroc(scores: list[float], labels: list[bool]) -> float:
    """Area under the ROC curve (ties count half); NaN without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def ece(scores: list[float], labels: list[bool], bins: int = 10) -> float:
    """Expected calibration error over equal-width bins."""
    if not scores:
        return float("nan")
    s, y = np.asarray(scores), np.asarray(labels, dtype=float)
    idx = np.minimum((s * bins).astype(int), bins - 1)
    return float(
        sum(
            abs(s[idx == b].mean() - y[idx == b].mean()) * (idx == b).sum()
            for b in range(bins)
            if (idx == b).any()
        )
        / len(s)
    )


def report(rows: list[ClipRow]) -> dict[str, Any]:
    """Metrics for a set of evaluated clips, plus ``by_folder`` (first folder of the clip's path, one
    source of recordings) when the clips come from several."""
    out = _metrics(rows)
    folders = sorted({_folder(r) for r in rows})
    if len(folders) > 1:
        keys = ("clips", "wer", "auroc_speech", "clear_speech_accepted_share", "nonspeech_rejected_share")
        out["by_folder"] = {
            f: {k: _metrics([r for r in rows if _folder(r) == f])[k] for k in keys} for f in folders
        }
    return out


def _folder(r: ClipRow) -> str:
    return r.relpath.split("/")[0]


def _rounded(value: float) -> float | None:
    """``value`` to 4 places; None when undefined (NaN: one class only), so the JSON stays valid."""
    return None if math.isnan(value) else round(value, 4)


def _metrics(rows: list[ClipRow]) -> dict[str, Any]:
    speech = [r for r in rows if r.kind == "speech"]
    nonspeech = [r for r in rows if r.kind != "speech"]
    heard = [r for r in rows if r.text]
    heard_speech = [r for r in speech if r.text]
    clear = [r for r in speech if r.condition in CLEAR_CONDITIONS]
    goodbyes = [r for r in clear if normalise_for_wer(r.reference) in GOODBYES]
    ref_words = sum(r.ref_words for r in speech)

    def share(items: list[ClipRow], ok: Any) -> float | None:
        return round(sum(1 for r in items if ok(r)) / len(items), 4) if items else None

    return {
        "clips": len(rows),
        "speech_clips": len(speech),
        "nonspeech_clips": len(nonspeech),
        "wer": round(sum(r.errors for r in speech) / ref_words, 4) if ref_words else None,
        "auroc_speech": _rounded(
            auroc([r.confidence for r in heard_speech], [r.correct for r in heard_speech])
        ),
        "auroc_all": _rounded(auroc([r.confidence for r in heard], [r.correct for r in heard])),
        "ece": round(ece([r.confidence for r in heard], [r.correct for r in heard]), 4),
        "nonspeech_rejected_share": share(nonspeech, lambda r: not r.text or r.confidence < THRESHOLD),
        "clear_speech_accepted_share": share(clear, lambda r: r.confidence >= THRESHOLD),
        "clear_speech_correct_accepted_share": share(
            [r for r in clear if r.correct], lambda r: r.confidence >= THRESHOLD
        ),
        "goodbyes_accepted_share": share(goodbyes, lambda r: r.confidence >= THRESHOLD),
        "goodbyes_clips": len(goodbyes),
    }


def fit_calibration(rows: list[ClipRow], l2: float = 1.0, cross: bool = False) -> Calibration:
    """Fit a standardised L2 logistic regression (Newton/IRLS) on clips that produced text.

    With ``cross``, on the clips a second recogniser checked, with the cross-check features;
    without, on every clip, without them (the calibration used when the check is off).
    Goodbye phrases are built in every condition (8x) while other sentences get 3 conditions, so
    they are down-weighted to the same share; otherwise "it is a filler phrase" looks like a reason
    to trust a transcript.
    """
    used = [
        (ConfidenceFeatures(**_typed(r.features, r.text)), r)
        for r in rows
        if r.features is not None and (not cross or r.features.get("cross_checked"))
    ]
    if not used:
        raise ValueError("no transcripts to fit on" + (" with cross-check features" if cross else ""))
    sample_w = np.asarray(
        [
            3.0 / 8.0 if r.kind == "speech" and normalise_for_wer(r.reference) in GOODBYES else 1.0
            for _, r in used
        ]
    )
    x = np.asarray([feature_vector(f, cross) for f, _ in used], dtype=np.float64)
    y = np.asarray([1.0 if r.correct else 0.0 for _, r in used])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (sample_w * (p - y)) + reg * w
        hess = (z * (sample_w * p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Calibration(
        names=calibration_names(cross),
        mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale),
        coef=tuple(float(v) for v in w[:-1]),
        intercept=float(w[-1]),
    )


def fit_calibrations(rows: list[ClipRow], l2: float = 1.0, cross: bool = True) -> dict[bool, Calibration]:
    """The calibration without cross-check features and (if ``cross`` and some row has them) the
    one with them."""
    cals = {False: fit_calibration(rows, l2, cross=False)}
    if cross and any(r.features is not None and r.features.get("cross_checked") for r in rows):
        cals[True] = fit_calibration(rows, l2, cross=True)
    return cals


def _typed(f: dict[str, float], text: str = "") -> dict[str, Any]:
    """Feature dict from JSON back to ``ConfidenceFeatures`` field types (older caches: fill gaps,
    drop features that no longer exist; ``filler`` follows the current phrase rule)."""
    known = {field.name for field in fields(ConfidenceFeatures)}
    out: dict[str, Any] = {k: v for k, v in f.items() if k in known}
    out["fallbacks"] = int(f["fallbacks"])
    out["n_words"] = int(f["n_words"])
    out["filler"] = is_filler(text) if text else bool(f["filler"])  # caches follow the current rule
    out["changed_by_beam"] = bool(f.get("changed_by_beam", 0.0))
    out["cross_checked"] = bool(f.get("cross_checked", 0.0))
    out["cross_exact"] = bool(f.get("cross_exact", 0.0))
    out["repeated_words"] = bool(f["repeated_words"]) if "repeated_words" in f else has_repeated_word(text)
    return out


def rows_to_jsonl(rows: list[ClipRow], path: Path) -> None:
    """Cache evaluated rows (features included) so fitting does not re-decode."""
    with path.open("w") as fh:
        for r in rows:
            fh.write(json.dumps(_row_dict(r)) + "\n")


def _row_dict(r: ClipRow) -> dict[str, Any]:
    return {name: getattr(r, name) for name in ClipRow.__slots__}


def rows_from_jsonl(path: Path) -> list[ClipRow]:
    """Read rows written by ``rows_to_jsonl``.

    Word errors are recounted, so a cache follows the current ``audio.hearing.wer`` rules.
    """
    known = set(ClipRow.__slots__)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = []
    for row in rows:
        r = ClipRow(**{k: v for k, v in row.items() if k in known})
        ref = r.reference if r.kind == "speech" else ""
        out.append(replace(r, errors=word_errors(ref, r.text), ref_words=reference_words(ref)))
    return out


def cross_validate(
    train: list[ClipRow], held: list[ClipRow], l2: float = 1.0, cross: bool = True
) -> dict[str, Any]:
    """Leave-one-group-out over ``held``: each group (first folder of the clip's path, e.g. one
    real-speech source) is scored by calibrations fitted on ``train`` plus the other groups
    (without ``cross``, as if the cross-check were off).

    Returns the metrics of all held-out predictions pooled, and per group.
    """
    groups: dict[str, list[ClipRow]] = {}
    for r in held:
        groups.setdefault(_folder(r), []).append(r)
    pooled: list[ClipRow] = []
    per_group: dict[str, Any] = {}
    for name, rows in groups.items():
        cals = fit_calibrations(train + [r for k, rs in groups.items() if k != name for r in rs], l2, cross)
        rescored = [rescore(r, cals) for r in rows]
        pooled += rescored
        m = _metrics(rescored)
        per_group[name] = {k: m[k] for k in ("clips", "wer", "auroc_speech", "clear_speech_accepted_share")}
    return {"pooled": _metrics(pooled), "groups": per_group}


def rescore(r: ClipRow, cals: dict[bool, Calibration]) -> ClipRow:
    """``r`` scored by the calibration for its features (the single one when ``cals`` has no
    cross-check calibration)."""
    if r.features is None:
        return r
    f = ConfidenceFeatures(**_typed(r.features, r.text))
    if f.cross_checked and True not in cals:
        f = replace(f, cross_checked=False)
    return replace(r, confidence=score(f, cals[f.cross_checked]))


def _load_rows(
    dirs: list[Path], redo: bool, direct: bool, settings: HearingSettings
) -> dict[Path, list[ClipRow]]:
    """Rows per set, decoded once and cached in DIR/results.jsonl (+ results_direct.jsonl); when
    the cross-check model is missing or "off", in DIR/results_single.jsonl (+
    results_direct_single.jsonl), so a cache without ``cross_*`` features is never taken for one
    with them."""
    suffix = "" if resolve_model_dir(settings.stt_cross_check_model) is not None else "_single"
    transcriber: Engine | None = None
    out: dict[Path, list[ClipRow]] = {}
    for d in dirs:
        rows: list[ClipRow] = []
        jobs: list[tuple[str, Callable[[Path, Engine, HearingSettings], list[ClipRow]]]]
        jobs = [(f"results{suffix}.jsonl", evaluate_set)]
        if direct:
            jobs.append((f"results_direct{suffix}.jsonl", evaluate_nonspeech_direct))
        for name, run in jobs:
            cache = d / name
            if cache.exists() and not redo:
                rows += rows_from_jsonl(cache)
                continue
            if transcriber is None:
                transcriber = SpeechGate(WhisperTranscriber(settings), settings.tone_gate_share)
                transcriber.load()
            got = run(d, transcriber, settings)
            rows_to_jsonl(got, cache)
            rows += got
        out[d] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    """``fit DIR...``: decode the sets once (cached in DIR/results*.jsonl), fit both calibrations on
    that decode, write them. ``crossval DIR... --hold-out DIR``: leave-one-source-out figures for
    the held-out set.

    One decode serves both calibrations: the cross-check never changes Whisper's transcript or its
    features (tested), so the calibration without it is fitted on the same rows with the
    ``cross_*`` features left out, exactly what a device with the check "off" computes.
    """
    ap = argparse.ArgumentParser(prog="python -m audio.tools.eval_confidence")
    ap.add_argument("command", choices=["fit", "crossval"])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--out-dir", type=Path, default=CALIBRATION_PATH.parent)
    ap.add_argument(
        "--without-cross-check",
        action="store_true",
        help="crossval: score as with hearing.stt_cross_check_model = 'off' (same decode, no cross_* features)",
    )
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--redo", action="store_true", help="decode again even if results.jsonl exists")
    ap.add_argument("--hold-out", type=Path, help="crossval: the set whose sources are held out in turn")
    ap.add_argument(
        "--no-direct",
        action="store_true",
        help="skip non-speech fed straight to the STT (cached in DIR/results_direct.jsonl)",
    )
    args = ap.parse_args(argv)
    dirs = list(args.dirs) + ([args.hold_out] if args.hold_out and args.hold_out not in args.dirs else [])
    by_dir = _load_rows(dirs, args.redo, not args.no_direct, HearingSettings())
    if args.command == "crossval":
        if args.hold_out is None:
            ap.error("crossval needs --hold-out DIR")
        train = [r for d, rows in by_dir.items() if d != args.hold_out for r in rows]
        result = cross_validate(train, by_dir[args.hold_out], args.l2, not args.without_cross_check)
        print(json.dumps(result, indent=2))
        return 0
    rows = [r for d in dirs for r in by_dir[d]]
    for cross in (True, False):
        out = args.out_dir / (CALIBRATION_PATH if cross else SINGLE_CALIBRATION_PATH).name
        used = sum(
            r.features is not None and (not cross or bool(r.features.get("cross_checked"))) for r in rows
        )
        if not used:
            print(f"no transcripts with cross-check features (model missing or off): kept {out}")
            continue
        cal = fit_calibration(rows, args.l2, cross)
        out.write_text(cal.to_json())
        print(f"fitted on {used} transcripts; wrote {out}")
        for name, c in zip(cal.names, cal.coef, strict=True):
            print(f"  {name:26s} {c:+.3f}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(main())
