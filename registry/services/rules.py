"""Force-include rules (seed 004, SPEC §3): create, update, delete — validated, audited, atomic.

A rule is untrusted input in every field: the pattern is compiled with RE2 (registry/matching/patterns.py)
before it is stored, skill names must look like skill names, and `auto_invoke` must be a tool
name plus a JSON object of arguments. A rule may name a skill that does not exist (yet): that is
allowed, with a warning, so rules can be written before the skill is published.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from registry.errors import ApplicationError, Conflict
from registry.matching.patterns import pattern_check
from registry.models import ForceIncludeRule, Skill, WebhookEvent
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.generation import registry_changed
from registry.services.webhooks import webhook_event_emit

# Names people give skills: the spec's [a-z0-9-] plus the seeds' underscores and dots, any case.
SKILL_REFERENCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$")
RULE_NAME_MAX = 100
INSTRUCTION_MAX = 4000
MAX_TARGETS = 100
AUTO_INVOKE_MAX_BYTES = 16 * 1024
PRIORITY_RANGE = (-1_000_000, 1_000_000)


class InvalidRule(ApplicationError):
    code = "invalid_rule"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class RuleWriteResult:
    rule: ForceIncludeRule
    warnings: tuple[str, ...] = ()


# --- validation --------------------------------------------------------------------------


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidRule("A rule needs a name.", fields={"name": "required"})
    name = name.strip()
    if len(name) > RULE_NAME_MAX:
        raise InvalidRule(f"Rule names are at most {RULE_NAME_MAX} characters.", fields={"name": "too long"})
    if any(ord(char) < 32 for char in name):
        raise InvalidRule("Rule names cannot contain control characters.", fields={"name": "control character"})
    return name


def _clean_names(values: Any, *, field: str, pattern: re.Pattern, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidRule(f"`{field}` must be a list of {what} names.", fields={field: "list of strings"})
    if len(values) > MAX_TARGETS:
        raise InvalidRule(f"A rule may name at most {MAX_TARGETS} {what}s.", fields={field: "too many"})
    bad = [v for v in values if not isinstance(v, str) or not pattern.fullmatch(v)]
    if bad:
        shown = ", ".join(repr(v)[:70] for v in bad[:5])
        raise InvalidRule(
            f"Not valid {what} names: {shown}. Names are letters, digits, '-', '_' and '.'.",
            fields={field: f"invalid: {shown}"},
        )
    return list(dict.fromkeys(values))


def _clean_instruction(instruction: Any) -> str:
    if instruction is None:
        return ""
    if not isinstance(instruction, str):
        raise InvalidRule("`instruction` must be text.", fields={"instruction": "text required"})
    if len(instruction) > INSTRUCTION_MAX:
        raise InvalidRule(f"`instruction` is at most {INSTRUCTION_MAX} characters.", fields={"instruction": "too long"})
    return instruction.strip()


def _clean_priority(priority: Any) -> int:
    low, high = PRIORITY_RANGE
    if isinstance(priority, bool) or not isinstance(priority, int) or not low <= priority <= high:
        raise InvalidRule(
            f"`priority` must be an integer between {PRIORITY_RANGE[0]} and {PRIORITY_RANGE[1]}.",
            fields={"priority": "integer required"},
        )
    return priority


def _clean_enabled(enabled: Any) -> bool:
    if not isinstance(enabled, bool):
        raise InvalidRule("`enabled` must be true or false.", fields={"enabled": "boolean required"})
    return enabled


def auto_invoke_check(auto_invoke: Any) -> dict[str, Any] | None:
    """`{"tool": str, "arguments": {...}}` or None; `{{query}}` stays in place until use time."""
    if auto_invoke is None or auto_invoke == {}:
        return None
    if not isinstance(auto_invoke, dict):
        raise InvalidRule(
            '`auto_invoke` must be an object {"tool": ..., "arguments": {...}}.',
            fields={"auto_invoke": "object required"},
        )
    unknown = sorted(set(auto_invoke) - {"tool", "arguments"})
    if unknown:
        raise InvalidRule(
            f"`auto_invoke` has unknown keys: {', '.join(map(str, unknown))}; use tool and arguments.",
            fields={"auto_invoke": f"unknown keys: {', '.join(map(str, unknown))}"},
        )
    tool = auto_invoke.get("tool")
    if not isinstance(tool, str) or not TOOL_NAME.fullmatch(tool):
        raise InvalidRule(
            "`auto_invoke.tool` must be a tool name (letters, digits, '_', '-', '.', ':').",
            fields={"auto_invoke.tool": "tool name required"},
        )
    arguments = auto_invoke.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidRule(
            "`auto_invoke.arguments` must be a JSON object.", fields={"auto_invoke.arguments": "object required"}
        )
    try:
        encoded = json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidRule(
            "`auto_invoke.arguments` must be plain JSON.", fields={"auto_invoke.arguments": "not JSON"}
        ) from None
    if len(encoded.encode()) > AUTO_INVOKE_MAX_BYTES:
        raise InvalidRule(
            f"`auto_invoke.arguments` is over {AUTO_INVOKE_MAX_BYTES // 1024} KB.",
            fields={"auto_invoke.arguments": "too large"},
        )
    return {"tool": tool, "arguments": arguments}


def _skill_warnings(skills: list[str]) -> tuple[str, ...]:
    if not skills:
        return ()
    known: dict[str, bool] = {}
    for name, enabled in Skill.objects.filter(name__in=skills).values_list("name", "enabled"):
        known[name] = known.get(name, False) or enabled
    warnings = []
    for name in skills:
        if name not in known:
            warnings.append(f"No skill named '{name}' exists yet; the rule will list it once it is published.")
        elif not known[name]:
            warnings.append(f"The skill '{name}' is disabled; the rule cannot list it until it is enabled.")
    return tuple(warnings)


def rule_fields(rule: ForceIncludeRule) -> dict[str, Any]:
    """The rule's editable fields as plain data (audit before/after, API bodies)."""
    return {
        "name": rule.name,
        "pattern": rule.pattern,
        "skills": rule.skills,
        "tools": rule.tools,
        "instruction": rule.instruction,
        "auto_invoke": rule.auto_invoke,
        "priority": rule.priority,
        "enabled": rule.enabled,
    }


