"""Build a held-out set of REAL household and animal sounds (non-speech only): WAVs + ``manifest.tsv``.

A robot at home hears pets, birds, kettles, vacuum cleaners and music; Whisper turns such sounds into
"Beep", "Let's go!" or "No!". The clips are the sound effects of Tux Paint's stamps (recordings of real
animals and objects) from the pinned Debian 12 package tuxpaint-stamps-default 2022.06.04-1 (GPL-2).
Only categories without human voices are taken (left out: symbols = spoken letters and numbers,
space = Apollo radio voices, town = road-sign clips with people, seasonal, military, faces, and every
``*_desc*`` file, which is a spoken description). The clips were not listened to one by one.

    .venv/bin/python scripts/build_household_sounds_set.py OUT_DIR [--cache DIR]

Writes OUT_DIR/<group>/<category>_<name>.wav and OUT_DIR/manifest.tsv (relpath, transcript = empty,
kind = nonspeech, source, license), in the same format as ``build_real_speech_sets.py``, so
``robot-face eval confidence OUT_DIR`` and ``python -m audio.tools.eval_confidence`` read it. Groups
(``crossval`` holds each out in turn): tux_animals, tux_home (household objects, food), tux_other
(music instruments, weather, vehicles).

Needs apt's package lists (``sudo apt-get update`` once on a fresh machine), ``dpkg-deb`` and ``sox``;
downloads 161 MB (kept and re-used with ``--cache DIR``, checked by SHA-256).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real_speech_sets as real  # the sibling script's helpers

PACKAGE = ("tuxpaint-stamps-default", "2022.06.04-1")
SHA256 = "6db6c1bfc870a47f1499d6203b083522eacb57c5f9c87d468f2e92eb6d9d5f34"
LICENSE = "GPL-2 (Tux Paint stamps)"
STAMPS = Path("usr/share/tuxpaint/stamps")
GROUPS: dict[str, str] = {
    "animals": "tux_animals",
    "household": "tux_home",
    "food": "tux_home",
    "hobbies/music": "tux_other",
    "naturalforces": "tux_other",
    "vehicles": "tux_other",
}
"""Stamp category folder -> output group."""


def fetch(debdir: Path) -> Path:
    """The pinned .deb in ``debdir`` (downloaded with apt-get unless a good copy is there)."""
    name, version = PACKAGE
    filename = f"{name}_{version}_all.deb"
    path = debdir / filename
    if not (path.is_file() and real.sha256(path) == SHA256):
        res = real.run(["apt-get", "download", f"{name}={version}"], cwd=debdir)
        if res.returncode != 0 or not path.is_file():
            raise real.BuildError(
                f"apt-get could not download {name}={version}:\n{real.tail(res.stdout + res.stderr)}\n"
                "On a fresh machine run 'sudo apt-get update' first (Debian 12 bookworm's version)."
            )
    if real.sha256(path) != SHA256:
        raise real.BuildError(f"{path} does not have the pinned SHA-256 {SHA256}; delete it and run again")
    return path


def build(out: Path, cache: Path) -> list[real.Row]:
    """Extract the sound effects of the chosen categories into ``out`` and write its manifest."""
    cache.mkdir(parents=True, exist_ok=True)
    deb = fetch(cache)
    b = real.Builder(out)
    with tempfile.TemporaryDirectory(prefix="household-sounds-") as tmp:
        stamps = real.extract_deb(deb, Path(tmp)) / STAMPS
        for category, group in GROUPS.items():
            for ogg in sorted((stamps / category).rglob("*.ogg")):
                if "_desc" in ogg.stem:
                    continue
                rel = ogg.relative_to(stamps).with_suffix(".wav")
                b.add(group, LICENSE, "_".join(rel.parts), ogg, "", kind="nonspeech")
    b.write_manifest()
    return b.rows


def main(argv: Sequence[str] | None = None) -> int:
    t0 = time.monotonic()
    built = real.run_cli(argv, __doc__, build)
    if built is None:
        return 1
    out, rows = built
    for group in sorted(set(GROUPS.values())):
        print(f"{group:<12} clips={sum(r.source == group for r in rows):4d}")
    print(f"{len(rows)} clips -> {out / 'manifest.tsv'} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
