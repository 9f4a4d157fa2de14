"""A fake ``sounddevice`` module for speaking tests: devices that behave like hardware.

``FakeSoundDevice.OutputStream`` pulls its callback in real time at the device rate (a clock thread,
like PortAudio), reports an output latency, and records every block with the unix time its first
frame "reaches the DAC". ``unplug()`` kills running streams and hides the device; ``replug()``
brings it back.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audio.sinks import ClockedOutputStream, StreamTime


class FakePortAudioError(Exception):
    """Like sounddevice.PortAudioError."""


@dataclass
class _Default:
    device: list[int] = field(default_factory=lambda: [-1, 1])


class FakeOutputStream(ClockedOutputStream):
    """Pull-based output stream at the device rate, with latency and a block recorder."""

    def __init__(self, owner: FakeSoundDevice, **kwargs: Any) -> None:
        self._owner = owner
        callback = kwargs.pop("callback")
        self.device = kwargs.pop("device", None)
        if self.device is None:
            self.device = owner.default.device[1]
        if owner.unplugged or self.device >= len(owner.devices):
            raise FakePortAudioError(f"Error opening OutputStream: device {self.device} unavailable")
        self.recorded: list[tuple[float, np.ndarray]] = []
        self._user_callback = callback
        super().__init__(
            samplerate=kwargs["samplerate"],
            blocksize=kwargs.get("blocksize") or 480,
            callback=self._hardware_callback,
            channels=kwargs.get("channels", 1),
            latency=owner.latency,
        )
        owner.streams.append(self)

    def _hardware_callback(
        self, outdata: np.ndarray, frames: int, time_info: StreamTime, status: Any
    ) -> None:
        if self._owner.unplugged:
            self._running.clear()  # the device vanished: the stream dies, as with real PortAudio
            return
        self._user_callback(outdata, frames, time_info, status)
        dac_unix = time.time() + (time_info.outputBufferDacTime - time_info.currentTime)
        self.recorded.append((dac_unix, outdata[:, 0].copy()))


class FakeSoundDevice:
    """Module-like fake: ``query_devices``, ``default``, ``OutputStream``, ``PortAudioError``."""

    PortAudioError = FakePortAudioError

    def __init__(self, rate: int = 48000, latency: float = 0.012) -> None:
        self.devices: list[dict[str, Any]] = [
            {
                "name": "Fake Mic",
                "max_input_channels": 1,
                "max_output_channels": 0,
                "default_samplerate": 16000,
            },
            {
                "name": "Fake USB Speaker",
                "max_input_channels": 0,
                "max_output_channels": 2,
                "default_samplerate": rate,
            },
        ]
        self.default = _Default()
        self.latency = latency
        self.unplugged = False
        self.streams: list[FakeOutputStream] = []
        self._lock = threading.Lock()

    def query_devices(self) -> list[dict[str, Any]]:
        """The device list (the speaker is missing while unplugged)."""
        if self.unplugged:
            return [d for d in self.devices if d["max_output_channels"] == 0]
        return list(self.devices)

    def OutputStream(self, **kwargs: Any) -> FakeOutputStream:
        """Open a stream on the fake speaker."""
        return FakeOutputStream(self, **kwargs)

    def unplug(self) -> None:
        """Pull the speaker out."""
        self.unplugged = True

    def replug(self) -> None:
        """Plug it back in."""
        self.unplugged = False

    def recorded(self) -> list[tuple[float, np.ndarray]]:
        """Every block played by every stream, in time order."""
        blocks = [b for s in self.streams for b in s.recorded]
        return sorted(blocks, key=lambda b: b[0])
