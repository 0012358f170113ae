"""A force-include rule that fired for a query (seed 004), as plain data.

No Django here: the API, the console and the agent runtime (which has no Django) all use this
one type, and the runtime makes a rule's auto_invoke call with the same substitution the rule
tester shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

QUERY_PLACEHOLDER = "{{query}}"


@dataclass(frozen=True, kw_only=True)
class FiredRule:
    id: int
    name: str
    why: str
    skills: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    instruction: str | None = None
    auto_invoke: dict[str, Any] | None = None  # {"tool": str, "arguments": dict}
    priority: int = 0

    def auto_invoke_call(self, query: str) -> dict[str, Any] | None:
        """The tool call `auto_invoke` makes for `query`: every `{{query}}` in its string
        arguments replaced."""
        if not self.auto_invoke:
            return None

        def substitute(value: Any) -> Any:
            if isinstance(value, str):
                return value.replace(QUERY_PLACEHOLDER, query)
            if isinstance(value, list):
                return [substitute(item) for item in value]
            if isinstance(value, dict):
                return {key: substitute(item) for key, item in value.items()}
            return value

        return {
            "tool": str(self.auto_invoke.get("tool", "")),
            "arguments": substitute(self.auto_invoke.get("arguments") or {}),
        }
