"""The straightforward resolve: every skill scored with `MatchIndex`, every rule pattern searched in
turn, the whole ranking sorted. The product answers through the inverted index and RE2 sets
(registry/matching/index.py); this is the oracle the property tests compare it with, and what
bench/resolve.py checks its answers against."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from registry.matching.index import Ranking, RuleSet, TermIndex, match
from registry.selectors.resolve import (
    ResolveResult,
    RuleEntry,
    RulesFired,
    Snapshot,
    _match_text,
    forced_skills,
    resolve_result,
    rules_fire,
)
from registry.selectors.skills import EffectiveSkill
from tests.registry.ranking_oracle import MatchIndex


def snapshot_of(entries: Iterable[EffectiveSkill], rules: tuple[tuple[RuleEntry, Any], ...] = ()) -> Snapshot:
    """A snapshot of these skills and rules, as the product builds one (generation 1, no label)."""
    skills = tuple(sorted(entries, key=lambda e: e.name))
    return Snapshot(
        generation=1,
        label=None,
        skills=skills,
        by_name={e.name: e for e in skills},
        index=TermIndex(e for e in skills if e.model_invocable),
        rules=rules,
        rule_set=RuleSet((rule.id, rule.pattern) for rule, _ in rules),
    )


def rules_fire_all(query: str, rules: tuple[tuple[RuleEntry, Any], ...]) -> RulesFired:
    """Every rule's own pattern searched in turn, none passed over."""
    return rules_fire(query, rules, candidates={rule.id for rule, _ in rules})


def reference_resolve(
    snapshot: Snapshot,
    *,
    query: str,
    forced_skill: str | None = None,
    context: Mapping[str, Any] | None = None,
    max_skills: int,
    max_chars: int,
) -> ResolveResult:
    """What resolve answers over `snapshot`, the straightforward way."""
    matched = rules_fire_all(query, snapshot.rules)
    forced = forced_skills(snapshot, forced_skill=forced_skill, fired=matched.fired)
    invocable = [s for s in snapshot.skills if s.model_invocable]
    text = _match_text(query, context)
    matches = {m.skill.name: m for m in match(text, MatchIndex(invocable))} if query or context else {}
    ordered = [snapshot.by_name[name] for name in forced.by]
    ordered += [m.skill for m in matches.values() if m.skill.name not in forced.by]
    ordered += [s for s in invocable if s.name not in forced.by and s.name not in matches]
    return resolve_result(
        snapshot=snapshot,
        label=snapshot.label,
        matched=matched,
        forced=forced,
        ranking=Ranking(ordered=ordered, matches=matches, total=len(ordered)),
        max_skills=max_skills,
        max_chars=max_chars,
    )
