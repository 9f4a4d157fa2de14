"""The real daemon loads only what its configuration asks for (and what it needs so far), and not the
``onnx`` package."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_link.harness.client import AgentHarness
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.harness.user_voice import UserVoice
from device.memory import TRIM_INTERVAL_S, process_memory
from tests.broker import Mosquitto


def _mapped_files(pid: int) -> set[str]:
    files = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6:
            files.add(parts[5])
    return files


async def test_a_cross_check_set_off_is_not_loaded_and_onnx_never_is(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    daemon = DaemonProcess(
        mosquitto.url,
        "footprint-off",
        tmp_path / "daemon",
        config={"hearing": {"stt_cross_check_model": "off"}},
    )
    daemon.start()
    try:
        await daemon.wait_ready(timeout=120)
        pid = daemon.pid
        assert pid is not None
        mapped = _mapped_files(pid)
        assert any("onnxruntime" in f for f in mapped), "onnxruntime (Silero, Piper) should be loaded"
        assert any("ctranslate2" in f for f in mapped), "CTranslate2 (Whisper) should be loaded"
        # The onnx package (graph editing) is only for preparing models, in a child process.
        assert not [f for f in mapped if "/onnx/" in f], "the daemon imported the onnx package"
        assert daemon.count(r"cross-check model .* loaded") == 0
        assert daemon.count(r"Whisper model .* loaded") == 1
        assert process_memory(pid).rss > 100  # the figures are read from the real process
    finally:
        daemon.stop()
    assert not daemon.errors(), daemon.errors()


async def test_the_cross_check_opens_while_awake_only_and_pyav_never_loads(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """Asleep since its start, the daemon has not opened the cross-check recogniser (~75 MiB); a
    wake opens it (before the first utterance needs it), once; falling asleep closes it and gives
    the memory back. PyAV, which faster-whisper imports for reading files, is never loaded."""
    daemon = DaemonProcess(mosquitto.url, "footprint-lazy", tmp_path / "daemon")
    async with AgentHarness(mosquitto.url, device_id="footprint-lazy") as harness:
        await harness.set_agent_online(True)
        daemon.start()
        try:
            await daemon.wait_ready(timeout=120)
            pid = daemon.pid
            assert pid is not None
            assert daemon.count(r"cross-check model .* loaded") == 0
            await harness.sim_tap()
            await harness.wait_for("wake", 15)
            await daemon.wait_log(r"cross-check model .* loaded", timeout=30)
            await harness.sim_audio(UserVoice.load().wav("What a lovely morning it is today."))
            text = await harness.wait_for("transcript", 60)
            assert text.source == "voice" and text.text
            await harness.sim_tap()  # a tap while awake: not a second load
            await harness.wait_for("tap", 10)
            assert daemon.count(r"cross-check model .* loaded") == 1
            awake = process_memory(pid).rss
            await harness.sleep()
            await harness.wait_for("asleep", 15)
            await daemon.wait_log(r"cross-check model .* closed \(asleep\)", timeout=15)
            await asyncio.sleep(TRIM_INTERVAL_S + 1)  # the daemon's malloc trimming has run since
            asleep = process_memory(pid).rss
            assert asleep < awake - 25, f"asleep {asleep:.0f} MiB, awake {awake:.0f} MiB"
            await harness.sim_tap()  # waking opens it again
            await harness.wait_for("wake", 15)
            await daemon.wait_log(r"cross-check model .* loaded", count=2, timeout=30)
            mapped = _mapped_files(pid)
            assert not [f for f in mapped if "/av.libs/" in f or "/site-packages/av/" in f], "PyAV loaded"
        finally:
            daemon.stop()
    assert not daemon.errors(), daemon.errors()
