"""A stale decode stops early: the cancel token of ``Transcriber.transcribe`` on the real Whisper
model (and the cross-check beside it), the speech gate and the remote engine."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from audio.edges.wav import FloatArray
from audio.hearing import whisper_stt
from audio.hearing.engine import DecodeCancelled
from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.stt_openai import OpenAITranscriber
from audio.hearing.wer import normalise_for_wer
from audio.hearing.whisper_stt import WhisperTranscriber
from tests.audio.conftest import hearing_silence

PHRASE = "Yes, please."
"""Two words: a decode of it always asks the beam search for a second opinion."""


@pytest.fixture
def stages(
    hearing_transcriber: WhisperTranscriber, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Counter[str], list[threading.Event | None]]]:
    """Counts each stage of the real transcriber's decodes (the stages still run for real), and the
    tokens the cross-check recogniser was given."""
    seen: Counter[str] = Counter()
    cross_tokens: list[threading.Event | None] = []
    stt = hearing_transcriber

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen[name] += 1
            return real(*args, **kwargs)

        return run

    for name in ("_encode", "_greedy", "_second_opinion", "_end_prob_of"):
        monkeypatch.setattr(stt, name, counted(name, getattr(stt, name)))
    monkeypatch.setattr(
        whisper_stt, "confidence_features", counted("features", whisper_stt.confidence_features)
    )
    cross = stt._cross
    assert cross is not None, "the cross-check recogniser is on by default"
    real_cross = cross.transcribe

    def cross_check(samples: FloatArray, cancel: threading.Event | None = None) -> str:
        cross_tokens.append(cancel)
        return real_cross(samples, cancel)

    monkeypatch.setattr(cross, "transcribe", cross_check)
    yield seen, cross_tokens


def test_a_decode_cancelled_during_the_greedy_pass_stops_after_it(
    hearing_transcriber: WhisperTranscriber,
    hearing_say: Callable[[str], FloatArray],
    stages: tuple[Counter[str], list[threading.Event | None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen, cross_tokens = stages
    clip = hearing_say(PHRASE)
    plain = hearing_transcriber.transcribe(clip)  # the same clip, not cancelled: every stage runs
    assert normalise_for_wer(plain.text) == "yes please" and plain.features is not None
    assert seen["_second_opinion"] == 1 and seen["features"] == 1
    seen.clear()

    cancel = threading.Event()
    greedy = hearing_transcriber._greedy

    def greedy_then_speech_resumes(*args: Any) -> Any:
        out = greedy(*args)
        cancel.set()  # what the Listener does when the user goes on speaking
        return out

    monkeypatch.setattr(hearing_transcriber, "_greedy", greedy_then_speech_resumes)
    with pytest.raises(DecodeCancelled, match="after the greedy pass"):
        hearing_transcriber.transcribe(clip, 0.8, cancel)
    assert seen["_encode"] == 1  # on the short window only: not redone on the full one
    assert seen["_second_opinion"] == 0 and seen["_end_prob_of"] == 0 and seen["features"] == 0
    token = cross_tokens[-1]
    assert token is not None and token.is_set()  # the cross-check beside it stops too


def test_a_decode_cancelled_before_it_starts_never_starts(
    hearing_transcriber: WhisperTranscriber,
    hearing_settings: HearingSettings,
    hearing_say: Callable[[str], FloatArray],
    stages: tuple[Counter[str], list[threading.Event | None]],
) -> None:
    seen, cross_tokens = stages
    cancel = threading.Event()
    cancel.set()
    gated = SpeechGate(hearing_transcriber, hearing_settings.tone_gate_share)
    with pytest.raises(DecodeCancelled, match="before it started"):
        gated.transcribe(hearing_say(PHRASE), 0.8, cancel)
    with pytest.raises(DecodeCancelled, match="before it started"):
        hearing_transcriber.transcribe(hearing_say(PHRASE), 0.8, cancel)
    assert not seen and not cross_tokens


def test_a_cancelled_decode_leaves_the_transcriber_ready(
    hearing_transcriber: WhisperTranscriber, hearing_say: Callable[[str], FloatArray]
) -> None:
    """Cancelled at every stage boundary in turn (the token is set from the start of the stage named):
    the next decode of the same clip is whole and scored the same as one before them."""
    clip = hearing_say(PHRASE)
    before = hearing_transcriber.transcribe(clip, 0.8)
    for stage in ("_encode", "_greedy", "_second_opinion"):
        cancel = threading.Event()
        real = getattr(hearing_transcriber, stage)

        def cancel_in(*args: Any, real: Callable[..., Any] = real, cancel: threading.Event = cancel) -> Any:
            cancel.set()
            return real(*args)

        setattr(hearing_transcriber, stage, cancel_in)
        try:
            with pytest.raises(DecodeCancelled):
                hearing_transcriber.transcribe(clip, 0.8, cancel)
        finally:
            delattr(hearing_transcriber, stage)
    after = hearing_transcriber.transcribe(clip, 0.8)
    assert after.text == before.text and after.confidence == pytest.approx(before.confidence, abs=1e-6)


def test_the_remote_engine_sends_no_request_for_a_cancelled_decode() -> None:
    # Nothing listens on port 9 of loopback: a request would fail with a connection error.
    settings = HearingSettings(
        stt_provider="openai", stt_openai_base_url="http://127.0.0.1:9/v1", stt_timeout_s=2.0
    )
    stt = OpenAITranscriber(settings)
    stt.load()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DecodeCancelled, match="before its request"):
        stt.transcribe(hearing_silence(0.5), None, cancel)
    with pytest.raises(Exception) as err:  # not cancelled: the request is made, and fails
        stt.transcribe(hearing_silence(0.5))
    assert not isinstance(err.value, DecodeCancelled)