def _duplicate(name: str) -> Conflict:
    return Conflict(f"A rule named '{name}' already exists.", fields={"name": "already exists"})


def _rule_changed(*, rule: str, action: str, actor: Actor) -> None:
    """The webhook event of a rule write: which rule, and whether it was created, updated or deleted."""
    webhook_event_emit(event=WebhookEvent.RULE_CHANGED, actor=actor, extra={"rule": rule, "action": action})


# --- services ----------------------------------------------------------------------------


def rule_create(
    *,
    name: str,
    pattern: str,
    skills: list[str],
    tools: list[str] | None = None,
    instruction: str = "",
    auto_invoke: dict[str, Any] | None = None,
    priority: int = 0,
    enabled: bool = True,
    actor: Actor = SYSTEM,
) -> RuleWriteResult:
    name = _clean_name(name)
    pattern_check(pattern)
    skills = _clean_names(skills, field="skills", pattern=SKILL_REFERENCE, what="skill")
    tools = _clean_names(tools, field="tools", pattern=TOOL_NAME, what="tool")
    fields = {
        "name": name,
        "pattern": pattern,
        "skills": skills,
        "tools": tools,
        "instruction": _clean_instruction(instruction),
        "auto_invoke": auto_invoke_check(auto_invoke),
        "priority": _clean_priority(priority),
        "enabled": _clean_enabled(enabled),
    }
    if not skills and not fields["instruction"] and not tools and not fields["auto_invoke"]:
        raise InvalidRule(
            "A rule must do something: name skills, tools, an instruction or an auto_invoke.",
            fields={"skills": "give at least one skill (or an instruction)"},
        )
    if ForceIncludeRule.objects.filter(name=name).exists():
        raise _duplicate(name)
    try:
        with transaction.atomic():
            rule = ForceIncludeRule.objects.create(created_by=actor.user_or_none, **fields)
            audit_record(
                actor=actor, action="rule.create", object_type="rule", object_repr=name, after=rule_fields(rule)
            )
            registry_changed(rules=True)
            _rule_changed(rule=name, action="created", actor=actor)
    except IntegrityError:
        raise _duplicate(name) from None
    return RuleWriteResult(rule=rule, warnings=_skill_warnings(skills))


