"""Smart Turn's input and answers: faster-whisper's log-mel against pipecat's reference, the real model
on a real recording, and the start-up errors of a missing or corrupt model file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audio.edges.wav import FloatArray
from audio.hearing.stt import ModelUnavailable
from audio.hearing.turn_model import (
    N_FRAMES,
    N_MELS,
    WINDOW_SAMPLES,
    SmartTurnModel,
    TurnFeatures,
    default_model_path,
    model_window,
)
from audio.unsigned_int8 import wants_unsigned
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_noise, hearing_silence


# ---- the reference: pipecat's ``_whisper_features.compute_whisper_log_mel_features`` (1.14.0), the
# math of transformers' WhisperFeatureExtractor(chunk_length=8) with do_normalize=True, restated here
# in float64 so the library's float32 version is checked against it.
def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    f = np.atleast_1d(np.asarray(f, np.float64))
    mel = 3.0 * f / 200.0
    log = f >= 1000.0
    mel[log] = 15.0 + np.log(f[log] / 1000.0) * (27.0 / np.log(6.4))
    return mel


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.atleast_1d(np.asarray(m, np.float64))
    f = 200.0 * m / 3.0
    log = m >= 15.0
    f[log] = 1000.0 * np.exp(np.log(6.4) / 27.0 * (m[log] - 15.0))
    return f


def _reference_filters() -> np.ndarray:
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([8000.0]))[0], 82))
    fft = np.linspace(0, 8000, 201)
    slopes = edges[None, :] - fft[:, None]
    down = -slopes[:, :-2] / np.diff(edges)[:-1]
    up = slopes[:, 2:] / np.diff(edges)[1:]
    filt = np.maximum(0.0, np.minimum(down, up))
    return filt * (2.0 / (edges[2:82] - edges[:80]))[None, :]  # (201, 80), Slaney area norm


def reference_features(audio: FloatArray) -> np.ndarray:
    x = np.asarray(audio, np.float32)
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    padded = np.pad(x.astype(np.float64), (200, 200), mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, 400)[::160]
    power = np.abs(np.fft.rfft(frames * np.hanning(401)[:-1], axis=-1)) ** 2
    mel = np.log10(np.maximum(1e-10, _reference_filters().T @ power.T))[:, :-1]
    mel = np.maximum(mel, mel.max() - 8.0)
    return ((mel + 4.0) / 4.0).astype(np.float32)


def _jfk() -> FloatArray:
    from faster_whisper import decode_audio

    return np.asarray(decode_audio(str(HEARING_SPEECH_DIR / "jfk/jfk.flac"), 16000), np.float32)


@pytest.fixture(scope="module")
def turn_model() -> SmartTurnModel:
    model = SmartTurnModel(default_model_path())
    model.load()
    return model


def test_window_keeps_the_end_and_pads_the_front() -> None:
    short = np.ones(16000, np.float32)
    win = model_window(short)
    assert len(win) == WINDOW_SAMPLES and not win[: WINDOW_SAMPLES - 16000].any() and win[-16000:].all()
    long = np.arange(WINDOW_SAMPLES + 5, dtype=np.float32)
    assert model_window(long)[0] == 5.0 and model_window(long)[-1] == WINDOW_SAMPLES + 4


@pytest.mark.parametrize("kind", ["speech", "speech_end", "noise", "quiet"])
def test_faster_whisper_features_match_pipecats_reference(kind: str) -> None:
    jfk = _jfk()
    clip = {
        "speech": jfk[:WINDOW_SAMPLES],
        "speech_end": jfk[-3 * 16000 :],  # short: zero-padded at the front
        "noise": hearing_noise(5.0, -40.0),
        "quiet": jfk[16000 : 5 * 16000] * 0.01,
    }[kind]
    window = model_window(clip)
    ours = TurnFeatures()(clip)
    ref = reference_features(window)
    assert ours.shape == ref.shape == (N_MELS, N_FRAMES)
    # float32 STFT (library) vs float64 (reference) on a log-mel in [-1, 1.5]: measured <= 7e-6.
    assert float(np.max(np.abs(ours - ref))) < 1e-3
    assert float(np.mean(np.abs(ours - ref))) < 1e-5


def test_model_answer_is_the_same_on_either_features(turn_model: SmartTurnModel) -> None:
    import onnxruntime as ort

    assert turn_model.loaded_path is not None  # the file the model runs (its unsigned form on x86)
    sess = ort.InferenceSession(str(turn_model.loaded_path), providers=["CPUExecutionProvider"])
    clip = _jfk()
    ref = float(
        sess.run(None, {"input_features": reference_features(model_window(clip))[None]})[0].reshape(-1)[0]
    )
    ours = turn_model.predict(clip).probability
    assert abs(ours - ref) < 0.01


def test_the_session_keeps_no_memory_arena(turn_model: SmartTurnModel) -> None:
    # onnxruntime's arena kept ~33 MiB of activations after the first predictions (6 MiB without):
    # the same lean session as Piper's and Moonshine's; the answer is a default session's (above).
    opts = turn_model._session.get_session_options()
    assert not opts.enable_cpu_mem_arena and not opts.enable_mem_pattern
    assert opts.intra_op_num_threads == 1


def test_real_sentence_complete_and_cut_mid_sentence_unfinished(turn_model: SmartTurnModel) -> None:
    jfk = _jfk()  # "... ask not what your country can do for you, ask what you can do for your country."
    complete = turn_model.predict(np.concatenate([jfk, hearing_silence(0.2)]))
    cut = turn_model.predict(jfk[: int(3.6 * 16000)])  # "And so my fellow Americans, | ask not"
    # The signed int8 weights' kernels saturate on x86 CPUs without VNNI (an AMD EPYC with AVX2:
    # complete 0.32, cut 0.01; an Intel Xeon >= 0.5); the weights made unsigned (``auto`` on x86,
    # audio.unsigned_int8) run exactly everywhere: 0.83 on that EPYC.
    assert cut.probability < 0.5 <= complete.probability
    assert complete.probability > cut.probability + 0.2
    assert 0.0 < complete.cpu_ms < 2000.0


def test_missing_model_names_the_key_and_the_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable) as err:
        SmartTurnModel(tmp_path / "nope.onnx").load()
    assert "hearing.turn_model" in str(err.value) and "python -m audio.fetch_models" in str(err.value)


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file")
    with pytest.raises(ModelUnavailable) as err:
        SmartTurnModel(bad).load()
    assert "hearing.turn_model" in str(err.value) and "not a Smart Turn" in str(err.value)


def _wheel(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as whl:
        for name, data in members.items():
            whl.writestr(name, data)
    return buf.getvalue()


def test_fetch_takes_only_the_pinned_wheel_and_the_pinned_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audio.tools import fetch_models

    with pytest.raises(fetch_models.FetchError, match=r"pipecat-ai==1\.14\.0 wheel has SHA-256"):
        fetch_models.extract_turn_wheel(b"not the wheel", tmp_path)
    model_member, licence_member = fetch_models.TURN_WHEEL_MEMBERS
    wrong = _wheel({model_member: b"tampered", licence_member: b"BSD"})
    monkeypatch.setattr(fetch_models, "TURN_WHEEL_SHA256", fetch_models.hashlib.sha256(wrong).hexdigest())
    with pytest.raises(fetch_models.FetchError, match=r"smart-turn-v3\.2-cpu\.onnx has SHA-256"):
        fetch_models.extract_turn_wheel(wrong, tmp_path)
    real = default_model_path().read_bytes()
    good = _wheel({model_member: real, licence_member: b"BSD"})
    monkeypatch.setattr(fetch_models, "TURN_WHEEL_SHA256", fetch_models.hashlib.sha256(good).hexdigest())
    monkeypatch.setattr(fetch_models, "download_wheel", lambda requirement: good)
    assert fetch_models.fetch_turn(tmp_path / "st") is True
    assert fetch_models.turn_model_ok(tmp_path / "st" / "smart-turn-v3.2-cpu.onnx")
    assert fetch_models.fetch_turn(tmp_path / "st") is False  # already there
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == ["LICENSE", "smart-turn-v3.2-cpu.onnx"]


def test_corrupt_default_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from audio.hearing import turn_model

    fake = tmp_path / "smart-turn-v3.2-cpu.onnx"
    fake.write_bytes(default_model_path().read_bytes()[:1000])
    monkeypatch.setattr(turn_model, "default_model_path", lambda: fake)
    with pytest.raises(ModelUnavailable, match=r"corrupt.*fetch_models --force"):
        SmartTurnModel(fake).load()


def test_doctor_checks_the_turn_model(tmp_path: Path) -> None:
    from device.doctor.checks import check_turn_model

    assert check_turn_model("silence", "", deep=False).status == "ok"
    shallow = check_turn_model("smart_turn", "", deep=False)
    assert shallow.status == "ok" and "--deep" in shallow.detail
    deep = check_turn_model("smart_turn", "", deep=True)
    assert deep.status == "ok" and "runs" in deep.detail
    assert ("int8 weights unsigned" in deep.detail) is wants_unsigned("auto"), deep.detail
    signed = check_turn_model("smart_turn", "", deep=True, int8_weights="signed")
    assert signed.status == "ok" and "(as shipped: hearing.turn_int8_weights = signed)" in signed.detail
    missing = check_turn_model("smart_turn", str(tmp_path / "none.onnx"), deep=False)
    assert missing.status == "fail" and "hearing.turn_model" in missing.detail
    assert "fetch_models" in missing.fix
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"junk")
    broken = check_turn_model("smart_turn", str(bad), deep=True)
    assert broken.status == "fail" and "does not run" in broken.detail
