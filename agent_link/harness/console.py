"""``robot-face harness console``: an interactive agent console for a bench or a simulated device.

Type a line to ``say`` it; slash commands send the rest (``/help`` lists them). Events and status
changes are printed live as they arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_link.harness.client import AgentHarness, BadMessage
from agent_link.harness.matching import describe
from agent_link.protocol.messages import StatusMessage

_LOGGER = logging.getLogger(__name__)

HELP = """\
  <text>                say it (one reply; tags like [happy] and [sleep] allowed)
  /stream a | b | c     say it as chunks of one reply (final on the last)
  /stop  /sleep         stop speaking / fall asleep
  /allow on|off         sleep_allowed true / false
  /config k=v ...       language=en voice=NAME volume=0.5
  /tap                  simulated tap            /text hi     simulated typed input
  /audio FILE.wav       simulated microphone input
  /raw {json}           publish anything on the command topic
  /online on|off        retained agent status
  /expired <text>       say with expires_at in the past
  /events  /check       list events so far / check the contract
  /help  /quit"""


class ConsoleInputError(ValueError):
    """A console line that cannot be sent; the message says why."""


@dataclass(frozen=True)
class ConsoleAction:
    """A parsed console line: ``kind`` (say, stop, allow, ...) and its arguments."""

    kind: str
    text: str = ""
    value: bool | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    chunks: tuple[str, ...] = ()


def _on_off(word: str) -> bool:
    lowered = word.strip().lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    raise ConsoleInputError(f"expected on or off, got {word!r}")


def _settings(text: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in ("language", "voice", "volume"):
            raise ConsoleInputError(f"expected language=..., voice=... or volume=..., got {item!r}")
        if key == "volume":
            try:
                result[key] = float(value)
            except ValueError:
                raise ConsoleInputError(f"volume must be a number, got {value!r}") from None
        else:
            result[key] = value
    if not result:
        raise ConsoleInputError("/config needs at least one of language=, voice=, volume=")
    return result


def parse_line(line: str) -> ConsoleAction | None:
    """Parse one console line (``None`` for an empty line); raises :class:`ConsoleInputError`."""
    line = line.strip()
    if not line:
        return None
    if not line.startswith("/"):
        return ConsoleAction("say", text=line)
    name, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    simple = {"stop", "sleep", "tap", "events", "check", "help", "quit", "exit"}
    if name in simple:
        return ConsoleAction("quit" if name == "exit" else name)
    if name == "allow":
        return ConsoleAction("allow", value=_on_off(rest))
    if name == "online":
        return ConsoleAction("online", value=_on_off(rest))
    if name == "config":
        return ConsoleAction("config", settings=_settings(rest))
    if name in ("text", "raw", "audio", "expired", "say"):
        if not rest:
            raise ConsoleInputError(f"/{name} needs an argument")
        return ConsoleAction(name, text=rest)
    if name == "stream":
        chunks = tuple(c.strip() for c in rest.split("|") if c.strip())
        if not chunks:
            raise ConsoleInputError("/stream needs text chunks separated by |")
        return ConsoleAction("stream", chunks=chunks)
    raise ConsoleInputError(f"unknown command /{name} (try /help)")


async def execute(h: AgentHarness, action: ConsoleAction) -> str:
    """Send what ``action`` asks for; returns a line to print."""
    kind = action.kind
    if kind == "say":
        return f"⇢ say {await h.say(action.text)}"
    if kind == "expired":
        return f"⇢ say (expired) {await h.say(action.text, expires_at=time.time() - 60)}"
    if kind == "stream":
        say_id = f"s-{int(time.time() * 1000)}"
        for i, chunk in enumerate(action.chunks):
            await h.say(chunk + " ", say_id=say_id, final=i == len(action.chunks) - 1)
        return f"⇢ say {say_id} in {len(action.chunks)} chunks"
    if kind == "stop":
        return f"⇢ stop {await h.stop()}"
    if kind == "sleep":
        return f"⇢ sleep {await h.sleep()}"
    if kind == "allow":
        return f"⇢ sleep_allowed {action.value} {await h.sleep_allowed(bool(action.value))}"
    if kind == "config":
        return f"⇢ config {action.settings} {await h.config(**action.settings)}"
    if kind == "tap":
        await h.sim_tap()
        return "⇢ sim/tap"
    if kind == "text":
        await h.sim_text(action.text)
        return f"⇢ sim/text {action.text!r}"
    if kind == "audio":
        path = action.text
        try:
            data = await asyncio.to_thread(_read_file, path)
        except OSError as err:
            raise ConsoleInputError(f"cannot read WAV file {path}: {err}") from None
        await h.sim_audio(data)
        return f"⇢ sim/audio {path} ({len(data)} bytes)"
    if kind == "raw":
        await h.send_raw(action.text.encode())
        return "⇢ raw command"
    if kind == "online":
        await h.set_agent_online(bool(action.value))
        return f"⇢ agent/status online={action.value}"
    if kind == "events":
        return "\n".join(describe(ev) for ev in h.events) or "(no events yet)"
    if kind == "check":
        problems = h.check_contract(allow_open=True)
        return "\n".join(f"✘ {p}" for p in problems) or f"✔ {len(h.events)} events keep the contract"
    if kind == "help":
        return HELP
    raise ConsoleInputError(f"cannot execute {kind}")


def _read_file(path: str) -> bytes:
    return Path(path).expanduser().read_bytes()


def _printer(t0: float) -> Any:
    last: list[str] = [""]

    def show(item: Any) -> None:
        stamp = f"{time.time() - t0:7.2f}s"
        if isinstance(item, StatusMessage):
            line = (
                f"status: {item.state} online={item.online} boot={item.boot} "
                f"sleep_allowed={item.sleep_allowed} language={item.language} volume={item.volume}"
            )
            if line != last[0]:
                print(f"{stamp}   {line}")
                last[0] = line
        elif isinstance(item, BadMessage):
            print(f"{stamp} ✘ invalid message on {item.topic}: {item.error}")
        else:
            print(f"{stamp} ← {describe(item)}")

    return show


async def run_console(broker_url: str, root: str, device_id: str, ca_file: str | None = None) -> int:
    """Run the console until ``/quit`` or end of input."""
    async with AgentHarness(broker_url, root=root, device_id=device_id, ca_file=ca_file) as h:
        h.add_listener(_printer(time.time()))
        print(f"connected to {broker_url} as the agent of {device_id!r}; /help for commands")
        await h.set_agent_online(True)
        while True:
            try:
                line = await asyncio.to_thread(input, "")
            except EOFError:
                break
            try:
                action = parse_line(line)
                if action is None:
                    continue
                if action.kind == "quit":
                    break
                print(await execute(h, action))
            except ConsoleInputError as err:
                print(f"✘ {err}")
        with contextlib.suppress(Exception):
            await h.set_agent_online(False)
    return 0
