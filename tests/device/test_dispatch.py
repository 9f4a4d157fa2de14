"""The shell's dispatch: each action reaches its part; slow parts never hold control back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_link.link.outbox import Outbox
from agent_link.protocol.event_messages import TapBody
from audio.events import AudioDeviceProblem
from device.core.actions import (
    ApplySettings,
    CloseMicrophone,
    DuckSpeech,
    HoldSpeech,
    OpenMicrophone,
    OpenRecord,
    Publish,
    Record,
    ReleaseSpeech,
    StopSpeaking,
    UnduckSpeech,
)
from device.core.inputs import DeviceInput
from device.core.state import Settings
from device.shell.dispatch import Dispatch


class SlowMicrophone:
    """A microphone whose open takes as long as the test says (a USB device waking up)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()
        self.fail = fail

    async def open(self) -> None:
        self.calls.append("open…")
        await self.release.wait()
        if self.fail:
            raise OSError("no such device")
        self.calls.append("open")

    async def close(self) -> None:
        self.calls.append("close")

    def set_speaking(self, speaking: bool) -> None:
        self.calls.append(f"speaking={speaking}")


class RecordingSpeaker:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.loaded = asyncio.Event()

    def speak(self, say: str, text: str, final: bool) -> None:
        self.calls.append(f"speak {say}")

    def stop(self) -> None:
        self.calls.append("stop")

    def hold(self, say: str, *, at_once: bool = False) -> None:
        self.calls.append(f"hold {say} {at_once}")

    def release(self, say: str) -> None:
        self.calls.append(f"release {say}")

    def set_volume(self, volume: float) -> None:
        self.calls.append(f"volume {volume}")

    def duck(self, level_db: float) -> None:
        self.calls.append(f"duck {level_db}")

    def unduck(self) -> None:
        self.calls.append("unduck")

    async def set_voice(self, voice: str) -> None:
        self.calls.append(f"voice {voice}…")
        await self.loaded.wait()
        self.calls.append(f"voice {voice}")


class Records:
    def __init__(self) -> None:
        self.log: list[tuple[str, str, str]] = []

    def open(self, kind: str, id: str) -> None:
        self.log.append(("open", kind, id))

    def close(self, kind: str, id: str) -> None:
        self.log.append(("close", kind, id))


class Link:
    def __init__(self) -> None:
        self.notified = 0

    def notify_outbox(self) -> None:
        self.notified += 1


class NoSettings:
    def save_settings(self, settings: Settings) -> None:
        pass


def _dispatch(tmp_path: Path, put: list[DeviceInput]) -> tuple[Dispatch, Outbox, Records, Link]:
    outbox, records, link = Outbox(tmp_path / "o.db", "dev", 1), Records(), Link()
    dispatch = Dispatch(put=put.append, outbox=outbox, link=link, records=records, settings=NoSettings())
    return dispatch, outbox, records, link


async def test_a_stop_does_not_wait_for_the_microphone_or_a_voice_to_load(tmp_path: Path) -> None:
    events: list[DeviceInput] = []
    dispatch, outbox, _, _ = _dispatch(tmp_path, events)
    mic, speaker = SlowMicrophone(), RecordingSpeaker()
    dispatch.listener, dispatch.speaker = mic, speaker
    await asyncio.wait_for(dispatch.execute([OpenMicrophone(), ApplySettings("de", "/v/de.onnx", 0.5)]), 1.0)
    await asyncio.wait_for(dispatch.execute([StopSpeaking(), HoldSpeech("r1", at_once=True)]), 1.0)
    assert speaker.calls[-2:] == ["stop", "hold r1 True"]
    assert "open" not in mic.calls and "voice /v/de.onnx" not in speaker.calls  # both still busy
    await dispatch.execute([CloseMicrophone()])
    mic.release.set()
    speaker.loaded.set()
    await asyncio.wait_for(dispatch.settled("microphone"), 1.0)
    await asyncio.wait_for(dispatch.settled("voice"), 1.0)
    assert mic.calls == ["open…", "open", "close"]  # the microphone's own work stays in order
    assert "voice /v/de.onnx" in speaker.calls and events == []
    outbox.close()


async def test_a_microphone_that_fails_to_open_comes_back_as_an_event(tmp_path: Path) -> None:
    events: list[DeviceInput] = []
    dispatch, outbox, _, _ = _dispatch(tmp_path, events)
    mic = SlowMicrophone(fail=True)
    dispatch.listener = mic
    await dispatch.execute([OpenMicrophone()])
    mic.release.set()
    await dispatch.settled("microphone")
    assert len(events) == 1 and isinstance(events[0], AudioDeviceProblem)
    assert events[0].direction == "input" and not events[0].ok and "no such device" in events[0].detail
    outbox.close()


async def test_a_record_is_closed_only_once_its_closing_event_is_stored(tmp_path: Path) -> None:
    events: list[DeviceInput] = []
    dispatch, outbox, records, link = _dispatch(tmp_path, events)
    speaker = RecordingSpeaker()
    dispatch.speaker = speaker
    body = TapBody(source="sim", ts=1.0)
    await dispatch.execute([OpenRecord("replies", "r1"), Publish(body, closes=Record("replies", "r1"))])
    assert records.log == [("open", "replies", "r1")] and link.notified == 0  # queued, not yet stored
    await dispatch.flush()
    assert len(outbox) == 1 and link.notified == 1  # stored, then the link goes first ...
    assert records.log == [("open", "replies", "r1"), ("close", "replies", "r1")]  # ... then the record
    outbox.close()  # the outbox cannot store any more: the record stays open for the next boot
    await dispatch.execute([OpenRecord("replies", "r2"), Publish(body, closes=Record("replies", "r2"))])
    await dispatch.flush()
    assert records.log[-1] == ("open", "replies", "r2") and link.notified == 1
    await dispatch.execute([ReleaseSpeech("r1")])
    assert speaker.calls == ["release r1"]


async def test_ducking_goes_to_the_speaker(tmp_path: Path) -> None:
    dispatch, outbox, _, _ = _dispatch(tmp_path, [])
    speaker = RecordingSpeaker()
    dispatch.speaker = speaker
    await dispatch.execute([DuckSpeech(-12.0), UnduckSpeech()])
    assert speaker.calls == ["duck -12.0", "unduck"]
    outbox.close()
