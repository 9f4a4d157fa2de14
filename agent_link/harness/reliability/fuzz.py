"""A seeded mutation fuzzer for command payloads and simulated inputs.

Each generated :class:`FuzzInput` says where it goes (``command``, ``sim/text``, ``sim/audio``,
``sim/tap``) and what the device must do with it, decided by the protocol decoder as oracle plus
what the generator knows by construction: ``malformed`` inputs must each produce exactly one
``command_rejected`` (reason ``invalid``, ``unknown_type`` or ``unsupported_version``); ``valid``
commands are executed (or rejected for a reason of state: ``asleep``, ``expired``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agent_link.protocol.messages import MAX_PAYLOAD_BYTES, Command, SimText, decode_command, decode_sim_text
from audio.edges.wav import load_audio

MALFORMED_REASONS = frozenset({"invalid", "unknown_type", "unsupported_version"})
"""Rejection reasons for a payload that could not be a valid command."""

_HOSTILE_TEXT = (
    "__import__('os').system('touch /tmp/robot-face-pwned')",
    "$(touch /tmp/robot-face-pwned)",
    "`touch /tmp/robot-face-pwned`",
    "{{7*7}} ${7*7} %s %n %x",
    "'; DROP TABLE events; --",
    "\x00\x01\x02 \u202e\ufeff",
    "[sleep][sleep][SLEEP][happy][unknown_tag][",
    "🤖" * 50,
)


@dataclass(frozen=True)
class FuzzInput:
    """One payload for the device."""

    channel: str
    """``command``, ``sim/text``, ``sim/audio`` or ``sim/tap``."""
    payload: bytes
    """The raw payload."""
    malformed: bool
    """True if the device must reject it with ``command_rejected`` (invalid / unknown / version)."""
    command: Command | None = None
    """The decoded command when it is a valid one."""
    kind: str = ""
    """How it was made (for the report)."""


class PayloadFuzzer:
    """Generates valid, mutated and hostile payloads from ``seed`` (same seed, same payloads)."""

    def __init__(self, seed: int = 1, valid_say_ratio: float = 0.02, expired_ratio: float = 0.02) -> None:
        self.rng = random.Random(seed)
        self.valid_say_ratio = valid_say_ratio
        self.expired_ratio = expired_ratio
        self._n = 0

    def _id(self) -> str:
        self._n += 1
        return f"fz-{self._n}-{self.rng.randrange(1 << 30):x}"

    # ---- valid commands ----------------------------------------------------------------------------
    def valid_command(self, now: float) -> dict[str, Any]:
        """A well-formed command object (mostly cheap ones; ``say`` short)."""
        r = self.rng.random()
        cid = self._id()
        obj: dict[str, Any]
        if r < self.valid_say_ratio:
            obj = {
                "v": 1,
                "type": "say",
                "id": cid,
                "say": cid,
                "text": self.rng.choice(["Ok.", "Hi.", "Yes."]),
            }
        elif r < 0.35:
            obj = {"v": 1, "type": "sleep_allowed", "id": cid, "value": self.rng.random() < 0.7}
        elif r < 0.6:
            obj = {"v": 1, "type": "config", "id": cid, "volume": round(self.rng.random(), 3)}
        elif r < 0.8:
            obj = {"v": 1, "type": "stop", "id": cid}
        else:
            # A non-final chunk with words (a tag-only first chunk is a known bug: test_stuck_reply.py).
            obj = {"v": 1, "type": "say", "id": cid, "say": cid, "text": "Well [happy]", "final": False}
        if self.rng.random() < self.expired_ratio:
            obj["expires_at"] = now - 10.0
        elif self.rng.random() < 0.1:
            obj["expires_at"] = now + 3600.0
        return obj

    # ---- mutations -------------------------------------------------------------------------------
    def _mutate_object(self, obj: dict[str, Any]) -> dict[str, Any] | list[Any] | Any:
        o = dict(obj)
        keys = list(o)
        choice = self.rng.randrange(12)
        if choice == 0:
            o["type"] = self.rng.choice(["dance", "", "SAY", "say ", None, 7, "exec", "__class__"])
        elif choice == 1:
            o["v"] = self.rng.choice([0, 2, "1", 1.5, True, None, -1, 10**20])
        elif choice == 2:
            o[self.rng.choice(keys)] = self.rng.choice(
                [None, 1, -1, 1.5, True, "x", [], {}, [1, 2], {"a": 1}, float("nan"), 10**40]
            )
        elif choice == 3:
            del o[self.rng.choice(keys)]
        elif choice == 4:
            o["id"] = self.rng.choice(["", "x" * 500, 5, None])
        elif choice == 5:
            return self.rng.choice([[o], "say", 42, None, True, [], 1.5])
        elif choice == 6:
            o["expires_at"] = self.rng.choice(["soon", [], {}, True, "1e9"])
        elif choice == 7:
            o.update({"type": "say", "say": o.get("id", "s"), "text": "x" * 4001})
        elif choice == 8:
            o.update({"type": "sleep_allowed", "value": self.rng.choice(["true", 1, 0, None, "no"])})
        elif choice == 9:
            o.update({"type": "config", "volume": self.rng.choice([-0.5, 2.0, "loud", None, [0.5]])})
        elif choice == 10:
            o.update({"type": "say", "say": self.rng.choice(["", 3, None]), "text": "hi"})
        else:
            o.update({"type": "say", "say": o.get("id", "s"), "text": self.rng.choice(_HOSTILE_TEXT)})
        return o

    def _mutate_bytes(self, data: bytes) -> bytes:
        b = bytearray(data)
        choice = self.rng.randrange(8)
        if choice == 0 and b:
            for _ in range(self.rng.randint(1, 4)):
                i = self.rng.randrange(len(b))
                b[i] = self.rng.randrange(256)
        elif choice == 1 and b:
            del b[self.rng.randrange(len(b)) :]
        elif choice == 2:
            i = self.rng.randrange(len(b) + 1)
            b[i:i] = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 16)))
        elif choice == 3:
            return self.rng.choice(
                [b"", b"{}", b"[]", b"null", b"\xff\xfe\x00", b"{" * 5000, b"[" * 60000, b"[" * 100000]
            )
        elif choice == 4:
            return data + b" " * (MAX_PAYLOAD_BYTES + 1 - len(data))
        elif choice == 5:
            return json.dumps(
                {"v": 1, "type": "say", "id": "big", "say": "big", "text": "a" * 70000}
            ).encode()
        elif choice == 6:
            return data.replace(b'"v": 1', b'"v": 1, "v": 2')
        else:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 64)))
        return bytes(b)

    # ---- generation ------------------------------------------------------------------------------
    def command(self, now: float) -> FuzzInput:
        """One command payload: valid (about 1 in 4), structurally mutated, or byte-mutated."""
        base = self.valid_command(now)
        r = self.rng.random()
        if r < 0.25:
            payload, kind = json.dumps(base).encode(), "valid"
        elif r < 0.7:
            payload, kind = json.dumps(self._mutate_object(base), allow_nan=True).encode(), "mutated-json"
        else:
            payload, kind = self._mutate_bytes(json.dumps(base).encode()), "mutated-bytes"
        return self._classify_command(payload, kind)

    def _classify_command(self, payload: bytes, kind: str) -> FuzzInput:
        try:
            command = decode_command(payload)
        except Exception:  # the device must reject anything its decoder cannot read
            return FuzzInput("command", payload, True, None, kind)
        if len(payload) > MAX_PAYLOAD_BYTES:
            raise AssertionError(f"decoder accepted a {len(payload)}-byte payload")
        return FuzzInput("command", payload, False, command, kind)

    def sim_input(self) -> FuzzInput:
        """A simulated input: mostly malformed sim/text or sim/audio, sometimes valid text or a tap."""
        r = self.rng.random()
        if r < 0.05:
            return FuzzInput("sim/tap", self.rng.choice([b"{}", b"", b"garbage\xff"]), False, kind="tap")
        if r < 0.6:
            obj: Any = {"text": self.rng.choice((*_HOSTILE_TEXT, "hello"))}
            if self.rng.random() < 0.7:
                obj = self._mutate_object(obj) if self.rng.random() < 0.5 else obj
                data = self._mutate_bytes(json.dumps(obj).encode())
            else:
                data = json.dumps(obj).encode()
            return FuzzInput("sim/text", data, _bad_sim_text(data), kind="sim-text")
        data = self.rng.choice(
            [
                b"",
                b"RIFF",
                b"RIFF\x00\x00\x00\x00WAVEfmt ",
                bytes(self.rng.randrange(256) for _ in range(300)),
            ]
        )
        return FuzzInput("sim/audio", data, _bad_sim_audio(data), kind="sim-audio")

    def inputs(self, count: int, now: float, sim_share: float = 0.2) -> Iterator[FuzzInput]:
        """``count`` inputs, ``sim_share`` of them simulated inputs."""
        for _ in range(count):
            yield self.sim_input() if self.rng.random() < sim_share else self.command(now)


def _bad_sim_text(data: bytes) -> bool:
    try:
        decoded: SimText = decode_sim_text(data)
    except Exception:
        return True
    return decoded is None


def _bad_sim_audio(data: bytes) -> bool:
    try:
        load_audio(data, 16000)
    except Exception:
        return True
    return False
