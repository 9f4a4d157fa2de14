"""Piper voices patched to return phoneme alignments, made once on disk and loaded by path.

Lip-sync needs Piper's phoneme/sample alignments, which a voice exported without them gives only
after ``piper.patch_voice_with_alignment.add_alignment_output`` rewrote its graph. Doing that at
every start meant importing the ``onnx`` package into the daemon and holding the model three times
at once (the parsed graph, its serialised bytes, onnxruntime's copy): ~90 MB the heap kept after the
session was built. Instead the patched model is written once, by a child process (its memory goes
back to the system when it exits), to a file that onnxruntime then loads like any voice:

- ``python -m audio.fetch_models`` (the bootstrap and the Pi installer) prepares the packaged voice
  in ``<venv>/share/robot-face/voices``;
- any other voice is prepared on its first load into the first writable cache directory
  (``$ROBOT_FACE_CACHE_DIR``, systemd's ``$CACHE_DIRECTORY``, ``~/.cache/robot-face/voices``).

A file's name carries the source's name, size and modification time, so an edited voice is prepared
again. ``python -m audio.speaking.aligned_voice SRC DST`` is the child's command.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from audio import prepared_models

_LOGGER = logging.getLogger(__name__)

KIND = "voices"
"""The folder (under the environment's share and the cache directories) of prepared voices."""
TAG = "aligned"
PATCH_TIMEOUT_S = 120.0
"""The longest a child may take to patch one voice (the packaged one takes ~2 s)."""
EXIT_NOT_PATCHABLE = 3
"""The child's exit code when the graph cannot be patched (already patched, or no Ceil tensor)."""


def shipped_dir() -> Path:
    """Where ``audio.fetch_models`` prepares the packaged voice (inside the environment)."""
    return prepared_models.shipped_dir(KIND)


def cache_dirs() -> list[Path]:
    """Writable places for voices prepared at run time, in order of preference."""
    return prepared_models.cache_dirs(KIND)


def aligned_name(source: Path) -> str:
    """The prepared file's name for ``source`` (changes when the source file changes)."""
    return prepared_models.prepared_name(source, TAG)


def find_aligned(source: Path) -> Path | None:
    """A prepared aligned model for ``source`` that already exists, if any."""
    return prepared_models.find_prepared(source, TAG, [shipped_dir(), *cache_dirs()])


def prepare(source: Path, folder: Path, timeout: float = PATCH_TIMEOUT_S) -> Path | None:
    """Write the aligned model of ``source`` into ``folder`` in a child process; its path, or None
    when the voice cannot be patched (it may already return alignments: load ``source`` itself).
    Raises ``OSError`` when ``folder`` cannot be written and ``RuntimeError`` when the child failed."""
    dest = folder / aligned_name(source)
    done = prepared_models.run_child("audio.speaking.aligned_voice", source, dest, timeout)
    if done.returncode == EXIT_NOT_PATCHABLE:
        _LOGGER.debug("not patching %s for alignments: %s", source.name, done.stderr.strip())
        return None
    if done.returncode != 0:
        raise RuntimeError(f"patching {source.name} for alignments failed: {done.stderr.strip()[-400:]}")
    return dest


def aligned_model(source: Path) -> Path | None:
    """The aligned model for ``source``: found, or prepared now in the first writable cache
    directory; None when it cannot be had (then the voice speaks with loudness lip-sync)."""
    found = find_aligned(source)
    if found is not None:
        return found
    made, problems = prepared_models.prepare_in_first(cache_dirs(), lambda folder: prepare(source, folder))
    if made is not None or not problems:  # None without a problem: the voice aligns already
        return made
    _LOGGER.warning(
        "no phoneme alignments for %s (lip-sync follows loudness): %s", source.name, "; ".join(problems)
    )
    return None


def _patch(source: Path, dest: Path) -> int:
    """The child: patch ``source`` into ``dest`` atomically; the exit code."""
    proto = prepared_models.load_onnx(source)
    if proto is None:
        return 1
    try:
        from piper.patch_voice_with_alignment import add_alignment_output
    except ImportError as err:
        print(f"piper's alignment patcher will not import: {err}", file=sys.stderr)
        return 1
    try:
        add_alignment_output(proto)
    except ValueError as err:  # already patched, or no Ceil tensor
        print(err, file=sys.stderr)
        return EXIT_NOT_PATCHABLE
    prepared_models.write_atomically(dest, proto.SerializeToString())
    return 0


if __name__ == "__main__":
    prepared_models.child_main("audio.speaking.aligned_voice", _patch)
