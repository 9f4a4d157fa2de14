"""Free-conversation replies from an OpenAI-compatible endpoint (a local stand-in server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from agent_link.harness.brain import RuleFreeTalk
from agent_link.harness.companion import make_brain
from agent_link.harness.companion_settings import CompanionSettings
from agent_link.harness.llm_talk import OpenAIFreeTalk
from tests.broker import free_port


async def _serve(answer: str, seen: list[dict[str, Any]]) -> tuple[web.AppRunner, int]:
    async def completions(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}
                ],
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def test_model_reply_used_and_sleep_tag_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    runner, port = await _serve("[happy] Gardens are lovely this time of year. [sleep]", seen)
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        brain = make_brain(CompanionSettings(llm_model="tiny-model"))
        assert isinstance(brain.free_talk, OpenAIFreeTalk)
        history = [("agent", "[happy] Hi!"), ("user", "I was in the garden.")]
        reply = await asyncio.to_thread(brain.free_talk.reply, "I was in the garden.", history)
    finally:
        await runner.cleanup()
    assert reply == "[happy] Gardens are lovely this time of year."
    request = seen[0]
    assert request["model"] == "tiny-model"
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][-1] == {"role": "user", "content": "I was in the garden."}
    assert request["messages"][1] == {"role": "assistant", "content": "[happy] Hi!"}


def test_unreachable_model_falls_back_to_rules_for_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    talk = OpenAIFreeTalk("m", timeout_s=2.0)
    assert talk.reply("thanks a lot", []) == RuleFreeTalk().reply("thanks a lot", [])


def test_rules_without_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(make_brain(CompanionSettings()).free_talk, RuleFreeTalk)
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    assert isinstance(make_brain(CompanionSettings(), llm=False).free_talk, RuleFreeTalk)
