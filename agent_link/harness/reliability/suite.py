"""Fault injection against the real daemon: kill -9, broker outages, partitions, fuzzed input.

:class:`FaultRunner` drives one simulated daemon (:class:`DaemonProcess`) through conversations
with an :class:`AgentHarness`, injects a fault at a chosen moment, and afterwards checks what the
contract promises: every ``speech_started`` closed once, ``seq`` without gaps per boot, no
duplicate execution, nothing executed after ``expires_at``, and nothing lost — every event the
daemon logged as stored (``→ type #seq``) reached the agent. Used by ``robot-face bench
reliability`` and ``tests/reliability``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import aiomqtt

from agent_link.harness.client import AgentHarness
from agent_link.harness.contract import check_contract, dedupe_redeliveries
from agent_link.harness.reliability.daemon import DaemonProcess
from agent_link.harness.reliability.fuzz import MALFORMED_REASONS, FuzzInput, PayloadFuzzer
from agent_link.harness.reliability.report import Broker, ReliabilityReport, current_boot, stored_events
from agent_link.protocol.messages import CommandRejectedEvent, Event

_LOGGER = logging.getLogger(__name__)

KILL_MOMENTS = ("mid_utterance", "mid_reply", "goodbye_before_sleep", "random")
"""Where in a conversation ``kill_cycle`` kills the daemon."""
LONG_REPLY = (
    "Once upon a time a little robot lived by the sea. Every morning it counted the waves, "
    "and every evening it told the gulls what it had counted."
)
PWNED_MARKER = "/tmp/robot-face-pwned"
"""The file hostile fuzz payloads try to create; it must never appear."""
_TAG = re.compile(r"\[[^\]]*\]?")
_STUCK = " (known bug: tag-only first chunk stays open after stop, tests/reliability/test_stuck_reply.py)"


class FaultRunner:
    """One daemon, one harness, one broker; scenario methods each inject one fault and check."""

    def __init__(
        self,
        broker: Broker,
        daemon: DaemonProcess,
        harness: AgentHarness,
        report: ReliabilityReport | None = None,
        seed: int = 1,
        speech_wav: bytes | None = None,
    ) -> None:
        self.broker = broker
        self.daemon = daemon
        self.harness = harness
        self.report = report or ReliabilityReport()
        self.rng = random.Random(seed)
        self.speech_wav = speech_wav
        self.expired_ids: set[str] = set()
        """Commands that must have been rejected ``expired`` (sent with a short expiry to a dead daemon)."""
        self.expected: dict[str, Any] = {}
        """Settings the device must show after a restart (sleep_allowed, volume)."""

    # ---- helpers -----------------------------------------------------------------------------------
    async def start_daemon(self, timeout: float = 120.0) -> float:
        """Start the daemon, wait for its models and its online status; returns seconds to ready."""
        t0 = time.monotonic()
        self.daemon.start()
        await self.daemon.wait_ready(timeout)
        await self.harness.wait_status(boot=current_boot(self.daemon), online=True, timeout=30)
        return time.monotonic() - t0

    async def ensure_awake(self) -> None:
        """Tap until the device reports itself awake."""
        status = self.harness.status
        if status is not None and status.state == "asleep":
            self.harness.mark()
            await self.harness.sim_tap()
            await self.harness.wait_for("wake", timeout=15)
        await self.harness.wait_status(online=True, timeout=15)
        if self.harness.status is not None and self.harness.status.state == "asleep":
            raise AssertionError("device still asleep after a tap")

    async def set_settings(self, allowed: bool | None = None) -> None:
        """Random (or given) ``sleep_allowed`` and random ``volume``, remembered as what must survive a
        restart."""
        allowed = self.rng.random() < 0.5 if allowed is None else allowed
        volume = round(self.rng.uniform(0.1, 1.0), 2)
        await self.harness.sleep_allowed(allowed)
        await self.harness.config(volume=volume)
        await self.harness.wait_status(sleep_allowed=allowed, volume=volume, timeout=10)
        self.expected = {"sleep_allowed": allowed, "volume": volume}

    # ---- scenarios ---------------------------------------------------------------------------------
    async def kill_cycle(self, moment: str) -> None:
        """Kill -9 the daemon at ``moment`` of a conversation, restart it, check its state."""
        await self.ensure_awake()
        await self.set_settings(True if moment == "goodbye_before_sleep" else None)
        self.harness.mark()
        if moment == "mid_utterance":
            if self.speech_wav is None:
                raise ValueError("mid_utterance needs speech_wav")
            await self.harness.sim_audio(self.speech_wav)
            await self.harness.wait_for("speech_started", timeout=15)
            await asyncio.sleep(self.rng.uniform(0.0, 1.0))
        elif moment == "mid_reply":
            await self.harness.say(LONG_REPLY)
            await self.harness.wait_for("playback_started", timeout=30)
            await asyncio.sleep(self.rng.uniform(0.0, 1.5))
        elif moment == "goodbye_before_sleep":
            await self.harness.say("Goodbye, see you soon. [sleep]")
            await self.harness.wait_for("playback_started", timeout=30)
            await asyncio.sleep(self.rng.uniform(0.0, 0.4))
        else:
            await self.harness.sim_text("tell me something")
            await self.harness.say(LONG_REPLY)
            await asyncio.sleep(self.rng.uniform(0.0, 3.0))
        self.daemon.kill()
        self.report.faults[f"kill -9 {moment}"] += 1
        # While it is dead: a command that expires before it is back, and a setting to apply after.
        expiring = await self.harness.say("too late", expires_at=time.time() + 0.3)
        self.expired_ids.add(expiring)
        allowed = not self.expected["sleep_allowed"]
        await self.harness.sleep_allowed(allowed)
        self.expected["sleep_allowed"] = allowed
        self.report.timing("restart to ready", await self.start_daemon())
        await self.harness.wait_status(state="asleep", online=True, timeout=20, **self.expected)
        await self.harness.wait_for("command_rejected", timeout=20, command=expiring, reason="expired")
        self.report.runs += 1

    async def broker_outage(self, kill: bool, down_s: float = 1.5) -> None:
        """Stop (or kill) the broker during a reply; measure reconnect; the reply's end must arrive."""
        await self.ensure_awake()
        self.harness.mark()
        say = await self.harness.say(LONG_REPLY)
        await self.harness.wait_for("playback_started", timeout=30, say=say)
        connects = self.daemon.count(r"INFO +agent_link\.\S+: Connected to")
        if kill:
            self.broker.kill()
        else:
            self.broker.stop()
        self.report.faults["broker killed" if kill else "broker stopped"] += 1
        await asyncio.sleep(down_s)
        t0 = time.monotonic()
        self.broker.start()
        await self.daemon.wait_log(r"INFO +agent_link\.\S+: Connected to", connects + 1, timeout=90)
        self.report.timing("broker back → device reconnected", time.monotonic() - t0)
        await self.harness.wait_connected(timeout=30)
        await self.harness.wait_for("playback_finished", timeout=60, say=say)
        self.report.runs += 1

    async def partition(self, proxy: Any, stall_s: float = 8.0) -> None:
        """Stall the TCP path (no FIN/RST): the Will fires, the device notices, then recovers.

        ``proxy`` is the :class:`StallingProxy` the daemon connects through.
        """
        await self.ensure_awake()
        boot = current_boot(self.daemon)
        lost_before = self.daemon.count(r"MQTT connection to .* lost or failed")
        t0 = time.monotonic()
        proxy.stall()
        self.report.faults["network partition"] += 1
        will_s, notice_s = await asyncio.gather(
            _elapsed(self.harness.wait_status(online=False, boot=boot, timeout=30, new=True), t0),
            _elapsed(self.daemon.wait_log(r"MQTT connection to .* lost or failed", lost_before + 1, 60), t0),
        )
        self.report.timing("partition → Last Will", will_s)
        self.report.timing("partition → device noticed", notice_s)
        self.harness.mark()
        text = f"are you still there {self.report.faults['network partition']}"
        await self.harness.sim_text(text)  # queued by the broker in the device's session
        await asyncio.sleep(max(0.0, stall_s - (time.monotonic() - t0)))
        t1 = time.monotonic()
        proxy.resume()
        await self.harness.wait_status(online=True, boot=boot, timeout=60, new=True)
        self.report.timing("path back → device online", time.monotonic() - t1)
        await self.harness.wait_for("transcript", timeout=30, text=text)
        self.report.runs += 1

    async def fuzz(
        self, count: int, seed: int = 1, duplicate_ratio: float = 0.03, barrier_every: int = 200
    ) -> list[str]:
        """Send ``count`` fuzzed commands and sim inputs to the running daemon; check every answer.

        Malformed ones must each get one ``command_rejected`` (invalid / unknown_type /
        unsupported_version) in order; valid ones are executed once (re-sent duplicates are not),
        expired ones rejected ``expired``; the daemon must not crash or hang. Returns the problems
        (also added to the report).
        """
        fuzzer = PayloadFuzzer(seed)
        rng = random.Random(seed)
        await self.ensure_awake()
        self.harness.mark()
        sentinel = f"fuzz-sentinel-{seed}-{rng.randrange(1 << 30):x}"
        async with aiomqtt.Client(
            self.broker.host, self.broker.port, identifier=f"fuzzer-{sentinel}",
            protocol=aiomqtt.ProtocolVersion.V5,
        ) as client:  # fmt: skip
            inputs = fuzzer.inputs(count, time.time())
            sent, valid_sent, duplicates = await self._publish_fuzz(
                client, inputs, rng, duplicate_ratio, barrier_every, sentinel
            )
            await self._end_fuzz(client, sentinel, count)
        await asyncio.sleep(2.0)  # the stop's interrupted finishes
        self.report.faults["fuzzed input"] += len(sent) + duplicates
        problems = self._check_fuzz(sent, valid_sent, sentinel)
        self._count_fuzz(sent, valid_sent, duplicates)
        self.report.runs += 1
        self.report.violations.extend(problems)
        return problems

    async def _publish_fuzz(
        self,
        client: aiomqtt.Client,
        inputs: Iterable[FuzzInput],
        rng: random.Random,
        duplicate_ratio: float,
        barrier_every: int,
        sentinel: str,
    ) -> tuple[list[FuzzInput], list[FuzzInput], int]:
        """Publish ``inputs`` (some valid commands twice); the inputs sent, the valid ones, the re-sends."""
        topics = self.harness.topics
        channel_topic = {
            "command": topics.command,
            "sim/text": topics.sim_text,
            "sim/audio": topics.sim_audio,
            "sim/tap": topics.sim_tap,
        }
        sent: list[FuzzInput] = []
        duplicates = 0
        valid_sent: list[FuzzInput] = []
        for i, item in enumerate(inputs):
            if i % 150 == 0:
                await client.publish(topics.sim_tap, b"{}", qos=1)  # wake it if a [sleep] tag put it to sleep
            if i % barrier_every == barrier_every - 1:
                # Keep the broker's per-client queue (mosquitto max_queued_messages, default 1000)
                # from overflowing: wait until the daemon has answered everything so far.
                barrier = f"{sentinel}-b{i}"
                await client.publish(topics.command, _unknown(barrier), qos=1)
                await self.harness.wait_for("command_rejected", timeout=120, command=barrier)
            await client.publish(channel_topic[item.channel], item.payload, qos=1)
            sent.append(item)
            if item.command is not None:
                valid_sent.append(item)
                if rng.random() < duplicate_ratio:
                    await client.publish(topics.command, item.payload, qos=1)  # same id: runs once
                    duplicates += 1
        return sent, valid_sent, duplicates

    async def _end_fuzz(self, client: aiomqtt.Client, sentinel: str, count: int) -> None:
        """Wait until the daemon has answered every input (its answer to ``sentinel``), then stop."""
        topics = self.harness.topics
        await client.publish(topics.command, _unknown(sentinel), qos=1)
        await self.harness.wait_for("command_rejected", timeout=120 + count / 20, command=sentinel)
        await client.publish(
            topics.command, json.dumps({"v": 1, "type": "stop", "id": sentinel + "-stop"}).encode(), qos=1
        )

    def _count_fuzz(self, sent: list[FuzzInput], valid_sent: list[FuzzInput], duplicates: int) -> None:
        """Add what was sent to the report's fuzz counts."""
        c = self.report.fuzz
        c["sent"] += len(sent) + duplicates
        c["malformed"] += sum(1 for item in sent if item.malformed)
        c["valid commands"] += len(valid_sent)
        c["duplicates re-sent"] += duplicates
        c["commands"] += sum(1 for item in sent if item.channel == "command")
        c["sim inputs"] += sum(1 for item in sent if item.channel != "command")

    def _check_fuzz(self, sent: list[FuzzInput], valid: list[FuzzInput], sentinel: str) -> list[str]:
        """What the daemon's answers to the fuzzed inputs (and the daemon itself) got wrong."""
        events, _ = dedupe_redeliveries(self.harness.since())
        rejections = [
            ev for ev in events if ev.type == "command_rejected" and not str(ev.command).startswith(sentinel)
        ]
        valid_ids = {item.command.id for item in valid if item.command is not None}
        problems = self._check_malformed(sent, rejections, valid_ids)
        per_id = Counter(ev.command for ev in rejections if ev.command in valid_ids)
        problems += [f"command {cid} rejected {n} times" for cid, n in per_id.items() if n > 1]
        reasons = {ev.command: ev.reason for ev in rejections if ev.command in valid_ids}
        finished = {ev.say for ev in events if ev.type == "playback_finished"}
        problems += self._check_valid(valid, reasons, finished)
        problems += self._check_survived()
        return problems

    def _check_malformed(
        self, sent: list[FuzzInput], rejections: list[CommandRejectedEvent], valid_ids: set[str]
    ) -> list[str]:
        """Each malformed input answered, in order, by one rejection with a malformed reason and detail."""
        problems: list[str] = []
        answered = [ev for ev in rejections if ev.command not in valid_ids]
        malformed = [item for item in sent if item.malformed]
        self.report.fuzz["rejected malformed"] += len(answered)
        if len(answered) != len(malformed):
            problems.append(
                f"{len(malformed)} malformed inputs but {len(answered)} command_rejected for them"
            )
        for ev, item in zip(answered, malformed, strict=False):
            if ev.reason not in MALFORMED_REASONS or not ev.detail:
                problems.append(
                    f"malformed {item.channel} {item.payload[:60]!r} answered by {ev.reason}: {ev.detail!r}"
                )
        return problems

    def _check_valid(
        self, valid: list[FuzzInput], reasons: Mapping[str, str], finished: set[str]
    ) -> list[str]:
        """Expired commands rejected and not played, other says played or rejected, settings applied."""
        problems: list[str] = []
        sent_at = time.time()
        expected: dict[str, Any] = {}
        executed = 0
        seen: set[str] = set()
        for item in valid:
            cmd = item.command
            assert cmd is not None
            if cmd.id in seen:
                continue  # a later command reusing an id is a duplicate: not executed, not answered
            seen.add(cmd.id)
            expired = cmd.expires_at is not None and cmd.expires_at < sent_at
            if expired:
                if reasons.get(cmd.id) != "expired":
                    problems.append(
                        f"expired command {cmd.id} not rejected 'expired' (got {reasons.get(cmd.id)})"
                    )
                if getattr(cmd, "say", None) in finished:
                    problems.append(f"expired say {cmd.id} was played")
                continue
            if cmd.type == "say":
                if cmd.id not in reasons and cmd.say not in finished:
                    known = "" if cmd.final or _TAG.sub("", cmd.text).strip() else _STUCK
                    problems.append(f"valid say {cmd.id} neither played nor rejected{known}")
                executed += cmd.id not in reasons
            elif cmd.type == "sleep_allowed":
                expected["sleep_allowed"] = cmd.value
            elif cmd.type == "config" and cmd.volume is not None:
                expected["volume"] = cmd.volume
        self.report.fuzz["says executed"] += executed
        return problems + self._check_settings(expected)

    def _check_settings(self, expected: dict[str, Any]) -> list[str]:
        """The device's status shows the settings the last valid commands set."""
        problems: list[str] = []
        status = self.harness.status
        for key, value in expected.items():
            if status is None or getattr(status, key) != value:
                problems.append(
                    f"after fuzzing status {key}={getattr(status, key, None)!r}, last valid command set {value!r}"
                )
        return problems

    def _check_survived(self) -> list[str]:
        """The daemon still runs, logged no traceback, and no payload created ``PWNED_MARKER``."""
        problems: list[str] = []
        if not self.daemon.running:
            problems.append("daemon died during fuzzing")
        tracebacks = self.daemon.count("Traceback")
        if tracebacks:
            problems.append(f"daemon logged {tracebacks} traceback(s) during fuzzing")
        if Path(PWNED_MARKER).exists():
            problems.append(f"a payload created {PWNED_MARKER}: something was executed")
        return problems

    # ---- verdict -----------------------------------------------------------------------------------
    async def settle(self, timeout: float = 15.0) -> None:
        """Wait (at most ``timeout`` s) until every event the daemon stored has reached the agent."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            received = {(ev.boot, ev.seq) for ev in self.harness.events}
            if stored_events(self.daemon.log()) <= received:
                return
            await asyncio.sleep(0.1)

    async def verify(self, allow_open: bool = False) -> list[str]:
        """Check everything received so far; add counts and violations to the report.

        ``allow_open``: utterances still open are reported in :meth:`open_utterances` instead of as
        violations (a recording that ends mid-utterance). Waits for events still in flight first
        (:meth:`settle`): "lost" means never arrived.
        """
        await self.settle()
        problems = [str(v) for v in check_contract(self.harness.events, allow_open=allow_open)]
        problems += [f"invalid payload from device on {b.topic}: {b.error}" for b in self.harness.bad]
        received = {(ev.boot, ev.seq) for ev in self.harness.events}
        missing = sorted(stored_events(self.daemon.log()) - received)
        if missing:
            problems.append(f"{len(missing)} stored event(s) never reached the agent: {missing[:20]}")
        unique, _ = dedupe_redeliveries(self.harness.events)  # QoS 1 may deliver an event twice
        problems += self._check_commands(unique)
        self.report.events_checked += len(received)
        self.report.lost += len(missing)
        self.report.violations.extend(problems)
        return problems

    def open_utterances(self) -> list[Event]:
        """``speech_started`` events never closed by a ``transcript`` or ``utterance_failed``."""
        events, _ = dedupe_redeliveries(self.harness.events)
        closed = {ev.utterance for ev in events if ev.type in ("transcript", "utterance_failed")}
        return [ev for ev in events if ev.type == "speech_started" and ev.utterance not in closed]

    def _check_commands(self, events: list[Event]) -> list[str]:
        problems: list[str] = []
        played = Counter(ev.say for ev in events if ev.type == "playback_started")
        problems += [f"reply {s} played {n} times" for s, n in played.items() if n > 1]
        rejected = {ev.command: ev.reason for ev in events if ev.type == "command_rejected"}
        for cid in self.expired_ids:
            if played.get(cid):
                problems.append(f"command {cid} executed after its expires_at")
            if rejected.get(cid) != "expired":
                problems.append(
                    f"command {cid} sent to a dead daemon, expired meanwhile, not rejected 'expired'"
                )
        return problems


async def _elapsed(awaitable: Any, t0: float) -> float:
    await awaitable
    return time.monotonic() - t0


def _unknown(command_id: str) -> bytes:
    return json.dumps({"v": 1, "type": "no_such_type", "id": command_id}).encode()
