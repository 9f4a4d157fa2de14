"""Int8 weights stored as uint8 (``audio.unsigned_int8``): the same numbers, computed exactly by
onnxruntime on every CPU -- where the signed weights' kernels saturate (x86 without VNNI) and where
they do not -- and prepared once on disk by a child, never in the daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audio import prepared_models
from audio.edges.wav import FloatArray, load_audio
from audio.hearing.turn_model import SmartTurnModel, TurnFeatures, default_model_path
from audio.onnx_sessions import session_options
from audio.unsigned_int8 import cpu_flags, make_unsigned, shipped_because, wants_unsigned
from tests.audio.conftest import HEARING_SPEECH_DIR

K, N = 64, 8
SX, SW = 1 / 255, 0.01
"""The toy model's input scale (u8 0..255 over 0..1) and weight scale."""


def _qdq_matmul(weights: np.ndarray) -> Any:
    """X (1, K) float -> Q/DQ (u8) -> MatMul with DQ(int8 ``weights``) -> Q/DQ (u8): what
    onnxruntime fuses into one integer matrix product, as in Smart Turn."""
    from onnx import TensorProto, helper, numpy_helper

    out_scale = 2 * K * 255 * 128 * SX * SW / 255
    consts: dict[str, np.ndarray] = {
        "sx": np.array(SX, np.float32),
        "zx": np.array(0, np.uint8),
        "W": weights,
        "sw": np.array(SW, np.float32),
        "zw": np.array(0, np.int8),
        "so": np.array(out_scale, np.float32),
        "zo": np.array(128, np.uint8),
    }
    node = helper.make_node
    nodes = [
        node("QuantizeLinear", ["X", "sx", "zx"], ["Xq"]),
        node("DequantizeLinear", ["Xq", "sx", "zx"], ["Xd"]),
        node("DequantizeLinear", ["W", "sw", "zw"], ["Wd"]),
        node("MatMul", ["Xd", "Wd"], ["Y"]),
        node("QuantizeLinear", ["Y", "so", "zo"], ["Yq"]),
        node("DequantizeLinear", ["Yq", "so", "zo"], ["Out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_matmul",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("Out", TensorProto.FLOAT, [1, N])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), out_scale


def _run(model: Any, feeds: dict[str, np.ndarray], optimised: bool = True) -> np.ndarray:
    import onnxruntime as ort

    opts = session_options(1)
    if not optimised:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = model if isinstance(model, (str, Path)) else model.SerializeToString()
    session = ort.InferenceSession(str(source) if isinstance(source, Path) else source, sess_options=opts)
    return np.asarray(session.run(None, feeds)[0])


def test_unsigned_weights_give_the_exact_integer_product_where_signed_ones_may_saturate() -> None:
    """Full-scale inputs (u8 255) times weights of 127 and -128: every pair of products is 64,770
    or -65,280, outside int16. The unsigned model's output is the exact integer product on any CPU;
    the signed one's is too with VNNI or on ARM, and half of it on an AVX2-only x86 (where this
    test was written: 41.1 for 81.6)."""
    rng = np.random.default_rng(0)
    weights = rng.integers(-128, 128, (K, N)).astype(np.int8)
    weights[:, 0], weights[:, 1] = 127, -128
    signed, out_scale = _qdq_matmul(weights)
    unsigned, _ = _qdq_matmul(weights)
    assert make_unsigned(unsigned) == 1
    x = np.ones((1, K), np.float32)
    exact = (np.full((1, K), 255, np.int64) @ weights.astype(np.int64)) * SX * SW
    exact_q = (np.clip(np.round(exact / out_scale) + 128, 0, 255) - 128) * out_scale
    quantum = 1.01 * out_scale  # a tie at -127.5 quanta rounds either way
    got = _run(unsigned, {"X": x})
    assert np.max(np.abs(got - exact_q)) <= quantum and got[0, 0] > 80, (got, exact_q)  # saturated: 41
    # The signed model as the reference runs it (no fusion: DequantizeLinear, then a float MatMul).
    assert np.max(np.abs(_run(signed, {"X": x}, optimised=False) - exact_q)) <= quantum


def test_matmul_integer_weights_without_a_zero_point_get_one() -> None:
    """A dynamically quantised product (``MatMulInteger``, no zero points): the int8 B becomes uint8
    + 128 with an explicit zero point of 128, and the int32 result is the same."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])],
        "mmi",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [1, K])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [1, N])],
        [numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    a = rng.integers(0, 256, (1, K)).astype(np.uint8)
    assert make_unsigned(model) == 1
    inputs = list(model.graph.node[0].input)
    assert inputs[2] == "" and inputs[3]  # no A zero point; B's is 128
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert inits["B"].dtype == np.uint8 and int(inits[inputs[3]]) == 128
    assert np.array_equal(_run(model, {"A": a}), a.astype(np.int64) @ b.astype(np.int64))


def _jfk() -> FloatArray:
    from faster_whisper import decode_audio

    return np.asarray(decode_audio(str(HEARING_SPEECH_DIR / "jfk/jfk.flac"), 16000), np.float32)


def test_smart_turns_unsigned_form_is_the_same_model() -> None:
    """Every int8 weight of Smart Turn made unsigned (31 tensors), none left signed, and the model
    run without onnxruntime's integer kernels (each DequantizeLinear, then float) answers exactly
    as the shipped one on a real recording."""
    import onnx
    from onnx import TensorProto

    shipped, unsigned = onnx.load(str(default_model_path())), onnx.load(str(default_model_path()))
    assert make_unsigned(unsigned) == 31
    assert not any(i.data_type == TensorProto.INT8 for i in unsigned.graph.initializer)
    feats = {"input_features": TurnFeatures()(_jfk())[np.newaxis]}
    assert np.array_equal(_run(unsigned, feats, optimised=False), _run(shipped, feats, optimised=False))


def _clips() -> list[FloatArray]:
    """JFK's speech ending every 0.25 s from 1 s to 11 s, and twenty spoken digits."""
    jfk = _jfk()
    clips = [jfk[: int(t * 16000)] for t in np.arange(1.0, 11.01, 0.25)]
    digits = sorted((HEARING_SPEECH_DIR / "fsdd").glob("*.wav"))[:20]
    return clips + [load_audio(p, 16000) for p in digits]


def test_the_runtime_model_follows_the_models_own_arithmetic_on_real_speech() -> None:
    """The model as the device loads it (``auto``: unsigned on x86) against the model's own
    arithmetic (no integer kernels) on 61 windows of real speech: within 0.06 on average and 0.15
    at the 90th percentile (here: 0.03 / 0.09; the signed weights on an AVX2-only x86 0.08 / 0.22,
    up to 0.70 on one window)."""
    import onnxruntime as ort

    opts = session_options(1)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    reference = ort.InferenceSession(str(default_model_path()), sess_options=opts)
    features, model = TurnFeatures(), SmartTurnModel(default_model_path())
    model.load()
    clips = _clips()
    want = np.array(
        [float(reference.run(None, {"input_features": features(c)[None]})[0].ravel()[0]) for c in clips]
    )
    got = np.array([model.predict(c).probability for c in clips])
    gap = np.abs(got - want)
    assert gap.mean() < 0.06 and np.quantile(gap, 0.9) < 0.15, (gap.mean(), np.quantile(gap, 0.9))


_AVX2 = frozenset(["fpu", "sse4_2", "avx", "avx2", "fma"])
_SKYLAKE_X = _AVX2 | {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}
_CASCADE_LAKE = _SKYLAKE_X | {"avx512_vnni"}
_ALDER_LAKE = _AVX2 | {"avx_vnni"}
_SAPPHIRE_RAPIDS = _CASCADE_LAKE | {"avx_vnni", "amx_tile", "amx_int8", "amx_bf16"}


@pytest.mark.parametrize(
    ("choice", "machine", "flags", "unsigned"),
    [
        ("auto", "x86_64", _AVX2, True),
        ("auto", "AMD64", _AVX2, True),
        ("auto", "x86_64", _SKYLAKE_X, True),  # AVX-512 without VNNI saturates too
        ("auto", "x86_64", _SKYLAKE_X | {"avx_vnni"}, True),  # the AVX-512 kernel wins, and saturates
        ("auto", "x86_64", _CASCADE_LAKE, False),
        ("auto", "x86_64", _ALDER_LAKE, False),
        ("auto", "x86_64", _SAPPHIRE_RAPIDS, False),
        ("auto", "x86_64", frozenset(), True),  # flags unknown: the form exact everywhere
        ("auto", "aarch64", frozenset(), False),
        ("auto", "armv7l", frozenset(), False),
        ("unsigned", "aarch64", frozenset(), True),
        ("unsigned", "x86_64", _CASCADE_LAKE, True),
        ("signed", "x86_64", _AVX2, False),
    ],
)
def test_auto_makes_the_weights_unsigned_where_the_signed_kernels_saturate(
    choice: Any, machine: str, flags: frozenset[str], unsigned: bool
) -> None:
    assert wants_unsigned(choice, machine, flags) is unsigned


@pytest.mark.parametrize(
    ("choice", "machine", "flags", "why"),
    [
        ("signed", "x86_64", _AVX2, "= signed"),
        ("auto", "aarch64", frozenset(), "not x86"),
        ("auto", "x86_64", _CASCADE_LAKE, "VNNI"),
        ("auto", "x86_64", _AVX2, "could not be prepared"),
        ("unsigned", "aarch64", frozenset(), "could not be prepared"),
    ],
)
def test_the_doctor_says_why_the_file_runs_as_shipped(
    choice: Any, machine: str, flags: frozenset[str], why: str
) -> None:
    assert why in shipped_because(choice, machine, flags)


def test_the_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 avx512f avx512_vnni\n\n"
        "processor\t: 1\nflags\t\t: fpu\n"
    )
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512f", "avx512_vnni"}
    assert cpu_flags(tmp_path / "missing") == frozenset()
    (tmp_path / "bare").write_text("processor\t: 0\n")
    assert cpu_flags(tmp_path / "bare") == frozenset()


_LOAD = """
import json, sys
from pathlib import Path
from audio.hearing.turn_model import SmartTurnModel
model = SmartTurnModel(Path(sys.argv[1]), sys.argv[2])
model.load()
print(json.dumps({"loaded": str(model.loaded_path), "onnx": "onnx" in sys.modules}))
"""


def _load_in_child(model: Path, weights: str, cache: Path) -> dict[str, Any]:
    env = dict(os.environ, ROBOT_FACE_CACHE_DIR=str(cache), HOME=str(cache), OMP_NUM_THREADS="1")
    env.pop("CACHE_DIRECTORY", None)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(model), weights],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_models_unsigned_form_is_prepared_once_on_disk_and_loaded_without_onnx(tmp_path: Path) -> None:
    """A model of the user's own (``hearing.turn_model``): its unsigned form is written once into the
    cache directory by a child, the daemon loads it without importing onnx, and a second start finds
    it; "signed" loads the file itself."""
    source = tmp_path / "src" / "my-turn.onnx"
    source.parent.mkdir()
    shutil.copyfile(default_model_path(), source)
    cache = tmp_path / "cache"
    first = _load_in_child(source, "unsigned", cache)
    made = list((cache / "smart-turn").glob("my-turn.*.u8w.onnx"))
    assert len(made) == 1 and first == {"loaded": str(made[0]), "onnx": False}
    stamp = made[0].stat().st_mtime_ns
    assert _load_in_child(source, "unsigned", cache)["loaded"] == str(made[0])
    assert made[0].stat().st_mtime_ns == stamp, "the second start prepared the model again"
    assert _load_in_child(source, "signed", cache) == {"loaded": str(source), "onnx": False}


