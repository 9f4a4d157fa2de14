"""What the status and the face report: the link, the agent's presence, audio device and storage
faults, the duplex mode and the canceller's strength; and the core's timers: thinking over, the
early duck and the duck's hold over, the wake-up animation over.
"""

from __future__ import annotations

from dataclasses import replace

from audio.events import AudioDeviceProblem, DuplexChanged, EchoRemoval
from device.core.actions import Action, Note
from device.core.derived import DUCK_HOLD_TIMER, EARLY_DUCK_TIMER, WAKING_TIMER, wake_animation_over
from device.core.inputs import AgentPresence, LinkChanged, StorageProblem, TimerFired
from device.core.rules import THINKING_TIMER, Rules
from device.core.state import DeviceState


def on_link(state: DeviceState, ev: LinkChanged, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, connected=ev.connected)


def on_agent(state: DeviceState, ev: AgentPresence, out: list[Action], rules: Rules) -> DeviceState:
    return replace(state, agent_online=ev.online)


def on_audio_problem(
    state: DeviceState, ev: AudioDeviceProblem, out: list[Action], rules: Rules
) -> DeviceState:
    out.append(
        Note(
            "info" if ev.ok else "error",
            f"Audio {ev.direction} device {'back' if ev.ok else 'problem'}: {ev.detail}",
        )
    )
    faults = state.faults - {ev.direction} if ev.ok else state.faults | {ev.direction}
    return replace(state, faults=faults)


def on_duplex(state: DeviceState, ev: DuplexChanged, out: list[Action], rules: Rules) -> DeviceState:
    """The listener's duplex mode (``status.duplex``); a fall back to half is logged with its reason."""
    if ev.mode == "full":
        out.append(Note("info", "Full duplex: the device hears the user over its own voice"))
    else:
        out.append(Note("warning" if state.duplex == "full" else "info", f"Half duplex: {ev.reason}"))
    return replace(state, duplex=ev.mode, duplex_reason=ev.reason if ev.mode == "half" else "")


def on_echo_removal(state: DeviceState, ev: EchoRemoval, out: list[Action], rules: Rules) -> DeviceState:
    """The canceller's measured strength; a change between weak and strong is logged with the duck
    it brings (``Rules.duck_depth``)."""
    before = state.echo_removed_db
    if before is None or rules.weak_canceller(ev.removed_db) != rules.weak_canceller(before):
        strength = "weak" if rules.weak_canceller(ev.removed_db) else "strong"
        out.append(
            Note(
                "warning" if strength == "weak" else "info",
                f"The echo canceller removes {ev.removed_db:.0f} dB of the speaker's echo ({strength}): "
                f"barge-ins duck the replies by {rules.duck_depth(ev.removed_db):g} dB",
            )
        )
    return replace(state, echo_removed_db=ev.removed_db)


def on_storage(state: DeviceState, ev: StorageProblem, out: list[Action], rules: Rules) -> DeviceState:
    out.append(Note("warning" if ev.ok else "error", f"Storage {'back' if ev.ok else 'fault'}: {ev.detail}"))
    faults = state.faults - {"storage"} if ev.ok else state.faults | {"storage"}
    return replace(state, faults=faults)


def on_timer(state: DeviceState, ev: TimerFired, out: list[Action], rules: Rules) -> DeviceState:
    if ev.name == THINKING_TIMER:
        return replace(state, thinking=False)
    if ev.name == DUCK_HOLD_TIMER:
        return replace(state, duck_held=False)
    if ev.name == EARLY_DUCK_TIMER:
        if state.early_duck:
            out.append(Note("debug", "Early duck released: no barge-in followed the voice over the reply"))
        return replace(state, early_duck=False)
    if ev.name == WAKING_TIMER:
        state, shown = wake_animation_over(state)
        out.extend(shown)
    return state
