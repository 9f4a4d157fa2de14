"""The inbox's two lanes: control ahead of data, arrival stamps, markers, the end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_link.link.settings import LinkSettings
from agent_link.protocol.messages import (
    ConfigCommand,
    SayCommand,
    SleepAllowedCommand,
    SleepCommand,
    StopCommand,
)
from audio.events import PlaybackFinished, SpeechStarted
from device.core.inputs import CommandReceived, DeviceInput, Reached, Stamped, Tapped, TypedText, is_control
from device.shell.fleet_device import SimDevice
from device.shell.inbox import Inbox


def _say(n: int) -> CommandReceived:
    return CommandReceived(SayCommand(id=f"c{n}", say="r1", text=f"chunk {n}", final=False), float(n))


def _drain(inbox: Inbox) -> list[Stamped | Reached | None]:
    out: list[Stamped | Reached | None] = []
    while not inbox.empty():
        out.append(inbox.get_nowait())
    return out


def test_control_items_are_the_tap_stop_sleep_and_sleep_allowed() -> None:
    control: list[DeviceInput] = [
        Tapped("button", 1.0),
        CommandReceived(StopCommand(id="x"), 1.0),
        CommandReceived(SleepCommand(id="s"), 1.0),
        CommandReceived(SleepAllowedCommand(id="a", value=False), 1.0),
    ]
    data: list[DeviceInput] = [
        _say(1),
        CommandReceived(ConfigCommand(id="c", volume=0.5), 1.0),
        TypedText("u1", "hello", 1.0),
        SpeechStarted("u2", 1.0),
        PlaybackFinished("r1", False, 1.0),
    ]
    assert all(is_control(e) for e in control)
    assert not any(is_control(e) for e in data)


def test_control_goes_ahead_of_data_and_leaves_a_marker_where_it_arrived() -> None:
    inbox = Inbox()
    stop = CommandReceived(StopCommand(id="x"), 9.0)
    tap = Tapped("sim", 10.0)
    assert [inbox.put(event) for event in (_say(1), _say(2), stop, _say(3), tap)] == [0, 0, 2, 0, 4]
    assert inbox.qsize() == 7  # five inputs, two markers
    assert _drain(inbox) == [
        Stamped(3, stop),
        Stamped(5, tap),
        Stamped(1, _say(1)),
        Stamped(2, _say(2)),
        Reached(3, 9.0),
        Stamped(4, _say(3)),
        Reached(5, 10.0),
    ]


def test_a_control_item_put_while_data_waits_still_goes_first() -> None:
    inbox = Inbox()
    inbox.put(_say(1))
    inbox.put(_say(2))
    first = inbox.get_nowait()
    inbox.put(Tapped("button", 5.0))
    assert first == Stamped(1, _say(1))
    assert _drain(inbox) == [Stamped(3, Tapped("button", 5.0)), Stamped(2, _say(2)), Reached(3, 5.0)]


def test_the_plain_fifo_keeps_arrival_order_with_the_marker_right_behind() -> None:
    inbox = Inbox(control_first=False)
    stop = CommandReceived(StopCommand(id="x"), 9.0)
    for event in (_say(1), stop, _say(2)):
        inbox.put(event)
    assert _drain(inbox) == [Stamped(1, _say(1)), Stamped(2, stop), Reached(2, 9.0), Stamped(3, _say(2))]


def test_the_end_comes_after_what_was_put_before_it_but_control_put_later_still_goes_first() -> None:
    inbox = Inbox()
    inbox.put(_say(1))
    inbox.end()
    inbox.put(Tapped("sim", 2.0))
    assert _drain(inbox) == [Stamped(2, Tapped("sim", 2.0)), Stamped(1, _say(1)), None, Reached(2, 2.0)]


def test_get_nowait_on_an_empty_inbox_raises() -> None:
    with pytest.raises(IndexError):
        Inbox().get_nowait()


async def test_get_waits_for_a_put_and_returns_none_at_the_end() -> None:
    inbox = Inbox()
    waiter = asyncio.create_task(inbox.get())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    inbox.put(Tapped("sim", 1.0))
    assert await asyncio.wait_for(waiter, 1.0) == Stamped(1, Tapped("sim", 1.0))
    assert await asyncio.wait_for(inbox.get(), 1.0) == Reached(1, 1.0)
    inbox.end()
    assert await asyncio.wait_for(inbox.get(), 1.0) is None


async def _burst_then_stop(device: SimDevice) -> list[tuple[str, str | None]]:
    """A tap; then 40 chunks of a new reply and a stop, put at once: what the device publishes."""
    loop = asyncio.create_task(device._loop())
    try:
        device.put(Tapped("sim", 1.0))
        while not device.inbox.empty():
            await asyncio.sleep(0.001)
        for n in range(40):
            device.put(CommandReceived(SayCommand(id=f"c{n}", say="r1", text="More. ", final=False), 2.0))
        device.put(CommandReceived(StopCommand(id="x"), 3.0))
        for _ in range(500):
            await asyncio.sleep(0.002)
            if device.inbox.empty() and not device.state.replies:
                break
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    await device.dispatch.flush()
    events = [json.loads(payload) for _, payload in device.outbox.pending()]
    device.dispatch.close()
    device.outbox.close()
    device.gate.store.close()
    return [(e["type"], e.get("say")) for e in events]


async def test_the_fleet_device_steps_a_stop_ahead_of_the_chunks_queued_before_it(tmp_path: Path) -> None:
    """The fleet simulator's device runs the same inbox: the reply never reaches its speaker."""
    published = await _burst_then_stop(SimDevice("d1", LinkSettings(), tmp_path))
    assert published == [("wake", None), ("playback_finished", "r1")]


async def test_with_the_plain_fifo_the_same_burst_reaches_the_speaker_first(tmp_path: Path) -> None:
    device = SimDevice("d2", LinkSettings(), tmp_path)
    device.inbox = Inbox(control_first=False)
    published = await _burst_then_stop(device)
    assert published == [("wake", None), ("playback_started", "r1"), ("playback_finished", "r1")]
