"""MQTT messages → the core's inputs: commands through the gate, agent status, simulation inputs."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable

from agent_link.link.gate import CommandGate, Rejection, Verdict
from agent_link.protocol.errors import ProtocolError
from agent_link.protocol.messages import decode_agent_status, decode_sim_text
from audio.edges.wav import WavError
from device.core.inputs import (
    AgentPresence,
    CommandReceived,
    CommandRefused,
    DeviceInput,
    Tapped,
    TypedText,
)

_LOGGER = logging.getLogger(__name__)


class MessageReader:
    """Turns each message the link hands over into an input for the core (``put``).

    ``sim_audio`` takes a ``sim/audio`` payload (feeds the simulated microphone); it raises
    ``WavError``/``ProtocolError`` for a payload it cannot use, which is refused as ``invalid``.
    """

    def __init__(
        self,
        gate: CommandGate,
        put: Callable[[DeviceInput], None],
        boot: int,
        sim_audio: Callable[[bytes], None],
    ) -> None:
        self.gate = gate
        self.put = put
        self.boot = boot
        self.sim_audio = sim_audio
        self._typed = itertools.count(1)

    def typed(self, text: str, ts: float) -> TypedText:
        """Typed text as an utterance of its own."""
        return TypedText(f"typed-{self.boot}-{next(self._typed)}", text, ts)

    def __call__(self, kind: str, payload: bytes, received: float) -> asyncio.Future[None] | None:
        """The link's message callback: never raises (one bad message must not hurt the link). A
        command goes through the gate's group commit: the future is done (and the command put)
        once its id is on disk; the link acknowledges the message then. Other messages keep their
        place behind the commands that arrived before them (``gate.in_order``)."""
        try:
            if kind == "command":
                return self.gate.admit(payload, time.time(), lambda verdict: self._command(verdict, received))
            self.gate.in_order(lambda: self._guarded(kind, payload, received))
        except Exception:
            _LOGGER.exception("Error handling a %s message (%d bytes); continuing", kind, len(payload))
        return None

    def _guarded(self, kind: str, payload: bytes, received: float) -> None:
        try:
            self._read(kind, payload, received)
        except Exception:
            _LOGGER.exception("Error handling a %s message (%d bytes); continuing", kind, len(payload))

    def _command(self, verdict: Verdict, received: float) -> None:
        if isinstance(verdict, Rejection):
            self.put(CommandRefused(verdict.command_id, verdict.reason, verdict.detail, received))
        elif verdict is not None:
            self.put(CommandReceived(verdict, received))

    def _read(self, kind: str, payload: bytes, received: float) -> None:
        try:
            if kind == "agent_status":
                self.put(AgentPresence(decode_agent_status(payload).online if payload else False, received))
            elif kind == "sim_tap":
                self.put(Tapped("sim", received))
            elif kind == "sim_text":
                self.put(self.typed(decode_sim_text(payload).text, received))
            elif kind == "sim_audio":
                self.sim_audio(payload)
        except (ProtocolError, WavError) as err:
            detail = f"{kind.replace('_', '/')}: {getattr(err, 'detail', err)}"
            _LOGGER.warning("Bad input on %s", detail)
            if kind != "agent_status":
                self.put(CommandRefused(None, "invalid", detail, received))
