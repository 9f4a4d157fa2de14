"""The agent's commands: ``say`` (``device.core.rules.speaking``), ``stop``, ``sleep``
(``device.core.rules.sleep_wake``), ``sleep_allowed`` and ``config``: the settings applied and saved,
the voice following the language. Commands refused: ``command_rejected`` for a command the link could
not accept (malformed, expired...), as for the ``say`` chunks the rules refuse.
"""

from __future__ import annotations

from dataclasses import replace

from agent_link.protocol.messages import (
    ConfigCommand,
    SayCommand,
    SleepAllowedCommand,
    SleepCommand,
    StopCommand,
)
from device.core.actions import Action, ApplySettings, Note, SaveSettings
from device.core.early import remember
from device.core.inputs import CommandReceived, CommandRefused
from device.core.rules import Rules, reject, stop_speaking
from device.core.rules.sleep_wake import sleep_command
from device.core.rules.speaking import on_say
from device.core.state import DeviceState, EarlyControl, Settings


def on_command(state: DeviceState, ev: CommandReceived, out: list[Action], rules: Rules) -> DeviceState:
    cmd = ev.command
    if isinstance(cmd, SayCommand):
        return on_say(state, cmd, ev.ts, out, rules)
    if isinstance(cmd, StopCommand):
        live = frozenset(r.say for r in state.replies if not r.stopped)
        state = remember(state, EarlyControl("stop", state.arrival, ev.ts, stopped=live))
        return stop_speaking(state, out) if state.replies else state
    if isinstance(cmd, SleepCommand):
        state = remember(state, EarlyControl("sleep", state.arrival, ev.ts))
        if not state.awake:
            out.append(Note("info", f"sleep {cmd.id} while asleep: nothing to do"))
            return state
        return sleep_command(state, ev.ts, out, state.arrival)
    if isinstance(cmd, SleepAllowedCommand):
        before = EarlyControl(
            "sleep_allowed", state.arrival, ev.ts, sleep_allowed=state.settings.sleep_allowed
        )
        state = remember(state, before)
        return _with_settings(
            state, replace(state.settings, sleep_allowed=cmd.value), out, rules, apply=False
        )
    if isinstance(cmd, ConfigCommand):
        s = state.settings
        language = cmd.language if cmd.language is not None else s.language
        # The TTS voice follows the language: a new language without a voice drops the voice chosen
        # for the old one (the language's configured voice speaks instead).
        voice = cmd.voice if cmd.voice is not None else (s.voice if language == s.language else None)
        new = Settings(
            sleep_allowed=s.sleep_allowed,
            language=language,
            voice=voice,
            volume=cmd.volume if cmd.volume is not None else s.volume,
        )
        return _with_settings(state, new, out, rules, apply=True)
    out.append(Note("warning", f"Command type {type(cmd).__name__} has no rule"))
    return state


def on_refused(state: DeviceState, ev: CommandRefused, out: list[Action], rules: Rules) -> DeviceState:
    out.append(Note("warning", f"Command {ev.command_id} rejected ({ev.reason}): {ev.detail}"))
    out.append(reject(ev.command_id, ev.reason, ev.detail, ev.ts))
    return state


def voice_for(settings: Settings, rules: Rules) -> str:
    """The voice that speaks: the one the agent chose, else the one configured for the language."""
    if settings.voice:
        return settings.voice
    return rules.voices.get(settings.language) or rules.default_voice


def apply_settings(settings: Settings, rules: Rules) -> list[Action]:
    actions: list[Action] = []
    if (
        not settings.voice
        and settings.language not in rules.voices
        and not settings.language.lower().startswith("en")
    ):
        actions.append(
            Note(
                "warning",
                f"No voice configured for language {settings.language!r} (speaking.voices): "
                "the default voice speaks it",
            )
        )
    actions.append(ApplySettings(settings.language, voice_for(settings, rules), settings.volume))
    return actions


def _with_settings(
    state: DeviceState, settings: Settings, out: list[Action], rules: Rules, *, apply: bool
) -> DeviceState:
    if apply:
        out.extend(apply_settings(settings, rules))
    out.append(SaveSettings(settings.sleep_allowed, settings.language, settings.voice, settings.volume))
    return replace(state, settings=settings)
