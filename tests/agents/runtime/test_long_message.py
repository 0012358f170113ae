"""A turn message at AGENT_MAX_MESSAGE_CHARS (a pasted log) fits the model by trimming, as the
runtime trims any oversize context (the cap is a setting, default 200,000)."""

from __future__ import annotations

from django.conf import settings

from agents.runtime.context import DEFAULT_MAX_INPUT_TOKENS, fit_context
from agents.runtime.prompt import PromptSection, SystemPrompt


def tokens(messages) -> int:
    """Roughly four characters a token, as the runtime assumes when sizing a cut."""
    return sum(len(m.get("content") or "") for m in messages) // 4


def test_a_message_at_the_cap_is_cut_to_fit_and_says_so():
    message = ("2026-11-23 09:00:00 ERROR worker: connection reset by peer\n" * 4_000)[
        : settings.AGENT_MAX_MESSAGE_CHARS
    ]
    assert len(message) == settings.AGENT_MAX_MESSAGE_CHARS >= 200_000
    system = SystemPrompt((PromptSection("base", "You are helpful."), PromptSection("skills", "S" * 2_000)))

    fitted = fit_context(
        prompt=system,
        conversation=[{"role": "user", "content": message}],
        tail=[],
        current_user_index=0,
        limit=DEFAULT_MAX_INPUT_TOKENS,
        count=tokens,
    )

    assert tokens(fitted.messages) <= DEFAULT_MAX_INPUT_TOKENS
    kept = fitted.conversation[0]["content"]
    assert kept.startswith(message[:10_000]) and "truncated" in kept
    assert fitted.removed[-1]["kind"] == "truncated" and fitted.removed[-1]["from_chars"] == len(message)
