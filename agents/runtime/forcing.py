"""Forced-skill compliance (seed 000): detection, tool filtering and refusals."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.runtime.builtin_tools import ESSENTIAL_TOOLS
from agents.runtime.skill_tools import SKILL_LOADERS
from agents.runtime.tools import ToolRegistry
from agents.runtime.types import SkillDocument, SkillStore

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


def detect_forced_skill(
    *, message: str, forced_skill: str | None, store: SkillStore, tools: ToolRegistry
) -> tuple[ForcedSkill | None, str]:
    """The forced skill of this turn (request field first, then a slash command) and the message
    to send; raises UnknownForcedSkill with a readable message."""
    command, rest = split_slash_command(message)
    name = forced_skill or command
    if name is None:
        return None, message
    document = store.load(name)
    if document is None:
        raise UnknownForcedSkill(f"unknown skill '/{name}': no enabled skill has that name")
    if command == document.name:
        message = rest or f"Run the /{document.name} skill."
    offered, fallback = allowed_tools(document, tools)
    return ForcedSkill(document, offered, fallback), message


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
