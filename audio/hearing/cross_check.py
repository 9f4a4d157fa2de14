"""A second, independent recogniser (Moonshine tiny) whose transcript Whisper's is checked against.

Whisper tiny.en's worst mistakes are the ones it is sure of: "Bye." for a faint "five", "V" for a
spoken "Z", a word invented over a squeak. Its own probabilities cannot see them. Moonshine is a
different model (other architecture, other training data, audio-length encoder without 30 s padding);
where the two write the same words the transcript is very likely right, where they disagree it often
is not. The agreement (``agreement()``) is three confidence features; the calibration learns how much
to trust it (``docs/hearing.md``: AUROC +0.02 to +0.06 on every evaluation set).

The model (MIT, Useful Sensors) is the int8 ONNX export that ``@moonshine-ai/moonshine-js`` ships on
the npm registry, with the tokenizer from ``useful-moonshine-onnx`` on PyPI: ``python -m
audio.fetch_models`` puts both in ``default_model_dir()`` (the bootstrap does). ``MoonshineRecogniser``
runs it with onnxruntime (already installed for faster-whisper): greedy decoding with the decoder's
key/value cache, one thread, beside the Whisper decode.
"""

from __future__ import annotations

import difflib
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audio.edges.wav import FloatArray
from audio.hearing.engine import ModelUnavailable
from audio.hearing.wer import normalise_for_wer, reference_words, word_errors

_LOGGER = logging.getLogger(__name__)

MODEL_FILES = ("encoder_model.onnx", "decoder_model_merged.onnx", "tokenizer.json")
START_TOKEN = 1
END_TOKEN = 2
TOKENS_PER_SECOND = 6
"""Decoding budget: Moonshine's own limit (speech rarely needs more than ~4 tokens/s)."""
MIN_SAMPLES = 1600
"""Shorter input (0.1 s) is padded with silence: the encoder needs a few frames."""


def default_model_dir() -> Path:
    """Where ``python -m audio.fetch_models`` installs Moonshine tiny (inside the environment)."""
    return Path(sys.prefix) / "share" / "robot-face" / "moonshine-tiny"


def resolve_model_dir(setting: str) -> Path | None:
    """``hearing.stt_cross_check_model``: "" → the fetched default, "off" → None, else a directory."""
    if setting.strip().lower() == "off":
        return None
    return Path(setting).expanduser() if setting.strip() else default_model_dir()


def missing_files(path: Path) -> list[str]:
    """Model files absent from ``path``."""
    return [name for name in MODEL_FILES if not (path / name).is_file()]


@dataclass(frozen=True, slots=True)
class Agreement:
    """How far Whisper's transcript is from the second recogniser's."""

    word_disagreement: float
    """Word edit distance between the two (``audio.hearing.wer`` rules) over Whisper's word count, ≤ 1.5."""
    exact: bool
    """Both wrote the same words."""
    char_similarity: float
    """difflib ratio of the two texts' letters, spaces removed ("login" vs "log in" is 1.0)."""


def agreement(whisper_text: str, other_text: str) -> Agreement:
    """Compare two transcripts of one utterance (case, punctuation, numbers and contractions aside)."""
    errors = word_errors(whisper_text, other_text)
    dis = min(1.5, errors / max(1, reference_words(whisper_text)))
    a = normalise_for_wer(whisper_text).replace(" ", "")
    b = normalise_for_wer(other_text).replace(" ", "")
    sim = difflib.SequenceMatcher(None, a, b).ratio() if (a or b) else 1.0
    return Agreement(word_disagreement=dis, exact=errors == 0, char_similarity=sim)


