"""onnxruntime sessions made one way for every ONNX model of the runtime (Moonshine, Piper, Smart Turn).

onnxruntime's defaults suit a server: a CPU memory arena that keeps the largest activations it has
ever needed (and grows in chunks), memory patterns planned per input shape, and a thread pool per
session as large as the machine. Our models run on a small board, one utterance or one sentence at a
time, with inputs of every length. ``cpu_session`` turns the arena and the memory patterns off (an
activation is freed when the run ends: ``robot-face bench footprint`` measured Piper at ~85 MB
instead of ~140 MB after a few sentences, the same speed within noise) and gives the session the
threads it is told, none more.

    from audio.onnx_sessions import cpu_session
    session = cpu_session(path_or_bytes, threads=1)

``lean=False`` gives onnxruntime's own defaults (only the thread counts set): the baseline the
footprint benchmark prints beside ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROVIDERS = ("CPUExecutionProvider",)


def session_options(threads: int = 1, *, lean: bool = True) -> Any:
    """``onnxruntime.SessionOptions`` with ``threads`` intra-op threads and one inter-op thread;
    ``lean``: no CPU memory arena, no memory patterns."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3  # errors only: onnxruntime's warnings are about its own graph rewrites
    if lean:
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
    return opts


def cpu_session(model: str | Path | bytes, threads: int = 1, *, lean: bool = True) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU for ``model`` (a path, or the model's bytes).

    Prefer a path: bytes are a second copy of the weights in this process while the session loads,
    and the heap rarely gives that memory back."""
    import onnxruntime as ort

    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, sess_options=session_options(threads, lean=lean), providers=PROVIDERS)
