"""The optional OpenAI-compatible STT provider against a local aiohttp stand-in server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from audio.edges.wav import decode_wav
from audio.hearing.settings import HearingSettings
from audio.hearing.speech_gate import SpeechGate
from audio.hearing.stt import make_transcriber
from audio.hearing.stt_openai import OpenAITranscriber, confidence_from_response


@pytest.fixture
async def hearing_openai_server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def transcriptions(request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        audio, rate = decode_wav(upload.file.read())  # type: ignore[union-attr]
        fields = {k: str(v) for k, v in form.items() if k != "file"}
        seen.append(
            {**fields, "rate": rate, "samples": len(audio), "auth": request.headers.get("Authorization")}
        )
        if fields["model"] == "broken":
            return web.json_response({"error": {"message": "model exploded"}}, status=500)
        if fields["model"].startswith("gpt-4o"):
            body = {"text": "Hello there.", "logprobs": [{"token": "Hello", "logprob": -0.1, "bytes": []}]}
        elif fields["model"] == "plain":
            body = {"text": "Hello there."}
        else:
            body = {
                "text": "Hello there.",
                "language": "english",
                "segments": [{"avg_logprob": -0.2, "no_speech_prob": 0.1, "text": "Hello there."}],
            }
        return web.json_response(body)

    app = web.Application()
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        await runner.cleanup()


def settings(base_url: str, model: str) -> HearingSettings:
    return HearingSettings(
        stt_provider="openai", stt_openai_base_url=base_url, stt_openai_model=model, stt_timeout_s=5.0
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [("whisper-1", np.exp(-0.2) * 0.9), ("gpt-4o-transcribe", np.exp(-0.1)), ("plain", 0.0)],
)
async def test_confidence_from_provider(
    model: str,
    expected: float,
    hearing_openai_server: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, seen = hearing_openai_server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    stt = make_transcriber(settings(url, model))
    assert isinstance(stt, SpeechGate) and isinstance(stt.engine, OpenAITranscriber)
    stt.load()
    res = await asyncio.to_thread(stt.transcribe, np.zeros(16000, np.float32))
    assert res.text == "Hello there."
    assert res.confidence == pytest.approx(expected)
    assert res.language == "en" and res.audio_ms == 1000
    assert seen[-1]["rate"] == 16000 and seen[-1]["samples"] == 16000
    assert seen[-1]["auth"] == "Bearer sk-test" and seen[-1]["language"] == "en"


async def test_http_error_raises(hearing_openai_server: tuple[str, list[dict[str, Any]]]) -> None:
    url, _ = hearing_openai_server
    stt = OpenAITranscriber(settings(url, "broken"))
    stt.load()
    with pytest.raises(Exception, match="model exploded"):
        await asyncio.to_thread(stt.transcribe, np.zeros(1600, np.float32))


async def test_a_beep_never_reaches_the_endpoint(
    hearing_openai_server: tuple[str, list[dict[str, Any]]],
) -> None:
    # The speech gate stands in front of every engine, the remote one too.
    url, seen = hearing_openai_server
    stt = make_transcriber(settings(url, "whisper-1"))
    stt.load()
    t = np.arange(16000) / 16000
    beep = (0.3 * np.sin(2 * np.pi * 1000.0 * t)).astype(np.float32)
    res = await asyncio.to_thread(stt.transcribe, beep)
    assert res.text == "" and res.confidence == 0.0 and res.language == "en" and seen == []
    noise = np.random.default_rng(1).standard_normal(16000).astype(np.float32) * 0.03
    assert (await asyncio.to_thread(stt.transcribe, noise)).text == "Hello there." and len(seen) == 1


def test_confidence_is_never_exactly_zero_when_computed() -> None:
    assert confidence_from_response({"logprobs": [{"logprob": -50.0}]}) == 0.001
    assert confidence_from_response(json.loads('{"text": "x"}')) == 0.0


def test_unknown_provider_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown stt_provider"):
        make_transcriber(HearingSettings(stt_provider="magic"))
