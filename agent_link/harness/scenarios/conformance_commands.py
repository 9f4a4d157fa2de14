"""Conformance, part 2: command handling — duplicates, expiry, malformed input, asleep, config, restart.

Ends with the ``contract`` check over everything recorded during the suite.
"""

from __future__ import annotations

import time

from agent_link.harness.client import new_id
from agent_link.harness.scenario import ScenarioRun, scenario


@scenario("duplicate_command", "a command id sent twice is executed once")
async def duplicate_command(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    cid = new_id("dup")
    async with run.step("say twice with one command id → one playback"):
        await h.say("[happy] I say this only once.", say_id=cid, command_id=cid)
        await h.say("[happy] I say this only once.", say_id=cid, command_id=cid)
        await h.wait_for("playback_finished", 2 * t, say=cid)
        await h.expect_none("playback_started", within=1.5, say=cid)
        starts = [e for e in h.since() if e.type == "playback_started" and e.say == cid]
        assert len(starts) == 1, f"{len(starts)} playback_started for {cid}"
    await run.reset()


@scenario("expired_command", "a command past expires_at → command_rejected(expired), not executed")
async def expired_command(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    async with run.step("expired say → command_rejected(expired)"):
        cid = await h.say("You must never hear this.", expires_at=time.time() - 30)
        event = await h.wait_for("command_rejected", t, command=cid)
        assert event.reason == "expired", f"reason {event.reason}"
    async with run.step("nothing played"):
        await h.expect_none("playback_started", within=1.0, say=cid)
    await run.reset()


_MALFORMED: tuple[tuple[str, bytes, str, str | None], ...] = (
    ("not JSON", b"{this is not json", "invalid", None),
    ("JSON array", b"[1, 2]", "invalid", None),
    ("wrong field type", b'{"v":1,"type":"say","id":"bad-type","say":"r","text":5}', "invalid", "bad-type"),
    ("missing field", b'{"v":1,"type":"sleep_allowed","id":"bad-missing"}', "invalid", "bad-missing"),
    ("unknown type", b'{"v":1,"type":"dance","id":"bad-unknown"}', "unknown_type", "bad-unknown"),
    ("version 2", b'{"v":2,"type":"stop","id":"bad-version"}', "unsupported_version", "bad-version"),
)


@scenario("malformed_commands", "malformed commands → command_rejected with reason and detail; still running")
async def malformed_commands(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    for label, payload, reason, cid in _MALFORMED:
        unique = cid and f"{cid}-{new_id('m')}"
        data = payload.replace(cid.encode(), unique.encode()) if cid and unique else payload
        async with run.step(f"{label} → command_rejected({reason})"):
            await h.send_raw(data)
            event = await h.wait_for("command_rejected", t, reason=reason, command=unique)
            assert event.detail, "empty detail"
    async with run.step("payload over 64 KiB → command_rejected(invalid)"):
        big = f'{{"v":1,"type":"say","id":"{new_id("big")}","say":"r","text":"{"a" * 70000}"}}'
        await h.send_raw(big.encode())
        await h.wait_for("command_rejected", t, reason="invalid")
    async with run.step("device still answers: a say plays"):
        say = await h.say("[happy] Still here.")
        await h.wait_for("playback_finished", 2 * t, say=say)
    await run.reset()


@scenario("say_while_asleep", "say while asleep → command_rejected(asleep); nothing played")
async def say_while_asleep(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.reset()
    async with run.step("say → command_rejected(asleep)"):
        cid = await h.say("Nobody should hear this.")
        await h.wait_for("command_rejected", t, command=cid, reason="asleep")
    async with run.step("nothing played, still asleep"):
        await h.expect_none("playback_started", within=1.0)
        await h.wait_status(state="asleep", timeout=t)


@scenario("config_volume", "config volume → status shows it (then restored)")
async def config_volume(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.reset()
    before = h.status.volume if h.status and h.status.volume is not None else 0.8
    target = 0.35 if abs(before - 0.35) > 0.01 else 0.55
    async with run.step(f"config volume={target} → status volume={target}"):
        await h.config(volume=target)
        await h.wait_status(volume=target, timeout=t)
    async with run.step("no command_rejected"):
        await h.expect_none("command_rejected", within=0.5)
    await h.config(volume=before)
    await h.wait_status(volume=before, timeout=t)


@scenario(
    "restart_keeps_sleep_allowed",
    "device restart mid-activity: new boot, asleep, sleep_allowed false, volume and command ids kept",
    restarts=True,
)
async def restart_keeps_sleep_allowed(run: ScenarioRun) -> None:
    h, t = run.h, run.timeout
    await run.wake()
    before = h.status.volume if h.status and h.status.volume is not None else 0.8
    volume = 0.45 if abs(before - 0.45) > 0.01 else 0.65
    cid = new_id("once")
    async with run.step("before: a say played, volume set, activity (sleep_allowed false)"):
        await h.say("[happy] Remember me.", say_id=cid, command_id=cid)
        await h.wait_for("playback_finished", 2 * t, say=cid)
        await h.config(volume=volume)
        await h.wait_status(volume=volume, timeout=t)
        await h.sleep_allowed(False)
        status = await h.wait_status(sleep_allowed=False, timeout=t)
    old_boot = status.boot
    async with run.step("device restarts → status online, new boot, asleep, sleep_allowed false"):
        if run.ctx.restart_device is not None:
            await run.ctx.restart_device()
        else:
            run.note("restart the device now (waiting up to 120 s for a new boot)")
        restarted = await h.wait_status(
            timeout=120 if run.ctx.restart_device is None else 3 * t,
            online=True,
            boot=old_boot + 1,
            state="asleep",
        )
        assert restarted.sleep_allowed is False, f"sleep_allowed {restarted.sleep_allowed} after restart"
    async with run.step(f"volume still {volume}"):
        assert restarted.volume == volume, f"volume {restarted.volume} after restart"
    h.mark()
    async with run.step("tap → wake; sleep → sleep_ignored(command)"):
        await run.tap()
        await h.wait_for("wake", t)
        await h.sleep()
        await h.wait_for("sleep_ignored", t, via="command")
    async with run.step("a command id from before the restart is still a duplicate"):
        await h.say("[happy] Remember me.", say_id=cid, command_id=cid)
        await h.expect_none("playback_started", within=1.5, say=cid)
    async with run.step("sleep_allowed true → sleep honoured"):
        await h.sleep_allowed(True)
        await h.wait_status(sleep_allowed=True, timeout=t)
        await h.sleep()
        await h.wait_for("asleep", t)
    await h.config(volume=before)
    await h.wait_status(volume=before, timeout=t)


@scenario("asleep_hears_nothing", "asleep, the microphone is closed: speech is not heard, no wake")
async def asleep_hears_nothing(run: ScenarioRun) -> None:
    h = run.h
    if run.ctx.say_to_device is None:
        run.note("skipped: no voice to speak with (say_to_device not set)")
        return
    await run.reset()
    async with run.step("speech while asleep → no speech_started, transcript or wake"):
        await run.ctx.say_to_device("Hello robot, are you awake?")
        await h.expect_none(lambda e: e.type in ("speech_started", "transcript", "wake"), within=4.0)
    async with run.step("still asleep"):
        await h.wait_status(state="asleep", timeout=1.0)


@scenario("contract", "the whole event stream so far keeps the contract (seq, ids, utterances, playback)")
async def contract(run: ScenarioRun) -> None:
    async with run.step(f"{len(run.h.events)} events: no contract violation"):
        run.h.assert_contract()
