"""The system prompt as named sections in the canonical order of seeds 000 and 004.

Each section keeps its name so the trace can show which parts were sent and trimming can drop
low-priority parts by name without ever touching the `<mandatory-skill>` block.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from agents.runtime.types import SkillDocument, Trigger

DEFAULT_BASE_PROMPT = (
    "You are the Skill Registry assistant. You help people by following skills (tested "
    "instructions) and calling the tools you are given. Work step by step, call a tool when it "
    "helps, and finish with a clear, direct answer for the user."
)

# Canonical order (SPEC §6.1). "loaded_skills" and "skill_suggestion" carry the bodies and hints
# from seed 001 triggers; they sit where seed 004 keeps skill context, right after the listing.
SECTION_ORDER = (
    "base",
    "memory",
    "mandatory_skill",
    "tools",
    "skills",
    "loaded_skills",
    "skill_suggestion",
    "environment",
    "response_format",
    "instructions",
    "skill_reminder",
)
# Dropped in this order when the context is over budget (SPEC §6.4: skills list, environment).
LOW_PRIORITY_SECTIONS = ("skills", "environment")
# seed 000, fix 2: text containing this is never dropped or altered. That covers the block
# itself, the trailing reminder (which names it) and a compacted history that kept a block.
MANDATORY_SKILL_SENTINEL = "<mandatory-skill"


@dataclass(frozen=True)
class PromptSection:
    name: str
    text: str


@dataclass(frozen=True)
class SystemPrompt:
    sections: tuple[PromptSection, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections)

    @property
    def names(self) -> list[str]:
        return [section.name for section in self.sections]

    def without(self, name: str) -> SystemPrompt:
        return SystemPrompt(tuple(s for s in self.sections if s.name != name))

    def with_text(self, name: str, text: str) -> SystemPrompt:
        return SystemPrompt(tuple(replace(s, text=text) if s.name == name else s for s in self.sections))


@dataclass(frozen=True)
class LoadedSkill:
    """A skill body injected for this turn by a trigger (turn_start, explicit_command, task_match)."""

    document: SkillDocument
    trigger: Trigger


def build_system_prompt(
    *,
    base_prompt: str | None,
    memory: str | None,
    forced: SkillDocument | None,
    tool_lines: list[tuple[str, str]],
    skills_block: str,
    loaded: list[LoadedSkill],
    suggestion: str | None,
    workspace: Path,
    today: date,
    language: str | None,
    instructions: tuple[str, ...],
    reminder_tools: list[str],
) -> SystemPrompt:
    texts: dict[str, str | None] = {
        "base": base_prompt or DEFAULT_BASE_PROMPT,
        "memory": f"## Conversation memory\n{memory}" if memory else None,
        "mandatory_skill": mandatory_skill_block(forced) if forced else None,
        "tools": tools_section(tool_lines),
        # seed 000: the skills listing is omitted when a skill is forced
        "skills": skills_block if skills_block and not forced else None,
        "loaded_skills": loaded_skills_section(loaded),
        "skill_suggestion": suggestion,
        "environment": f"## Environment\nDate: {today.isoformat()}\nWorkspace: {workspace}",
        "response_format": response_format_section(language),
        "instructions": instructions_section(instructions),
        "skill_reminder": skill_reminder_block(forced.name, reminder_tools) if forced else None,
    }
    return SystemPrompt(tuple(PromptSection(name, text) for name in SECTION_ORDER if (text := texts[name])))


def mandatory_skill_block(skill: SkillDocument) -> str:
    files = f"\n\nBundled files: {', '.join(skill.files)}" if skill.files else ""
    return (
        f'<mandatory-skill name="{skill.name}" version="{skill.version}">\n'
        f'The user invoked "/{skill.name}". You MUST follow these instructions for this request.\n\n'
        f"{skill.body.strip()}{files}\n"
        "</mandatory-skill>"
    )


def skill_reminder_block(skill_name: str, tools: list[str]) -> str:
    # seed 000, fix 3: a trailing reminder for recency; the tools sentence is left out when the
    # skill fell back to the full tool set (as fix 4 does for its reminder).
    tools_sentence = f" Use ONLY the declared tools: {', '.join(tools)}." if tools else ""
    return (
        '<skill-reminder priority="highest">\n'
        f'Remember: You are executing forced skill "/{skill_name}". '
        f"Follow the <mandatory-skill> instructions above precisely.{tools_sentence}\n"
        "</skill-reminder>"
    )


def skill_reminder_message(skill_name: str, tools: list[str]) -> dict[str, str]:
    # seed 000, fix 4: appended as a system message before every LLM call from step 2 on.
    tools_sentence = f"Use ONLY these tools: {', '.join(sorted(tools))}." if tools else ""
    return {
        "role": "system",
        "content": (
            f'[SKILL REMINDER] You are executing forced skill "/{skill_name}". '
            f"Follow the skill instructions from the system prompt precisely. {tools_sentence}"
        ).rstrip(),
    }


def tools_section(tool_lines: list[tuple[str, str]]) -> str | None:
    if not tool_lines:
        return None
    lines = [f"- {name}: {summary}" for name, summary in tool_lines]
    return "## Tools\nYou can call these tools:\n" + "\n".join(lines)


def loaded_skills_section(loaded: list[LoadedSkill]) -> str | None:
    if not loaded:
        return None
    blocks = [
        f'<skill name="{item.document.name}" trigger="{item.trigger}">\n{item.document.body.strip()}\n</skill>'
        for item in loaded
    ]
    return "## Skills loaded for this request\nFollow these skills where they apply.\n\n" + "\n\n".join(blocks)


def suggestion_section(skill_name: str, description: str) -> str:
    return (
        "## Suggested skill\n"
        f"The skill `{skill_name}` looks relevant to this request ({description}). "
        "If it applies, read it with `read_skill` before you act."
    )


def response_format_section(language: str | None) -> str:
    # seed 004 §1, "Response language and format"
    language_line = f"Respond only in {language}." if language else "Respond in the language of the user's message."
    return (
        "## Response language and format\n"
        f"{language_line} Output only your direct reply to the user, in Markdown where it helps."
    )


def instructions_section(instructions: tuple[str, ...]) -> str | None:
    # seed 004 §3: fired rules' instructions go last, where models pay most attention.
    if not instructions:
        return None
    return "## Instruction for this request\n" + "\n\n".join(text.strip() for text in instructions)
