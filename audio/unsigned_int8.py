"""Int8 weights stored as uint8 (the same values), so that x86 CPUs without VNNI run them exactly.

A quantised ONNX model multiplies uint8 activations by int8 weights ("U8S8"). On x86-64 with AVX2
(or AVX-512 without VNNI) onnxruntime's U8S8 kernels use ``VPMADDUBSW``, which adds two u8·s8
products into a saturating int16: large pairs are clipped, and the model computes something else
(onnxruntime's quantisation guide, its issue #6004 "Incorrect INT8 quantized BERT model prediction
on AVX2 only CPU" and OpenVINO's "saturation issue" page say the same). Smart Turn's
probability on an AVX2-only EPYC differed from the model's own (QDQ) arithmetic by 0.13 on average
and up to 0.81 over 120 real clips, 19 verdicts on the other side of 0.5; "Apple, river, chair."
said alone got 0.61 instead of 0.98. With VNNI (``VPDPBUSDS``: four products summed in 32 bits),
with AMX and on ARM the same kernels are exact, and faster than the unsigned ones, which take the
widening path there too. Which kernel runs follows onnxruntime's own dispatch (MLAS
``platform.cpp``): AVX-512 (F, BW, DQ, VL) runs its AVX-512 kernel, exact only with ``avx512_vnni``;
without AVX-512 an ``avx_vnni`` CPU (Alder Lake and later) runs the exact AVX-VNNI kernel; every
AMX CPU has ``avx512_vnni``. ``auto`` reads that from the CPU's flags (``/proc/cpuinfo``).

The remedy changes no number of the model: every int8 weight ``w`` with zero point ``z`` becomes the
uint8 ``w + 128`` with zero point ``z + 128``, so ``(w - z) * scale`` is the same. onnxruntime then
runs U8U8 kernels, which widen to 16 bits before they multiply and do not saturate (about 10 % slower
here than the saturating ones). The rewrite needs the ``onnx`` package, so it runs in a child that
writes the prepared file once (``audio.prepared_models``); the daemon loads that file by path.

``python -m audio.unsigned_int8 SOURCE.onnx DEST.onnx`` is the child's command.
"""

from __future__ import annotations

import logging
import platform
from pathlib import Path
from typing import Any, Literal

from audio import prepared_models

_LOGGER = logging.getLogger(__name__)

Int8Weights = Literal["auto", "unsigned", "signed"]
INT8_WEIGHTS: tuple[Int8Weights, ...] = ("auto", "unsigned", "signed")
"""``auto``: unsigned on x86-64 CPUs whose signed kernels saturate (no VNNI, or flags that cannot be
read), as shipped elsewhere; ``unsigned``: always the prepared file; ``signed``: always the model as
shipped."""

TAG = "u8w"
PREPARE_TIMEOUT_S = 120.0
"""The longest a child may take to prepare one model (Smart Turn takes ~1 s)."""
_X86 = ("x86_64", "amd64", "i386", "i686", "x86")
_AVX512_CORE = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})
CPUINFO = Path("/proc/cpuinfo")


def _x86(machine: str | None) -> bool:
    """Whether ``machine`` (default: this one) is an x86 CPU."""
    return (machine if machine is not None else platform.machine()).lower() in _X86


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The first processor's feature flags in ``cpuinfo`` (Linux); empty when it cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def signed_kernels_exact(flags: frozenset[str]) -> bool:
    """Whether onnxruntime's u8·s8 kernels are exact on an x86 CPU with ``flags`` (its dispatch: the
    AVX-512 kernel when AVX-512 core is there, exact with ``avx512_vnni``; else AVX-VNNI's)."""
    if flags >= _AVX512_CORE:
        return "avx512_vnni" in flags
    return "avx_vnni" in flags


def wants_unsigned(
    choice: Int8Weights, machine: str | None = None, flags: frozenset[str] | None = None
) -> bool:
    """Whether ``choice`` loads the unsigned form on ``machine`` with CPU ``flags`` (default: this one's)."""
    if choice != "auto":
        return choice == "unsigned"
    if not _x86(machine):
        return False
    return not signed_kernels_exact(cpu_flags() if flags is None else flags)


