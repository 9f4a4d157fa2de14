"""``robot-face demo``: the main job on embedded defaults.

Starts a private mosquitto on a free loopback port, the device daemon (real microphone, speaker and
face where they exist, otherwise simulation with the terminal face and speaker output to WAV
files), and the harness's stand-in companion agent. Without a microphone it also plays the user:
tap awake, spoken turns synthesised with the project's own voice and fed through the device's real
VAD and Whisper, a mumbled turn, an activity with an ignored goodbye, the final goodbye.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import signal
import sys
import time
from pathlib import Path

from agent_link.harness.broker import Mosquitto

_LOGGER = logging.getLogger(__name__)

DEVICE_ID = "demo-robot"
READY_TIMEOUT_S = 180.0
"""How long the device may take to load its models and connect, in seconds."""


def audio_hardware() -> tuple[bool, str]:
    """Whether a real microphone and speaker exist (and which), via PortAudio."""
    try:
        import sounddevice as sd

        devices = sd.query_devices()
    except Exception as err:  # PortAudio missing or no sound system at all
        return False, f"no audio system ({err})"
    inputs = [d["name"] for d in devices if d["max_input_channels"] > 0]
    outputs = [d["name"] for d in devices if d["max_output_channels"] > 0]
    if inputs and outputs:
        return True, f"microphone {inputs[0]!r}, speaker {outputs[0]!r}"
    return False, "no microphone" if not inputs else "no speaker"


class DeviceProcess:
    """The daemon as a child process; its face lines are shown, the rest goes to a log file."""

    def __init__(self, cmd: list[str], log_path: Path, show: bool = True) -> None:
        self.cmd = cmd
        self.log_path = log_path
        self.show = show
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        """Spawn the daemon and start following its output."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        self._reader = asyncio.create_task(self._follow(), name="device-output")

    async def _follow(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        with self.log_path.open("w") as log:
            async for raw in self.proc.stdout:
                line = raw.decode(errors="replace").rstrip()
                log.write(line + "\n")
                log.flush()
                if "Ready: models loaded" in line:
                    self.ready.set()
                if self.show and line.startswith("face: "):
                    print(f"         {line}", flush=True)
                elif self.show and (" ERROR " in line or "Traceback" in line):
                    print(f"  device │ {line}", flush=True)

    async def wait_ready(self, timeout: float) -> None:
        """Until the daemon said it is ready (or died)."""
        assert self.proc is not None
        waiter = asyncio.create_task(self.ready.wait())
        died = asyncio.create_task(self.proc.wait())
        await asyncio.wait({waiter, died}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        died.cancel()
        if not self.ready.is_set():
            raise RuntimeError(f"the device did not become ready; see {self.log_path}")

    async def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait, then SIGKILL if needed; returns the exit code."""
        if self.proc is None or self.proc.returncode is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 2.0)
        return self.proc.returncode


async def run(args: argparse.Namespace, workdir: Path) -> int:
    """Run the demo; returns the exit code (0 when the scripted conversation went as expected)."""
    hardware, detail = audio_hardware()
    simulate = args.simulate or not hardware
    print("robot-face demo")
    if simulate:
        print(f"  {detail}: running the device in SIMULATION — terminal face, speaker output to WAV files")
        print(
            f"  in {workdir / 'state' / 'speech'}; the user's turns are synthesised and fed to the real VAD + Whisper."
        )
    else:
        print(f"  real audio: {detail}. Press space (or the button) to wake the robot, then talk to it.")
    broker = Mosquitto(workdir / "broker")
    broker.start()
    print(f"  private mosquitto on {broker.url}; device log in {workdir / 'device.log'}")
    cmd = [
        sys.executable, "-m", "device", "run", "--broker", broker.url, "--device-id", DEVICE_ID,
        "--state-dir", str(workdir / "state"), "--face", args.face or ("terminal" if simulate else "browser"),
    ]  # fmt: skip
    if simulate:
        # Full duplex in the simulated room: the user can talk over the robot (the barge-in turn).
        cmd += ["--simulate", "--set", "hearing.echo_cancellation=webrtc"]
    else:
        cmd += ["--set", "button.backend=keyboard"]
    device = DeviceProcess(cmd, workdir / "device.log")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    code = 1
    try:
        await device.start()
        print("  loading Whisper and Piper on the device…", flush=True)
        conversation = asyncio.create_task(_conversation(broker.url, device, simulate), name="conversation")
        stopper = asyncio.create_task(stop.wait(), name="ctrl-c")
        await asyncio.wait({conversation, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if conversation.done():
            code = conversation.result()
        else:
            print("\n  interrupted: stopping everything", flush=True)
            code = 130
            conversation.cancel()
            await asyncio.wait({conversation}, timeout=5.0)
    finally:
        started = time.monotonic()
        exit_code = await device.stop()
        broker.stop()
        print(f"  device stopped (exit {exit_code}) in {time.monotonic() - started:.1f} s; broker stopped")
    return code


async def _conversation(broker_url: str, device: DeviceProcess, simulate: bool) -> int:
    """The agent's side (and, in simulation, the user's): 0 when it went as expected."""
    from agent_link.harness.client import AgentHarness
    from agent_link.harness.companion import CompanionAgent, make_brain
    from agent_link.harness.companion_settings import CompanionSettings
    from agent_link.harness.demo import run_demo

    await device.wait_ready(READY_TIMEOUT_S)
    async with AgentHarness(broker_url, device_id=DEVICE_ID) as harness:
        if simulate:
            result = await run_demo(harness)
            return 0 if result.ok else 1
        print("  companion running; Ctrl-C to stop")
        await CompanionAgent(harness, make_brain(CompanionSettings())).run()
    return 0


def _demo(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)  # every run starts from the same fresh device
    workdir.mkdir(parents=True)
    try:
        return asyncio.run(run(args, workdir))
    except KeyboardInterrupt:
        return 130


def register(sub: argparse._SubParsersAction, bench: argparse._SubParsersAction) -> None:
    """``robot-face demo``."""
    parser = sub.add_parser("demo", help="the main job: private broker + device + stand-in companion agent")
    parser.add_argument(
        "--workdir", default=".demo", help="where the broker, device state and log go (wiped first)"
    )
    parser.add_argument("--simulate", action="store_true", help="simulate even when a microphone exists")
    parser.add_argument(
        "--face", help="face renderer for the device (default: terminal in simulation, else browser)"
    )
    parser.set_defaults(func=_demo)
