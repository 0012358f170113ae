"""Seed 001's `findSkills(trigger, context)`: the skills declaring a trigger (turn start, a tool
call's error, an explicit command, a task match), most relevant to the context first. No ORM here:
the resolve snapshot's skills or a test's dataclasses work alike."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from registry.matching.index import TermIndex, match
from registry.matching.ranking import Match, terms, words

# The context fields seed 001 passes, in camelCase as written there and in snake_case.
CONTEXT_FIELDS = ("toolName", "tool_name", "error", "taskDescription", "task_description", "command")


def _compact(text: str) -> str:
    return "".join(words(text))


def find_skills(trigger: str, context: Mapping[str, Any] | None, skills: Iterable[Any]) -> list[Match]:
    """Seed 001 `findSkills`: skills declaring `trigger`, most relevant to `context` first.

    Relevance is the number of the skill's tags and tool names found in the context values
    (`toolName`, `error`, `taskDescription`, `command`): a tag matches when its words all occur
    there or it appears inside a value once separators are ignored (`filesystem` in
    `FileSystemTool_list_files`). A `command` naming the skill outranks everything. Skills that
    declare the trigger but match nothing are still returned, last. Ties: description relevance
    to the context, then name.
    """
    context = context or {}
    values = [str(context[key]) for key in CONTEXT_FIELDS if context.get(key)]
    compact_values = [_compact(v) for v in values]
    context_terms = {t for v in values for t in terms(v)}
    context_words = {w for v in values for w in words(v)}
    tool_name = str(context.get("toolName") or context.get("tool_name") or "")
    command = _compact(str(context.get("command") or ""))
    trigger = (trigger or "").strip().lower()

    candidates = [s for s in skills if trigger in {str(t).lower() for t in (getattr(s, "triggers", None) or ())}]
    # Keyed by identity: nothing here asks the candidates' names to be unique.
    by_text = match(" ".join(values), TermIndex(candidates, key=id)) if values else []
    text_rank = {id(m.skill): m.score for m in by_text}
    results: list[Match] = []
    for skill in candidates:
        score = 0.0
        reasons: list[str] = [f"declares the '{trigger}' trigger"]
        if command and command == _compact(skill.name):
            score += 10
            reasons.append("the command names this skill")
        matched_tags = []
        for tag in skill.tags or ():
            tag_terms = terms(str(tag))
            tag_compact = _compact(str(tag))
            if (tag_terms and set(tag_terms) <= context_terms) or (
                len(tag_compact) >= 3 and any(tag_compact in v for v in compact_values)
            ):
                matched_tags.append(str(tag))
        matched_tools = []
        for tool in getattr(skill, "tools", None) or ():
            tool_text = str(tool)
            if (
                (tool_name and tool_text.lower() == tool_name.lower())
                or _compact(tool_text) in context_words
                or (len(_compact(tool_text)) >= 4 and any(_compact(tool_text) in v for v in compact_values))
            ):
                matched_tools.append(tool_text)
        if matched_tags:
            reasons.append("tags match the context: " + ", ".join(matched_tags))
        if matched_tools:
            reasons.append("tools match the context: " + ", ".join(matched_tools))
        score += len(matched_tags) + len(matched_tools)
        results.append(Match(skill, score, reasons))
    results.sort(key=lambda m: (-m.score, -text_rank.get(id(m.skill), 0.0), m.skill.name))
    return results
