"""Reads for force-include rules (seed 004): the API's and the console's rule lists, one rule,
and the skill names a rule can pick from."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F

from registry.errors import NotFound
from registry.models import SOURCE_PRIORITY, ForceIncludeRule, Skill, SkillSource


@dataclass(frozen=True)
class RuleSkill:
    """A skill a rule names, with whether the registry can list it (it may not exist yet)."""

    name: str
    state: str  # "enabled" | "disabled" | "missing"


@dataclass(frozen=True)
class RuleRow:
    rule: ForceIncludeRule
    skills: tuple[RuleSkill, ...]


@dataclass(frozen=True)
class SkillChoice:
    name: str
    description: str
    enabled: bool


def _skill_states(names: set[str]) -> dict[str, str]:
    """name -> "enabled" when any source of it is enabled, else "disabled"; absent names missing."""
    states: dict[str, str] = {}
    for name, enabled in Skill.objects.filter(name__in=names).values_list("name", "enabled"):
        if enabled or name not in states:
            states[name] = "enabled" if enabled else "disabled"
    return states


def rule_list() -> list[ForceIncludeRule]:
    """Every rule, highest priority first (the order resolve fires them in)."""
    return list(ForceIncludeRule.objects.order_by("-priority", "name"))


def rule_rows() -> list[RuleRow]:
    """Every rule with the state of each skill it names, in two queries."""
    rules = rule_list()
    states = _skill_states({name for rule in rules for name in rule.skills})
    return [
        RuleRow(rule=rule, skills=tuple(RuleSkill(name, states.get(name, "missing")) for name in rule.skills))
        for rule in rules
    ]


def rule_get(*, rule_id: int) -> ForceIncludeRule:
    rule = ForceIncludeRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise NotFound(f"No rule with id {rule_id}.")
    return rule


def rule_skill_choices() -> list[SkillChoice]:
    """One entry per skill name for the rule editor's picker: a rule names skills, not sources,
    so a name is offered once, enabled when any of its sources is, described by the newest
    version of its highest-priority source (seed 002 precedence)."""
    rows = Skill.objects.filter(versions__number=F("latest_version")).values_list(
        "name", "source", "enabled", "versions__description"
    )
    best: dict[str, tuple[int, str, bool]] = {}
    for name, source, enabled, description in rows:
        rank = SOURCE_PRIORITY[SkillSource(source)]
        found = best.get(name)
        if found is None or rank > found[0]:
            best[name] = (rank, description or "", enabled or (found is not None and found[2]))
        elif enabled:
            best[name] = (found[0], found[1], True)
    return [SkillChoice(name=name, description=best[name][1], enabled=best[name][2]) for name in sorted(best)]
