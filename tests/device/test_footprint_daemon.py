"""The real daemon loads only what its configuration asks for, and not the ``onnx`` package."""

from __future__ import annotations

from pathlib import Path

from agent_link.harness.reliability.daemon import DaemonProcess
from device.memory import process_memory
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