def rule_update(
    *,
    rule: ForceIncludeRule,
    actor: Actor = SYSTEM,
    name: str = UNSET,
    pattern: str = UNSET,
    skills: list[str] = UNSET,
    tools: list[str] = UNSET,
    instruction: str = UNSET,
    auto_invoke: dict[str, Any] | None = UNSET,
    priority: int = UNSET,
    enabled: bool = UNSET,
) -> RuleWriteResult:
    """Change only the fields given; nothing is written when nothing changes."""
    changes: dict[str, Any] = {}
    if name is not UNSET:
        changes["name"] = _clean_name(name)
    if pattern is not UNSET:
        pattern_check(pattern)
        changes["pattern"] = pattern
    if skills is not UNSET:
        changes["skills"] = _clean_names(skills, field="skills", pattern=SKILL_REFERENCE, what="skill")
    if tools is not UNSET:
        changes["tools"] = _clean_names(tools, field="tools", pattern=TOOL_NAME, what="tool")
    if instruction is not UNSET:
        changes["instruction"] = _clean_instruction(instruction)
    if auto_invoke is not UNSET:
        changes["auto_invoke"] = auto_invoke_check(auto_invoke)
    if priority is not UNSET:
        changes["priority"] = _clean_priority(priority)
    if enabled is not UNSET:
        changes["enabled"] = _clean_enabled(enabled)
    try:
        with transaction.atomic():
            rule = ForceIncludeRule.objects.select_for_update().get(pk=rule.pk)
            before = rule_fields(rule)
            changed = {k: v for k, v in changes.items() if getattr(rule, k) != v}
            if not changed:
                return RuleWriteResult(rule=rule, warnings=_skill_warnings(rule.skills))
            if "name" in changed and ForceIncludeRule.objects.filter(name=changed["name"]).exclude(pk=rule.pk).exists():
                raise _duplicate(changed["name"])
            for key, value in changed.items():
                setattr(rule, key, value)
            if not rule.skills and not rule.instruction and not rule.tools and not rule.auto_invoke:
                raise InvalidRule(
                    "A rule must do something: name skills, tools, an instruction or an auto_invoke.",
                    fields={"skills": "give at least one skill (or an instruction)"},
                )
            rule.save(update_fields=[*changed, "updated_at"])
            audit_record(
                actor=actor,
                action="rule.update",
                object_type="rule",
                object_repr=rule.name,
                before={k: before[k] for k in changed},
                after={k: rule_fields(rule)[k] for k in changed},
            )
            registry_changed(rules=True)
            _rule_changed(rule=rule.name, action="updated", actor=actor)
    except IntegrityError:
        raise _duplicate(changes.get("name", rule.name)) from None
    return RuleWriteResult(rule=rule, warnings=_skill_warnings(rule.skills))


def rule_delete(*, rule: ForceIncludeRule, actor: Actor = SYSTEM) -> None:
    with transaction.atomic():
        before = rule_fields(rule)
        deleted, _ = ForceIncludeRule.objects.filter(pk=rule.pk).delete()
        if deleted:
            audit_record(actor=actor, action="rule.delete", object_type="rule", object_repr=rule.name, before=before)
            registry_changed(rules=True)
            _rule_changed(rule=rule.name, action="deleted", actor=actor)
