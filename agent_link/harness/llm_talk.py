"""Free-conversation replies from an OpenAI-compatible model (only when configured)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence

from agent_link.harness.brain import RuleFreeTalk

_LOGGER = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are a warm robot companion keeping an older person company. Reply in one or two short, "
    "spoken sentences about what they said. Do not ask a follow-up question. No lists, no emojis. "
    "You may begin with one emotion tag: [happy] [sad] [surprised] [thinking] [neutral] [excited]."
)


def llm_configured() -> bool:
    """True when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


class OpenAIFreeTalk:
    """Free-conversation replies from a chat model; mode changes never come from it."""

    def __init__(self, model: str, timeout_s: float = 10.0) -> None:
        import openai

        self.model = model
        self._client = openai.OpenAI(
            api_key=os.environ.get("OPENAI_API_KEY", "not-needed"), timeout=timeout_s, max_retries=0
        )
        self._rules = RuleFreeTalk()

    def reply(self, text: str, history: Sequence[tuple[str, str]]) -> str:
        """The model's reply; on failure a rule reply, with the error logged."""
        messages: list[dict[str, str]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        for speaker, said in history[-8:]:
            messages.append({"role": "assistant" if speaker == "agent" else "user", "content": said})
        if not history or history[-1] != ("user", text):
            messages.append({"role": "user", "content": text})
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=80,
            )
            answer = (response.choices[0].message.content or "").strip()
        except Exception as err:
            _LOGGER.error("model %s failed (%s); using a rule reply for this turn", self.model, err)
            return self._rules.reply(text, history)
        # Modes are code: the model may not put the device to sleep.
        answer = re.sub(r"\[sleep\]", "", answer, flags=re.IGNORECASE).strip()
        return answer or self._rules.reply(text, history)