def shipped_because(
    choice: Int8Weights, machine: str | None = None, flags: frozenset[str] | None = None
) -> str:
    """Why ``choice`` runs the file as shipped on ``machine`` with ``flags`` (default: this one's):
    for ``robot-face doctor``; when it wants the unsigned form, the preparation failed."""
    if choice == "signed":
        return "hearing.turn_int8_weights = signed"
    if wants_unsigned(choice, machine, flags):
        return "its unsigned form could not be prepared: the log says why"
    if not _x86(machine):
        return "exact on this CPU (not x86)"
    return "exact on this CPU (VNNI)"


def make_unsigned(model: Any) -> int:
    """Rewrite the int8 weights of ``model`` (an ``onnx.ModelProto``) in place as uint8 + 128, with
    their zero points + 128: the weights of ``DequantizeLinear`` (QDQ models) and the B inputs of
    ``MatMulInteger`` / ``ConvInteger`` (dynamically quantised ones; a missing zero point, 0, becomes
    an explicit 128). Returns how many weight tensors changed."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    done: set[str] = set()

    def shift(name: str) -> None:
        if name in done:
            return
        tensor = inits[name]
        values = numpy_helper.to_array(tensor).astype(np.int16) + 128
        tensor.CopyFrom(numpy_helper.from_array(values.astype(np.uint8), name))
        done.add(name)

    changed = 0
    for node in graph.node:
        if node.op_type == "DequantizeLinear":
            weight, zp_at = 0, 2
        elif node.op_type in ("MatMulInteger", "ConvInteger"):
            weight, zp_at = 1, 3
        else:
            continue
        if len(node.input) <= weight or node.input[weight] not in inits:
            continue
        name = node.input[weight]
        if inits[name].data_type != TensorProto.INT8 and name not in done:
            continue
        zp = node.input[zp_at] if len(node.input) > zp_at and node.input[zp_at] else ""
        if zp and zp not in inits:
            continue  # a computed zero point: leave the node as it is
        if name not in done:
            changed += 1
        shift(name)
        if zp:
            shift(zp)
        else:
            zp = f"{name}_u8w_zero_point"
            if zp not in inits:
                inits[zp] = numpy_helper.from_array(np.array(128, np.uint8), zp)
                graph.initializer.append(inits[zp])
            while len(node.input) < zp_at:
                node.input.append("")  # optional inputs before the zero point stay absent
            if len(node.input) == zp_at:
                node.input.append(zp)
            else:
                node.input[zp_at] = zp
    return changed


def unsigned_name(source: Path) -> str:
    return prepared_models.prepared_name(source, TAG)


def prepare(source: Path, folder: Path, timeout: float = PREPARE_TIMEOUT_S) -> Path:
    """Write the unsigned form of ``source`` into ``folder`` in a child process; its path. Raises
    ``OSError`` when ``folder`` cannot be written and ``RuntimeError`` when the child failed."""
    dest = folder / unsigned_name(source)
    done = prepared_models.run_child("audio.unsigned_int8", source, dest, timeout)
    if done.returncode != 0:
        raise RuntimeError(
            f"preparing {source.name} with unsigned weights failed: {done.stderr.strip()[-400:]}"
        )
    return dest


def unsigned_model(source: Path, kind: str) -> Path:
    """The unsigned form of ``source``: found (next to the packaged models of ``kind`` or in a cache
    directory), or prepared now in the first writable cache directory. Raises ``RuntimeError`` naming
    every place tried when it cannot be had."""
    folders = prepared_models.cache_dirs(kind)
    found = prepared_models.find_prepared(source, TAG, [prepared_models.shipped_dir(kind), *folders])
    if found is not None:
        return found
    made, problems = prepared_models.prepare_in_first(folders, lambda folder: prepare(source, folder))
    if made is None:
        raise RuntimeError("; ".join(problems))
    return made


def _rewrite(source: Path, dest: Path) -> int:
    """The child: write ``source`` with unsigned weights into ``dest`` atomically; the exit code."""
    proto = prepared_models.load_onnx(source)
    if proto is None:
        return 1
    changed = make_unsigned(proto)
    prepared_models.write_atomically(dest, proto.SerializeToString())
    print(f"{changed} int8 weight tensors made unsigned in {dest.name}")
    return 0


if __name__ == "__main__":
    prepared_models.child_main("audio.unsigned_int8", _rewrite)
