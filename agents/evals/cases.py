"""An eval case built from a turn someone ran (the playground's "Save as eval case").

Plain data in and out: the turn's message, model and script, and its trace events. A trigger case
asks again whether the message loads the skill (expected: what this turn did); a task case asks
for what this turn did with it (the skill loaded, the tools it called) and keeps the turn's script
when it ran on the scripted model, so the case runs offline as it ran here. The author checks and
adjusts it in the suite table: the case opens there as a form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agents.model_strings import SCRIPTED
from agents.runtime.forcing import forced_skill_and_query

# Loading the skill is what `skill_loaded` checks; calling read_skill says nothing more.
_NOT_EXPECTED_TOOLS = {"read_skill"}
_WORD = re.compile(r"[a-z0-9]+")
ID_WORDS = 4


def case_from_turn(*, turn: Any, skill: str, kind: str, events: Iterable[Any], taken: set[str]) -> dict[str, Any]:
    """A `trigger` or `task` case for `skill` from `turn` and its trace `events`, with an id not in `taken`."""
    query = forced_skill_and_query(turn.message, turn.forced_skill or None)[1].strip() or turn.message.strip()
    loaded = unforced = False
    tools: list[str] = []
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "skill_activated" and data.get("skill") == skill:
            loaded = True
            # A trigger case asks whether the agent picks the skill itself: forcing is not picking.
            unforced = unforced or data.get("trigger") != "forced"
        elif event.type == "tool_call" and data.get("ok", True):
            tool = str(data.get("tool", ""))
            if tool and tool not in _NOT_EXPECTED_TOOLS and tool not in tools:
                tools.append(tool)
    case_id = _free_id(("t-" if kind == "trigger" else "k-") + _slug(query), taken)
    case: dict[str, Any]
    if kind == "trigger":
        case = {"id": case_id, "kind": "trigger", "query": query, "should_trigger": unforced}
    else:
        expect: list[dict[str, Any]] = [{"skill_loaded": skill}] if loaded else []
        expect += [{"tool_called": {"name": tool}} for tool in tools]
        case = {"id": case_id, "kind": "task", "prompt": query, "expect": expect}
    # The turn's script comes along, so the case runs the same way with `scripted`.
    if turn.model == SCRIPTED and turn.script:
        case["script"] = turn.script
    return case


def _slug(text: str) -> str:
    return "-".join(_WORD.findall(text.lower())[:ID_WORDS]) or "case"


def _free_id(wanted: str, taken: set[str]) -> str:
    if wanted not in taken:
        return wanted
    number = 2
    while f"{wanted}-{number}" in taken:
        number += 1
    return f"{wanted}-{number}"