class MoonshineRecogniser:
    """Moonshine encoder + merged decoder (ONNX) and its tokenizer; ``load()`` once, then
    ``transcribe()`` from one thread at a time.

    ``lazy`` (the runtime's way): ``load()`` only checks that the files are there, and the sessions
    open on ``prepare()`` (the listener calls it through the transcriber when the microphone
    opens: the device woke up) or else on the first ``transcribe``, and close on ``release()`` (the
    microphone closed: asleep, nothing is heard): ~75 MiB resident that a sleeping device does not
    need (``robot-face bench footprint``; a dozen open/close cycles leave nothing behind). Opening
    takes 1-3 s of one core on this machine, beside the wake-up animation; an utterance that ends
    before it finished waits for it (its transcript is the same, only later). The tokenizer (decoding
    only) is loaded by ``load()`` and stays: loading it holds the GIL.
    """

    def __init__(self, model_dir: Path, threads: int = 1, *, lazy: bool = False) -> None:
        self.model_dir = model_dir
        self.threads = threads
        self.lazy = lazy
        self._checked = False
        self._open_lock = threading.Lock()
        self._encoder: Any = None
        self._decoder: Any = None
        self._tokenizer: Any = None
        self._empty_cache: dict[str, np.ndarray] = {}

    @property
    def loaded(self) -> bool:
        """Whether the sessions are open."""
        return self._decoder is not None

    def load(self) -> None:
        """Check the files (a clear error names what is missing) and, unless ``lazy``, open the
        sessions now."""
        missing = missing_files(self.model_dir)
        if missing:
            raise ModelUnavailable(
                f"cross-check model directory {self.model_dir} lacks {', '.join(missing)}: run "
                "`python -m audio.fetch_models` (the bootstrap does), point "
                "hearing.stt_cross_check_model at a Moonshine ONNX export, or set it to 'off'"
            )
        self._checked = True
        self._load_tokenizer()
        if not self.lazy:
            self._open()
            self.transcribe(np.zeros(MIN_SAMPLES, dtype=np.float32))  # first run allocates; not mid-reply

    def prepare(self) -> None:
        """Open the sessions now if ``load()`` has checked the files (blocking; on a worker thread);
        a failure is logged (the first ``transcribe`` raises it again)."""
        if not self._checked or self.loaded:
            return
        try:
            self._open()
        except ModelUnavailable as err:
            _LOGGER.error("%s", err)

    def release(self) -> None:
        """Close the sessions (lazy only; the next ``prepare`` or ``transcribe`` opens them again);
        not while ``transcribe`` runs: call it from the thread that transcribes."""
        if not self.lazy:
            return
        with self._open_lock:
            if self._decoder is None:
                return
            self._encoder = self._decoder = None  # the tokenizer stays (see _load_tokenizer)
            self._empty_cache = {}
        _LOGGER.info("cross-check model %s closed (asleep)", self.model_dir)

    def _open(self) -> None:
        """Open the ONNX sessions and the tokenizer (once)."""
        with self._open_lock:
            if self._decoder is not None:
                return
            from audio.onnx_sessions import cpu_session

            t0 = time.monotonic()
            try:
                self._load_tokenizer()
                self._encoder = cpu_session(self.model_dir / "encoder_model.onnx", self.threads)
                decoder = cpu_session(self.model_dir / "decoder_model_merged.onnx", self.threads)
            except Exception as err:
                raise ModelUnavailable(
                    f"cannot load the cross-check model in {self.model_dir}: {err}"
                ) from err
            # Cache shapes come from the model itself (tiny: 6 layers, 8 heads of 36; base: 8 x 8 x 52).
            self._empty_cache = {
                i.name: np.zeros((0, int(i.shape[1]), 1, int(i.shape[3])), dtype=np.float32)
                for i in decoder.get_inputs()
                if i.name.startswith("past_key_values.")
            }
            self._decoder = decoder
            _LOGGER.info("cross-check model %s loaded in %.1f s", self.model_dir, time.monotonic() - t0)

    def _load_tokenizer(self) -> None:
        """The tokenizer, for decoding only, once (``load()``: at start-up) and kept while asleep.

        Decoding needs the vocabulary and the decoder rules, not the 32 000 BPE merges that encoding
        needs: without them it decodes every id sequence the same (tested) and weighs 4.6 MiB instead
        of 17.7 (parsing the JSON here leaves ~8 MiB more in the heap). It is kept because loading it
        holds the GIL the whole time (the Rust library does not release it): ~130 ms here, on every
        wake-up, in which the event loop could not run (a ``stop`` or a tap waited behind it)."""
        if self._tokenizer is not None:
            return
        from tokenizers import Tokenizer

        path = self.model_dir / "tokenizer.json"
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
            if spec.get("model", {}).get("type") == "BPE":
                spec["model"]["merges"] = []
            self._tokenizer = Tokenizer.from_str(json.dumps(spec))
        except Exception as err:
            raise ModelUnavailable(f"cannot load the cross-check tokenizer {path}: {err}") from err

    def transcribe(self, samples: FloatArray, cancel: threading.Event | None = None) -> str:
        """Greedy transcript of 16 kHz mono float32 ``samples`` (blocking); stops between decoder
        steps once ``cancel`` is set (the caller no longer needs it) and then returns ""."""
        if self._decoder is None:
            if not self._checked:
                raise RuntimeError("MoonshineRecogniser.load() has not been called")
            self._open()
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(x) < MIN_SAMPLES:
            x = np.pad(x, (0, MIN_SAMPLES - len(x)))
        hidden = self._encoder.run(None, {"input_values": x[None, :]})[0]
        cache = dict(self._empty_cache)
        names = list(cache)
        tokens: list[int] = []
        next_ids = [START_TOKEN]
        for step in range(int(len(x) / 16000 * TOKENS_PER_SECOND) + 4):
            if cancel is not None and cancel.is_set():
                return ""
            logits, *present = self._decoder.run(
                None,
                {
                    "input_ids": np.asarray([next_ids], dtype=np.int64),
                    "encoder_hidden_states": hidden,
                    "use_cache_branch": np.asarray([step > 0]),
                    **cache,
                },
            )
            token = int(np.argmax(logits[0, -1]))
            if token == END_TOKEN:
                break
            tokens.append(token)
            next_ids = [token]
            for name, value in zip(names, present, strict=True):
                # The encoder's keys/values are computed on the first step only (then reused).
                if step == 0 or ".decoder." in name:
                    cache[name] = value
        return str(self._tokenizer.decode(tokens)).strip()
