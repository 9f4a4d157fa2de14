"""Settings of the stand-in companion agent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompanionSettings:
    """How the stand-in companion behaves (the Companion node's knobs, in small)."""

    sleep_after_silence_s: float = 45.0
    """Seconds with no turn, no speech and nothing played before it sends ``sleep`` (45; 0 = never)."""
    min_confidence: float = 0.4
    """Below this a transcript is "heard poorly" and cannot change the mode (0.4; 0 = off)."""
    sleep_by_command: bool = False
    """Say goodbye then send a ``sleep`` command, instead of a ``[sleep]`` tag (default False)."""
    max_questions: int = 2
    """How often it asks "shall we stop?" in a row before carrying on (default 2)."""
    llm_model: str = "gpt-4o-mini"
    """Model for free-conversation replies when ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is set."""
    llm_timeout_s: float = 10.0
    """Timeout of one model call, in seconds (default 10)."""
