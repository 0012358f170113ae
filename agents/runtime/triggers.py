"""Turn-level skill triggers of seed 001: turn_start, explicit_command and task_match.

(tool_call_error runs inside error recovery, see recovery.py.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.runtime.prompt import LoadedSkill, suggestion_section
from agents.runtime.types import SkillStore, Trigger

# "use the code-review skill", "Use `pdf_tools` skill to ..."
EXPLICIT_COMMAND = re.compile(r"\buse\s+(?:the\s+)?[`'\"]?([a-z0-9][a-z0-9_-]{0,63})[`'\"]?\s+skill\b", re.IGNORECASE)
MAX_TURN_START_SKILLS = 3
MIN_SUGGESTION_SCORE = 0.1  # seed 002's example threshold for match()


@dataclass
class TriggeredSkills:
    loaded: list[LoadedSkill] = field(default_factory=list)
    suggestion: str | None = None

    def names(self) -> set[str]:
        return {item.document.name for item in self.loaded}


def triggered_skills(
    *, message: str, turn_index: int, store: SkillStore, forced: bool, inject_threshold: float | None
) -> TriggeredSkills:
    """Skills to inject for this turn. A forced skill keeps only turn_start: loading or suggesting
    other skills would pull the model away from it (seed 000)."""
    triggered = TriggeredSkills()
    _add_turn_start(triggered, store, message, turn_index)
    if not forced:
        _add_explicit_commands(triggered, store, message)
        _add_task_match(triggered, store, message, inject_threshold)
    return triggered


def _load_into(triggered: TriggeredSkills, store: SkillStore, name: str, trigger: Trigger) -> None:
    document = store.load(name)
    if document is not None and document.name not in triggered.names():
        triggered.loaded.append(LoadedSkill(document, trigger))


def _add_turn_start(triggered: TriggeredSkills, store: SkillStore, message: str, turn_index: int) -> None:
    context = {"taskDescription": message, "turnIndex": turn_index}
    for summary in store.find_skills("turn_start", context)[:MAX_TURN_START_SKILLS]:
        _load_into(triggered, store, summary.name, "turn_start")


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-")


def _add_explicit_commands(triggered: TriggeredSkills, store: SkillStore, message: str) -> None:
    for requested in EXPLICIT_COMMAND.findall(message):
        candidates = store.find_skills("explicit_command", {"command": requested})
        # The trigger index decides which skills accept explicit commands; the name must match.
        for summary in candidates:
            if _canonical(summary.name) == _canonical(requested):
                _load_into(triggered, store, summary.name, "explicit_command")
                break


def _add_task_match(
    triggered: TriggeredSkills, store: SkillStore, message: str, inject_threshold: float | None
) -> None:
    if any(item.trigger == "explicit_command" for item in triggered.loaded):
        return  # the user already named the skill to use
    loaded = triggered.names()
    # The best one not loaded yet is among the first len(loaded) + 1.
    ranked = [
        (summary, score)
        for summary, score in store.match(message, trigger="task_match", limit=len(loaded) + 1)
        if summary.name not in loaded
    ]
    if not ranked:
        return
    best, score = ranked[0]
    if inject_threshold is not None and score >= inject_threshold:
        _load_into(triggered, store, best.name, "task_match")
    elif score >= MIN_SUGGESTION_SCORE:
        triggered.suggestion = suggestion_section(best.name, best.description)
