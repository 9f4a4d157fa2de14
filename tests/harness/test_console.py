"""Console line parsing, and the console sending real commands through a broker."""

from __future__ import annotations

import asyncio
import json

import aiomqtt
import pytest

from agent_link.harness.client import AgentHarness
from agent_link.harness.console import ConsoleAction, ConsoleInputError, execute, parse_line
from agent_link.protocol.messages import decode_command
from tests.broker import Mosquitto


def test_parse_lines() -> None:
    assert parse_line("   ") is None
    assert parse_line("Hello [happy] you") == ConsoleAction("say", text="Hello [happy] you")
    assert parse_line("/stop") == ConsoleAction("stop")
    assert parse_line("/allow off") == ConsoleAction("allow", value=False)
    assert parse_line("/allow on") == ConsoleAction("allow", value=True)
    assert parse_line("/config volume=0.5 language=de") == ConsoleAction(
        "config", settings={"volume": 0.5, "language": "de"}
    )
    assert parse_line("/text hi there") == ConsoleAction("text", text="hi there")
    assert parse_line("/stream a | b|c") == ConsoleAction("stream", chunks=("a", "b", "c"))
    assert parse_line("/exit") == ConsoleAction("quit")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/allow maybe", "on or off"),
        ("/config volume=loud", "number"),
        ("/config speed=2", "language="),
        ("/text", "needs an argument"),
        ("/dance", "unknown command /dance"),
    ],
)
def test_bad_lines_are_explained(line: str, message: str) -> None:
    with pytest.raises(ConsoleInputError, match=message):
        parse_line(line)


async def test_console_actions_publish_commands(mosquitto: Mosquitto) -> None:
    got: list[bytes] = []
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as raw:
        await raw.subscribe("robotface/c1/#", qos=1)

        async def collect() -> None:
            async for msg in raw.messages:
                got.append(bytes(msg.payload))

        task = asyncio.create_task(collect())
        async with AgentHarness(mosquitto.url, device_id="c1") as h:
            for line in (
                "hello",
                "/stream one | two",
                "/allow off",
                "/config volume=0.25",
                "/sleep",
                "/text yo",
            ):
                action = parse_line(line)
                assert action is not None
                assert (await execute(h, action)).startswith("⇢")
            assert "contract" in await execute(h, ConsoleAction("check"))
            for _ in range(50):
                if len(got) >= 7:
                    break
                await asyncio.sleep(0.05)
        task.cancel()
    commands = [decode_command(p) for p in got[:6]]
    assert [c.type for c in commands] == ["say", "say", "say", "sleep_allowed", "config", "sleep"]
    assert [getattr(c, "final", None) for c in commands[1:3]] == [False, True]
    assert json.loads(got[6]) == {"text": "yo"}
