"""A force-include rule's `auto_invoke` (seed 004): when the model answers without a tool call and
its reply looks unhelpful, the turn calls the tool the rule names on the model's behalf."""

from __future__ import annotations

import re

from agents.runtime.journal import TRACE_CONTENT_CHARS, TurnJournal
from agents.runtime.llm import ToolCall
from agents.runtime.types import Resolution, SkillStore

# seed 004 §2: run auto_invoke only when the reply looks unhelpful — short, or saying that no
# tool is available — so a helpful explanation ("how do I ...?") is left alone.
UNHELPFUL_MAX_CHARS = 80
UNHELPFUL_PHRASES = re.compile(
    r"\bno\s+(?:[\w-]+\s+){0,3}tools?\b|\bnot\s+available\b|\bunavailable\b"
    r"|\b(?:don't|do not|cannot|can't)\s+(?:have\s+)?access\b",
    re.IGNORECASE,
)


def looks_unhelpful(answer: str) -> bool:
    return len(answer.strip()) < UNHELPFUL_MAX_CHARS or bool(UNHELPFUL_PHRASES.search(answer))


class AutoInvoker:
    def __init__(
        self, *, journal: TurnJournal, store: SkillStore, resolution: Resolution, query: str, offered: list[str]
    ) -> None:
        self.journal = journal
        self.store = store
        self.resolution = resolution
        self.query = query
        self.offered = offered
        self.invoked: set[str] = set()

    def calls(self, step: int, answer: str) -> list[ToolCall]:
        """The call the first fired rule not yet auto-invoked in this turn asks for, if any."""
        if not looks_unhelpful(answer):
            return []
        for rule in self.resolution.fired_rules:
            call = rule.auto_invoke_call(self.query)
            if call is None or rule.name in self.invoked:
                continue
            self.invoked.add(rule.name)  # once per rule and turn: no loop of fallbacks
            tool_name, arguments = call["tool"], call["arguments"]
            if tool_name not in self.offered:
                self.journal.emit(
                    "warning",
                    {"message": f"rule '{rule.name}' auto_invoke tool '{tool_name}' is not offered in this turn"},
                )
                continue
            self.journal.emit(
                "auto_invoke",
                {
                    "step": step,
                    "rule": rule.name,
                    "tool": tool_name,
                    "arguments": arguments,
                    "answer": answer[:TRACE_CONTENT_CHARS],
                },
            )
            document = (
                self.store.load(arguments["skill_name"]) if isinstance(arguments.get("skill_name"), str) else None
            )
            if document:
                self.journal.activate(document, "auto_invoke")
            return [ToolCall(id=f"auto_invoke_{step}", name=tool_name, arguments=arguments)]
        return []
