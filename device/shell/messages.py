"""MQTT messages → the core's inputs: commands through the gate, agent status, simulation inputs."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable

from agent_link.link.gate import CommandGate, Rejection
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

    def __call__(self, kind: str, payload: bytes, received: float) -> None:
        """The link's message callback: never raises (one bad message must not hurt the link)."""
        try:
            self._read(kind, payload, received)
        except Exception:
            _LOGGER.exception("Error handling a %s message (%d bytes); continuing", kind, len(payload))

    def _read(self, kind: str, payload: bytes, received: float) -> None:
        if kind == "command":
            result = self.gate.check(payload, time.time())
            if isinstance(result, Rejection):
                self.put(CommandRefused(result.command_id, result.reason, result.detail, received))
            elif result is not None:
                self.put(CommandReceived(result, received))
            return
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