def test_no_writable_cache_runs_the_model_as_shipped_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "my-turn.onnx"
    shutil.copyfile(default_model_path(), source)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(prepared_models, "cache_dirs", lambda kind: [blocker / kind])
    model = SmartTurnModel(source, "unsigned")
    model.load()
    assert model.loaded_path == source
    assert "hearing.turn_int8_weights" in caplog.text and "a-file" in caplog.text
    assert 0.0 <= model.predict(np.zeros(16000, np.float32)).probability <= 1.0


def test_the_fetcher_prepares_the_packaged_model_and_drops_an_older_preparation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audio.hearing import turn_model
    from audio.tools import fetch_models

    shipped = tmp_path / "share" / "smart-turn"
    shipped.mkdir(parents=True)
    source = shipped / "smart-turn-v3.2-cpu.onnx"
    shutil.copyfile(default_model_path(), source)
    stale = shipped / "smart-turn-v3.2-cpu.0123456789ab.u8w.onnx"
    stale.write_bytes(b"an older preparation")
    monkeypatch.setattr(fetch_models, "default_turn_model_path", lambda: source)
    monkeypatch.setattr(prepared_models, "shipped_dir", lambda kind: shipped)
    monkeypatch.setattr("platform.machine", lambda: "aarch64")
    assert fetch_models.prepare_packaged_turn_model() == 0
    assert [p.name for p in shipped.glob("*.u8w.onnx")] == [stale.name]  # on ARM: nothing prepared
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    monkeypatch.setattr("audio.unsigned_int8.cpu_flags", lambda: _ALDER_LAKE)
    assert fetch_models.prepare_packaged_turn_model() == 0
    assert [p.name for p in shipped.glob("*.u8w.onnx")] == [stale.name]  # with VNNI: nothing either
    monkeypatch.setattr("audio.unsigned_int8.cpu_flags", lambda: _AVX2)
    assert fetch_models.prepare_packaged_turn_model() == 0
    made = sorted(p.name for p in shipped.glob("*.u8w.onnx"))
    assert len(made) == 1 and made[0] != stale.name
    monkeypatch.setattr(turn_model, "default_model_path", lambda: source)
    model = SmartTurnModel(source, "unsigned")
    model.load()
    assert model.loaded_path == shipped / made[0]
