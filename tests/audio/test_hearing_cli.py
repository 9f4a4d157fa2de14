"""``transcribe --json`` and ``eval confidence`` through ``audio.tools.cli_hearing.register``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from audio.hearing.settings import HearingSettings
from audio.tools import cli_hearing
from tests.audio.conftest import HEARING_SPEECH_DIR

JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="robot-face")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench").add_subparsers(dest="bench_what", required=True)
    cli_hearing.register(sub, bench)
    args = parser.parse_args(argv)
    return int(args.func(args))


def make_set(directory: Path, entries: list[tuple[str, str, str]]) -> None:
    """A manifest set of clips copied from the shared speech data: (relpath, transcript, kind)."""
    rows = ["relpath\ttranscript\tkind"]
    for rel, text, kind in entries:
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HEARING_SPEECH_DIR / rel, directory / rel)
        rows.append(f"{rel}\t{text}\t{kind}")
    (directory / "manifest.tsv").write_text("\n".join(rows) + "\n")


def test_transcribe_json(capsys: pytest.CaptureFixture[str]) -> None:
    files = [HEARING_SPEECH_DIR / "jfk/jfk.flac", HEARING_SPEECH_DIR / "nonspeech/processing.wav"]
    assert run(["transcribe", "--json", *map(str, files)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["file"] for o in lines] == [str(f) for f in files]
    for o in lines:
        assert set(o) == {"file", "text", "confidence", "language", "audio_ms", "decode_ms"}
        assert 0.0 <= o["confidence"] <= 1.0 and o["language"] == "en"
    jfk, chime = lines
    assert "fellow americans" in jfk["text"].lower() and jfk["confidence"] >= 0.4 and jfk["audio_ms"] == 11000
    assert chime["text"] == "" or chime["confidence"] < 0.4


def test_transcribe_with_and_without_cross_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jfk = str(HEARING_SPEECH_DIR / "jfk/jfk.flac")
    assert run(["transcribe", "--json", "--cross-check-model", "off", jfk]) == 0
    off = json.loads(capsys.readouterr().out)
    assert run(["transcribe", "--json", jfk]) == 0
    on = json.loads(capsys.readouterr().out)
    assert off["text"] == on["text"] and off["confidence"] >= 0.4 and on["confidence"] >= 0.4
    with pytest.raises(SystemExit) as stop:
        run(["transcribe", "--json", "--cross-check-model", str(tmp_path), jfk])
    assert stop.value.code == 2 and "audio.fetch_models" in capsys.readouterr().err


def test_transcribe_bad_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio at all")
    assert run(["transcribe", "--json", str(bad)]) == 1
    assert "cannot read audio" in capsys.readouterr().err


def test_eval_confidence_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_set(
        tmp_path,
        [
            ("fsdd/4_jackson_1.wav", "four", "speech"),
            ("fsdd/7_nicolas_2.wav", "seven", "speech"),
            ("jfk/jfk.flac", JFK, "speech"),
            ("nonspeech/wake_word_triggered.flac", "", "nonspeech"),
        ],
    )
    assert run(["eval", "confidence", str(tmp_path), "--rows", str(tmp_path / "rows.jsonl")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["clips"] == 4 and report["speech_clips"] == 3 and report["nonspeech_clips"] == 1
    assert 0.0 <= report["wer"] < 0.2
    assert report["nonspeech_rejected_share"] == 1.0
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 4


def test_eval_without_manifest(tmp_path: Path) -> None:
    assert run(["eval", "confidence", str(tmp_path)]) == 2


def test_eval_leaves_out_clips_it_cannot_read_and_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_set(tmp_path, [("fsdd/7_nicolas_2.wav", "seven", "speech")])
    (tmp_path / "broken.wav").write_bytes(b"RIFF1234WAVEjunk")
    with (tmp_path / "manifest.tsv").open("a") as fh:
        fh.write("missing.wav\thello\tspeech\nbroken.wav\t\tnonspeech\n")
    assert run(["eval", "confidence", str(tmp_path)]) == 1
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert report["clips"] == 1 and report["speech_clips"] == 1  # the readable clip is still evaluated
    assert [u["relpath"] for u in report["unreadable"]] == ["missing.wav", "broken.wav"]
    assert "FileNotFoundError" in report["unreadable"][0]["error"]
    assert "2 clip(s) could not be read" in out.err


def test_eval_with_an_unusable_manifest_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "manifest.tsv").write_text("file\ttext\na.wav\thello\n")
    assert run(["eval", "confidence", str(tmp_path)]) == 2
    assert "no 'relpath' column (columns: file, text)" in capsys.readouterr().err


def test_manifest_columns_and_kinds_are_read_leniently(tmp_path: Path) -> None:
    from audio.tools.eval_confidence import read_manifest

    (tmp_path / "manifest.tsv").write_bytes(
        "\ufeffRelPath \tTranscript\tKind\r\n"
        "a.wav\t Hello there. \tSpeech\r\n"
        "\t\t\r\n"
        "b.wav\t\t\r\n"
        "c.wav\tgood night\t\r\n".encode()
    )
    rows = read_manifest(tmp_path)
    assert [(r["relpath"], r["transcript"], r["kind"]) for r in rows] == [
        ("a.wav", "Hello there.", "speech"),
        ("b.wav", "", "nonspeech"),  # no kind: a clip without a transcript is non-speech
        ("c.wav", "good night", "speech"),
    ]


def test_fit_writes_both_calibrations_from_one_decode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from audio.hearing.confidence import CROSS_FEATURE_NAMES, FEATURE_NAMES
    from audio.tools.eval_confidence import fit_calibration, rows_from_jsonl
    from audio.tools.eval_confidence import main as eval_main

    data = tmp_path / "set"
    make_set(
        data,
        [
            ("fsdd/4_jackson_1.wav", "four", "speech"),
            ("fsdd/5_theo_2.wav", "five", "speech"),
            ("fsdd/7_nicolas_2.wav", "seven", "speech"),
            ("jfk/jfk.flac", JFK, "speech"),
            ("nonspeech/processing.wav", "", "nonspeech"),
        ],
    )
    out = tmp_path / "cal"
    out.mkdir()
    assert eval_main(["fit", str(data), "--out-dir", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    with_check = json.loads((out / "confidence_calibration.json").read_text())
    single = json.loads((out / "confidence_calibration_single.json").read_text())
    assert tuple(with_check["names"]) == FEATURE_NAMES + CROSS_FEATURE_NAMES
    assert tuple(single["names"]) == FEATURE_NAMES
    rows = rows_from_jsonl(data / "results.jsonl") + rows_from_jsonl(data / "results_direct.jsonl")
    assert all(r.features["cross_checked"] for r in rows if r.features)
    assert not (data / "results_single.jsonl").exists()  # one decode serves both
    # The calibration for devices with the check off: the same rows without the cross_* features.
    assert json.loads(fit_calibration(rows, cross=False).to_json()) == single
    assert json.loads(fit_calibration(rows, cross=True).to_json()) == with_check


def test_bench_stt_prints_both_paths_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["bench", "stt", "--limit", "2", "--baseline-beams", "1"]) == 0
    out = capsys.readouterr().out
    # The baseline runs on its own model with every core (its fastest), ours on the configured threads.
    assert f"threads: ours {HearingSettings().stt_threads}, baseline {os.cpu_count()}" in out
    for label in ("+ cross-check", ", no cross-check", "faster-whisper transcribe() beam 1"):
        assert f"{label}" in out and "median" in out
    assert out.count(" vs faster-whisper transcribe() beam 1: median ") == 2


def test_bench_with_an_unusable_set_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["bench", "stt", "--dir", str(tmp_path)]) == 2
    assert "manifest.tsv" in capsys.readouterr().err
    (tmp_path / "manifest.tsv").write_text("relpath\ttranscript\tkind\nmissing.wav\thello there\tspeech\n")
    assert run(["bench", "stt", "--dir", str(tmp_path)]) == 2  # its one clip cannot be read
    assert "no 1–8 s utterances found" in capsys.readouterr().err


def stage_rows(out: str) -> dict[str, tuple[int, int]]:
    """The stage table ``bench stt --stages`` printed: name → (median ms, p90 ms)."""
    table = out[out.index("stage (alone, on one thread)") :].splitlines()[1:]
    rows = {}
    for line in table:
        parts = line.split()
        if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].isdigit():
            rows[line[:36].strip()] = (int(parts[-2]), int(parts[-1]))
    return rows


def test_bench_stt_stages_times_each_stage_and_the_floor_they_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["bench", "stt", "--limit", "2", "--baseline-beams", "1", "--pause-ms", "0", "--stages"]) == 0
    out = capsys.readouterr().out
    rows = stage_rows(out)
    beam = f"beam {HearingSettings().stt_beam_size}"
    names = ["encoder", "greedy", beam, "cross-check", "voice probability", "end-of-turn model"]
    assert list(rows) == [*names, "whole decode (wall, as run)"]
    assert all(median > 0 for median, _ in rows.values()), rows  # each stage really ran
    # What the encoder and the greedy pass (run one after the other in the whole decode) take alone
    # is most of the decode, not the few ms of the calling thread's CPU while CTranslate2 works.
    whole = rows["whole decode (wall, as run)"][0]
    assert 0.3 * whole <= rows["encoder"][0] + rows["greedy"][0] <= 1.5 * whole, rows
    # The floor is the pause plus the summed stage medians over the cores.
    summed = sum(rows[n][0] for n in names)
    floor = next(line for line in out.splitlines() if line.startswith("summed CPU per question"))
    total = int(floor.split("summed CPU per question: ")[1].split(" ms")[0])
    assert abs(total - summed) <= len(names)  # printed medians are rounded
    s = HearingSettings()
    assert "after the last word" in floor and f"{s.turn_question_ms} + {total}/" in floor
    assert f"never before the {s.turn_floor_ms} ms pause" in floor and s.turn_floor_ms == s.turn_hold_ms


def test_bench_stt_stages_leave_out_what_is_off(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "stt", "--limit", "1", "--baseline-beams", "1", "--pause-ms", "0", "--stages"]
    assert run([*argv, "--beam-size", "1", "--cross-check-model", "off"]) == 0
    rows = stage_rows(capsys.readouterr().out)
    assert list(rows) == [
        "encoder",
        "greedy",
        "voice probability",
        "end-of-turn model",
        "whole decode (wall, as run)",
    ]


@pytest.mark.parametrize("rounds", ["0", "-1", "two"])
def test_bench_turns_wants_at_least_one_round(
    rounds: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        run(["bench", "turns", str(tmp_path), "--rounds", rounds])
    assert exc.value.code == 2 and "--rounds" in capsys.readouterr().err


def test_bench_turns_extract_with_a_missing_turn_model_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from audio.hearing import turn_model

    missing = tmp_path / "no-such-smart-turn.onnx"
    monkeypatch.setattr(turn_model, "default_model_path", lambda: missing)
    make_set(tmp_path, [("jfk/jfk.flac", JFK, "speech")])
    with pytest.raises(SystemExit) as exc:
        run(["bench", "turns", str(tmp_path), "--no-piper", "--extract", str(tmp_path / "asks.json")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "hearing.turn_model" in err and str(missing) in err
    assert not (tmp_path / "asks.json").exists()


def test_the_stages_floor_is_the_work_after_the_question_or_the_hold_whichever_is_later(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``print_stages``: 30 + 400/2 = 230 ms of work comes before the 240 ms hold (the floor is the
    hold); 30 + 600/2 = 330 ms after it (the floor is the work)."""
    from audio.tools.bench_stages import StageTable, print_stages

    for cpu, work, floor in ((400.0, 230, 240), (600.0, 330, 330)):
        print_stages(StageTable({"encoder": [cpu]}, [cpu]), 30, 240, cores=2)
        line = capsys.readouterr().out.splitlines()[-1]
        assert f"30 + {cpu:.0f}/2 = {work} ms after the last word" in line
        assert f"never before the 240 ms pause: {floor} ms" in line
