"""A resolve snapshot (the effective skills, their match index and the compiled rules of one
registry generation) and how it moves to a newer generation by re-reading only what changed, so
a publish does not cost every process a rebuild.

Every registry write records what it changed (`RegistryChange`: a skill name, the rules, or
anything) in the same transaction that bumps the generation (selectors/generation.py). The bumps
queue on the generation row's lock, so generations commit in order: once a process reads
generation G, every change up to G has committed, and the records of the generations between its
snapshot's and G say everything that separates the two. A gap among them (records pruned, the
generation row reset to another number) or a change of anything means a full rebuild.

Moving forward re-reads the named skills (all their sources, since precedence picks among them)
at the snapshot's label, and all enabled rules when any changed (a few hundred rows; the RE2 sets
of unchanged rule buckets are reused). The skills left out of the change keep their entries, and
the inverted index is updated for the changed ones only; tests/registry/test_snapshot_delta.py
checks that the result equals a snapshot built afresh.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from registry.matching.index import RuleSet, TermIndex
from registry.models import RegistryChange

if TYPE_CHECKING:
    from registry.selectors.skills import EffectiveSkill


@dataclass(frozen=True)
class RuleEntry:
    id: int
    name: str
    pattern: str
    skills: tuple[str, ...]
    tools: tuple[str, ...]
    instruction: str
    auto_invoke: dict[str, Any] | None
    priority: int


@dataclass
class Snapshot:
    generation: int
    label: str | None
    skills: tuple[EffectiveSkill, ...]
    by_name: dict[str, EffectiveSkill]
    index: TermIndex
    rules: tuple[tuple[RuleEntry, Any], ...]  # (rule, compiled pattern)
    rule_set: RuleSet  # which rules can match a query, in one pass over it
    rule_warnings: tuple[str, ...] = ()

    @functools.cached_property
    def by_trigger(self) -> dict[str, tuple[EffectiveSkill, ...]]:
        """The skills declaring each trigger (lower-cased): every turn asks for its turn_start
        skills, and looking through every skill's triggers for them would cost more than the
        rest of the turn's reads."""
        found: dict[str, list[EffectiveSkill]] = {}
        for skill in self.skills:
            for trigger in {str(t).lower() for t in skill.triggers}:
                found.setdefault(trigger, []).append(skill)
        return {trigger: tuple(skills) for trigger, skills in found.items()}


# Further behind than this, re-reading what changed costs about what a rebuild does.
MAX_GENERATIONS_BEHIND = 256


@dataclass(frozen=True)
class RegistryDelta:
    skills: frozenset[str]  # names whose effective skill may differ
    rules: bool  # whether any rule may differ


def registry_delta(*, since: int, until: int) -> RegistryDelta | None:
    """What changed after generation `since` up to `until`, or None when the log cannot say."""
    if not 0 < until - since <= MAX_GENERATIONS_BEHIND:
        return None
    seen: set[int] = set()
    skills: set[str] = set()
    rules = False
    changes = RegistryChange.objects.filter(generation__gt=since, generation__lte=until)
    for generation, scope, skill_name in changes.values_list("generation", "scope", "skill_name"):
        seen.add(generation)
        if scope == RegistryChange.Scope.SKILL:
            skills.add(skill_name)
        elif scope == RegistryChange.Scope.RULES:
            rules = True
        else:
            return None
    if len(seen) != until - since:
        return None
    return RegistryDelta(skills=frozenset(skills), rules=rules)


def snapshot_advance(
    snapshot: Snapshot,
    *,
    generation: int,
    delta: RegistryDelta,
    entries: Sequence[EffectiveSkill],
    rules: tuple[tuple[tuple[RuleEntry, Any], ...], tuple[str, ...]] | None,
) -> Snapshot:
    """`snapshot` at `generation`: the skills named in `delta` replaced by `entries` (their
    current state; a name without an entry is no longer an enabled skill) and, when given,
    `rules` (the compiled rules and their warnings) in place of the old ones. `snapshot` itself
    is left as it was, for any resolve still using it."""
    kept = [skill for skill in snapshot.skills if skill.name not in delta.skills]
    skills = tuple(sorted([*kept, *entries], key=lambda skill: skill.name))
    changes: dict[str, Any] = {
        "generation": generation,
        "skills": skills,
        "by_name": {skill.name: skill for skill in skills},
        "index": snapshot.index.with_changes(
            removed=delta.skills, added=[entry for entry in entries if entry.model_invocable]
        ),
    }
    if rules is not None:
        compiled, warnings = rules
        changes.update(
            rules=compiled,
            rule_set=RuleSet(((rule.id, rule.pattern) for rule, _ in compiled), previous=snapshot.rule_set),
            rule_warnings=warnings,
        )
    return replace(snapshot, **changes)
