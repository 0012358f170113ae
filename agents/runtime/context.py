"""Context protection (seed 000, fixes 2 and 6; SPEC §6.4).

When the messages of a call exceed the input limit: drop the oldest non-system messages first
(whole tool exchanges, never the current user message or the latest exchange), then the
low-priority system sections, then truncate the largest remaining text. The system message is
never dropped, and no text holding a `<mandatory-skill>` block is ever dropped or altered.
Trimming works on a copy for each call, so the turn's own record of messages stays complete.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.runtime.prompt import LOW_PRIORITY_SECTIONS, MANDATORY_SKILL_SENTINEL, SystemPrompt

DEFAULT_MAX_INPUT_TOKENS = 32_000  # when neither the request nor litellm's model info says
CHARS_PER_TOKEN = 4  # a rough ratio, only used to size a truncation before recounting
TRUNCATION_FLOOR_CHARS = 200
MAX_TRUNCATION_ROUNDS = 8
HISTORY_KEEP_MESSAGES = 20
SUMMARY_LINE_CHARS = 200
SUMMARY_MAX_LINES = 40
MANDATORY_SKILL_BLOCK = re.compile(r"<mandatory-skill.*?</mandatory-skill>", re.DOTALL)

Message = dict[str, Any]
TokenCounter = Callable[[list[Message]], int]


@dataclass
class FittedContext:
    prompt: SystemPrompt
    conversation: list[Message]
    tail: list[Message]
    removed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return [{"role": "system", "content": self.prompt.text}, *self.conversation, *self.tail]


def fit_context(
    *,
    prompt: SystemPrompt,
    conversation: list[Message],
    tail: list[Message],
    current_user_index: int,
    limit: int,
    count: TokenCounter,
    bound: TokenCounter | None = None,
) -> FittedContext:
    """Fit system prompt + conversation + tail (the [SKILL REMINDER]) into `limit` tokens.

    `bound`, when given, is a cheap count never below `count`'s: within the limit, nothing is
    counted exactly."""
    fitted = FittedContext(prompt, list(conversation), tail)
    if bound is not None and bound(fitted.messages) <= limit:
        return fitted
    if count(fitted.messages) <= limit:
        return fitted
    _drop_old_messages(fitted, current_user_index, limit, count)
    _drop_low_priority_sections(fitted, limit, count)
    _truncate_largest(fitted, limit, count)
    return fitted


def _exchanges(conversation: list[Message]) -> list[list[int]]:
    """Indexes grouped so an assistant tool call and its tool results go together."""
    groups: list[list[int]] = []
    for index, message in enumerate(conversation):
        if message.get("role") == "tool" and groups:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _drop_old_messages(fitted: FittedContext, current_user_index: int, limit: int, count: TokenCounter) -> None:
    groups = _exchanges(fitted.conversation)
    # Keep the current user message and the latest exchange: the model needs both to go on.
    droppable = [g for g in groups[:-1] if current_user_index not in g]
    dropped: set[int] = set()
    original = fitted.conversation
    for group in droppable:
        if count(fitted.messages) <= limit:
            break
        dropped.update(group)
        for index in group:
            fitted.removed.append(
                {"kind": "message", "role": original[index].get("role"), "chars": _chars(original[index])}
            )
        fitted.conversation = [m for i, m in enumerate(original) if i not in dropped]


def _drop_low_priority_sections(fitted: FittedContext, limit: int, count: TokenCounter) -> None:
    for name in LOW_PRIORITY_SECTIONS:
        if count(fitted.messages) <= limit:
            return
        if name in fitted.prompt.names:
            fitted.prompt = fitted.prompt.without(name)
            fitted.removed.append({"kind": "section", "name": name})


def _truncate_largest(fitted: FittedContext, limit: int, count: TokenCounter) -> None:
    exhausted: set[tuple[str, Any]] = set()
    for _ in range(MAX_TRUNCATION_ROUNDS):
        over = count(fitted.messages) - limit
        if over <= 0:
            return
        target = _largest_candidate(fitted, exhausted)
        if target is None:
            return
        kind, key, text = target
        keep = max(TRUNCATION_FLOOR_CHARS, len(text) - over * CHARS_PER_TOKEN - 100)
        if keep >= len(text):
            exhausted.add((kind, key))
            continue
        shorter = text[:keep] + f"\n[... truncated {len(text) - keep} characters to fit the context window ...]"
        if kind == "section":
            fitted.prompt = fitted.prompt.with_text(key, shorter)
        else:
            fitted.conversation[key] = {**fitted.conversation[key], "content": shorter}
        fitted.removed.append(
            {"kind": "truncated", "target": f"{kind} {key}", "from_chars": len(text), "to_chars": keep}
        )


def _largest_candidate(fitted: FittedContext, exhausted: set[tuple[str, Any]]) -> tuple[str, Any, str] | None:
    candidates: list[tuple[str, Any, str]] = [("section", s.name, s.text) for s in fitted.prompt.sections]
    candidates += [
        ("message", index, message["content"])
        for index, message in enumerate(fitted.conversation)
        if isinstance(message.get("content"), str)
    ]
    # seed 000, fix 2: text holding a <mandatory-skill> block (or the reminder naming it) is never altered.
    allowed = [c for c in candidates if (c[0], c[1]) not in exhausted and MANDATORY_SKILL_SENTINEL not in c[2]]
    return max(allowed, key=lambda c: len(c[2]), default=None)


def _text(message: Message) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _chars(message: Message) -> int:
    return len(_text(message))


def compact_history(
    history: list[Message], keep_recent: int = HISTORY_KEEP_MESSAGES
) -> tuple[str | None, list[Message]]:
    """Summarise all but the last `keep_recent` messages into a memory note.

    seed 000, fix 6: `<mandatory-skill>` blocks in the compacted messages are kept verbatim.
    """
    if len(history) <= keep_recent:
        return None, history
    split = len(history) - keep_recent
    while split < len(history) and history[split].get("role") == "tool":
        split += 1  # a tool result must not lose the call it answers
    older, recent = history[:split], history[split:]
    preserved: list[str] = []
    lines = []
    for message in older:
        content = _text(message)
        preserved += MANDATORY_SKILL_BLOCK.findall(content)
        text = " ".join(MANDATORY_SKILL_BLOCK.sub("[mandatory skill, kept below]", content).split())
        lines.append(f"- {message.get('role')}: {text[:SUMMARY_LINE_CHARS]}")
    if len(lines) > SUMMARY_MAX_LINES:
        lines = [f"- ({len(lines) - SUMMARY_MAX_LINES} earlier messages omitted)", *lines[-SUMMARY_MAX_LINES:]]
    summary = "Earlier in this conversation (compacted):\n" + "\n".join(lines)
    return "\n\n".join([summary, *preserved]), recent
