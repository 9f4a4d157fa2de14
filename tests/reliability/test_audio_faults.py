"""Audio and disk faults inside the daemon: each reported clearly, the rest keeps serving."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_link.harness.client import AgentHarness
from agent_link.link.outbox import OutboxError
from audio.edges.sounddevice_sink import SoundDeviceSink
from audio.speaking.speaker import Speaker
from device.config import Config
from device.core.state import Phase
from tests.audio.fake_portaudio import shared_fake, usb_speaker
from tests.broker import Mosquitto
from tests.reliability.inprocess import RunningDaemon, sim_config, sim_mic

pytestmark = pytest.mark.timeout(180)


async def _awake(harness: AgentHarness) -> None:
    await harness.set_agent_online(True)
    await harness.sim_tap()
    await harness.wait_for("wake", timeout=15)


async def test_stt_error_fails_the_utterance_and_hearing_recovers(
    mosquitto: Mosquitto, tmp_path: Path, speech_wav: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    config = sim_config(mosquitto.url, "rel-stt", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-stt") as harness, RunningDaemon(config) as rt:
        await _awake(harness)
        real = rt.transcriber.transcribe

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("simulated decoder crash")

        rt.transcriber.transcribe = broken  # type: ignore[method-assign]
        await harness.sim_audio(speech_wav)
        started = await harness.wait_for("speech_started", timeout=15)
        failed = await harness.wait_for("utterance_failed", timeout=30, utterance=started.utterance)
        assert failed.reason == "stt_error" and "simulated decoder crash" in failed.detail
        rt.transcriber.transcribe = real  # type: ignore[method-assign]
        await harness.sim_audio(speech_wav)
        # The end-of-turn model may end the clip's first clause ("Tell me a story about the sea,") on
        # its own, so the clip can be two utterances: the part with those words failed above, so only
        # a decode after the repair can bring them. Any of them will do: said alone, the clause's last
        # word is misheard now and then ("...about the scene.", confidence 0.38 in one CI run), which
        # says nothing of whether hearing recovered.
        first_clause = {"tell", "story", "sea"}
        text = await harness.wait_for(
            ("transcript", {"text": lambda t: bool(first_clause & set(re.findall(r"[a-z]+", t.lower())))}),
            timeout=60,
        )
        assert text.source == "voice" and text.confidence > 0.0
        harness.assert_contract()


async def test_tts_error_is_logged_and_the_reply_still_ends(
    mosquitto: Mosquitto, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = sim_config(mosquitto.url, "rel-tts", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-tts") as harness, RunningDaemon(config) as rt:
        await _awake(harness)
        voice = rt.speaker._voice
        assert voice is not None
        real = voice.synthesize

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("simulated synthesis crash")

        voice.synthesize = broken  # type: ignore[method-assign]
        with caplog.at_level(logging.ERROR):
            say = await harness.say("This sentence cannot be synthesised.")
            finished = await harness.wait_for("playback_finished", timeout=20, say=say)
        assert "synthesis failed" in caplog.text and "simulated synthesis crash" in caplog.text
        assert finished.say == say
        voice.synthesize = real  # type: ignore[method-assign]
        say = await harness.say("Now I can talk again.")
        await harness.wait_for("playback_started", timeout=30, say=say)
        await harness.wait_for("playback_finished", timeout=30, say=say, interrupted=False)
        harness.assert_contract()


async def test_microphone_unplugged_and_replugged(
    mosquitto: Mosquitto, tmp_path: Path, speech_wav: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    config = sim_config(mosquitto.url, "rel-mic", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-mic") as harness, RunningDaemon(config) as rt:
        await _awake(harness)
        await harness.sim_audio(speech_wav)
        started = await harness.wait_for("speech_started", timeout=15)
        with caplog.at_level(logging.INFO):
            sim_mic(rt).unplug()
            failed = await harness.wait_for("utterance_failed", timeout=10, utterance=started.utterance)
            assert failed.reason == "interrupted"
            await asyncio.sleep(1.5)  # several reopen attempts while it is missing
            assert "input" in rt.state.faults
            assert "Audio input device problem" in caplog.text
            sim_mic(rt).replug()
            for _ in range(100):
                if "input" not in rt.state.faults:
                    break
                await asyncio.sleep(0.1)
        assert "input" not in rt.state.faults
        # Meanwhile the device still speaks, and hears again.
        say = await harness.say("I can still talk.")
        await harness.wait_for("playback_finished", timeout=30, say=say)
        await asyncio.sleep(0.6)  # half-duplex tail
        await harness.sim_audio(speech_wav)
        started = await harness.wait_for("speech_started", timeout=15)
        await harness.wait_for("transcript", timeout=60, utterance=started.utterance)
        harness.assert_contract()


async def test_speaker_unplugged_and_replugged(
    mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = shared_fake([usb_speaker()])

    def make_speaker(config: Config, state_dir: object, emit: Any, *_: object) -> Speaker:
        sink = SoundDeviceSink("USB Speaker", reopen_interval_s=0.3, backend=fake)
        return Speaker(config.speaking, sink, emit)

    monkeypatch.setattr("device.shell.runtime.make_speaker", make_speaker)
    config = sim_config(mosquitto.url, "rel-spk", tmp_path / "state")
    async with AgentHarness(mosquitto.url, device_id="rel-spk") as harness, RunningDaemon(config) as rt:
        await _awake(harness)
        fake.unplug("USB Speaker")  # the device vanished: its stream dies
        for _ in range(50):
            if "output" in rt.state.faults:
                break
            await asyncio.sleep(0.1)
        assert "output" in rt.state.faults
        # Replies still run on the playback clock (audio dropped) and finish; commands still work.
        say = await harness.say("Nobody can hear me right now.")
        await harness.wait_for("playback_finished", timeout=30, say=say)
        fake.plug(usb_speaker())  # re-plugged as a new device: found after a device-list rescan
        for _ in range(50):
            if "output" not in rt.state.faults:
                break
            await asyncio.sleep(0.1)
        assert "output" not in rt.state.faults
        say = await harness.say("Now you can hear me.")
        await harness.wait_for("playback_finished", timeout=30, say=say, interrupted=False)
        assert rt.state.phase is not Phase.ASLEEP
        harness.assert_contract()
    assert fake.streams_open_at_terminate == 0, "PortAudio was terminated under an open stream"


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    return result.returncode == 0


def _fill(path: Path) -> Path:
    filler = path / "filler"
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


async def test_outbox_disk_full_is_reported_and_the_device_keeps_serving(
    mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    mounted = await asyncio.to_thread(_mount_tmpfs, state, "2m")
    try:
        config = sim_config(mosquitto.url, "rel-disk", state)
        async with AgentHarness(mosquitto.url, device_id="rel-disk") as harness, RunningDaemon(config) as rt:
            await _awake(harness)
            seq_before = rt.outbox.last_seq
            with caplog.at_level(logging.ERROR):
                if mounted:
                    filler = await asyncio.to_thread(_fill, state)
                else:  # no tmpfs (not root): the outbox's disk-full error, injected

                    def full(*args: Any, **kwargs: Any) -> Any:
                        raise OutboxError("cannot store event in outbox: database or disk is full")

                    monkeypatch.setattr(rt.outbox, "append", full)
                    monkeypatch.setattr(rt.outbox, "append_all", full)  # the dispatch's group commit
                for i in range(40):  # enough events to need new pages in the database and its WAL
                    await harness.sim_text(f"message number {i} " + "x" * 200)
                for _ in range(100):
                    if "NOT stored" in caplog.text:
                        break
                    await asyncio.sleep(0.1)
            assert "NOT stored" in caplog.text and "full" in caplog.text
            # It keeps serving: commands are still executed (settings are tiny files, may fail too).
            await harness.stop()
            if mounted:
                filler.unlink()
            else:
                monkeypatch.undo()
            harness.mark()
            await harness.sim_text("disk has space again")
            ev = await harness.wait_for("transcript", timeout=15, text="disk has space again")
            assert ev.seq > seq_before
            harness.assert_contract(allow_open=False)
            assert mounted or "database or disk is full" in caplog.text
    finally:
        if mounted:
            await asyncio.to_thread(subprocess.run, ["umount", "-l", str(state)], capture_output=True)
