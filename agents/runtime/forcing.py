"""Forced-skill compliance (seed 000): detection, tool filtering and refusals."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.runtime.builtin_tools import ESSENTIAL_TOOLS
from agents.runtime.skill_tools import SKILL_LOADERS
from agents.runtime.tools import ToolRegistry
from agents.runtime.types import SkillDocument, SkillStore, TurnRequest

# "/code-review check app.py": a skill name (SPEC §2 characters, underscores tolerated) right
# at the start, followed by whitespace or the end. "/usr/bin is slow" is not a command.
SLASH_COMMAND = re.compile(r"\A\s*/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?=\s|\Z)")


class UnknownForcedSkill(Exception):
    pass


@dataclass(frozen=True)
class ForcedSkill:
    document: SkillDocument
    tools: tuple[str, ...]  # the tools offered while it is forced
    fallback: bool  # none of its declared tools exist, so all tools minus the loaders are offered

    @property
    def reminder_tools(self) -> list[str]:
        # seed 000, fix 4: the reminder names tools only when the skill's own set is in force.
        return [] if self.fallback else list(self.tools)


def split_slash_command(message: str) -> tuple[str | None, str]:
    """The skill named by a leading `/skill-name`, and the message without it."""
    found = SLASH_COMMAND.match(message)
    if not found:
        return None, message
    return found.group(1).lower(), message[found.end() :].strip()


def forced_skill_and_query(message: str, forced_skill: str | None) -> tuple[str | None, str]:
    """What a turn forces and what it asks, read once where the turn comes in (TurnRequest).

    The request's `forced_skill` wins, else a leading `/skill-name` names it. A command naming
    the forced skill is not part of the query; any other message is the query as written.
    """
    command, rest = split_slash_command(message)
    name = forced_skill or command
    return name, rest if command is not None and command == name else message


def detect_forced_skill(*, request: TurnRequest, store: SkillStore, tools: ToolRegistry) -> ForcedSkill | None:
    """The forced skill of this turn; raises UnknownForcedSkill with a readable message."""
    if request.forced_skill is None:
        return None
    name = request.forced_skill
    document = store.load(name)
    if document is None:
        raise UnknownForcedSkill(f"unknown skill '/{name}': {store.missing_reason(name)}")
    offered, fallback = allowed_tools(document, tools)
    return ForcedSkill(document, offered, fallback)


def allowed_tools(document: SkillDocument, tools: ToolRegistry) -> tuple[tuple[str, ...], bool]:
    """seed 000, fix 1: the skill's declared tools plus the essentials, minus the skill loaders;
    when none of the declared tools exist, every tool minus the loaders (and the caller warns)."""
    declared = set(document.tools) - SKILL_LOADERS
    if not declared & set(tools.names()):
        return tuple(name for name in tools.names() if name not in SKILL_LOADERS), True
    allowed = (declared | ESSENTIAL_TOOLS) - SKILL_LOADERS
    return tuple(name for name in tools.names() if name in allowed), False


def refusal_message(tool_name: str, forced: ForcedSkill) -> str:
    return (
        f"Tool call refused: '{tool_name}' is not available while executing forced skill "
        f'"/{forced.document.name}". Allowed tools: {", ".join(forced.tools)}. '
        "Continue with the skill's instructions using only these tools."
    )
