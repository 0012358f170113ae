"""The straightforward resolve: every skill scored with `MatchIndex`, every rule pattern searched in
turn, the whole ranking sorted; each skill's requirements followed afresh for every request. The
product answers through the inverted index and RE2 sets (registry/matching/index.py) and the
snapshot's requirement graph (registry/readmodel/requirements.py); this is the oracle the property
tests compare it with, and what bench/resolve.py checks its answers against."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from registry.matching.index import Ranking, RuleSet, TermIndex, match
from registry.readmodel.requirements import NO_ENTITLEMENTS, Entitlements
from registry.selectors.resolve import (
    RequiredOffered,
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


def _required(snapshot: Snapshot, skill: EffectiveSkill) -> tuple[list[tuple[EffectiveSkill, str, Any]], list[str]]:
    """Every skill `skill` requires, breadth first, each name once, with the skill that named it
    and the entry; and the entries on the way that name no served skill."""
    found: list[tuple[EffectiveSkill, str, Any]] = []
    unserved: list[str] = []
    names = {skill.name}
    queue = [skill]
    while queue:
        node = queue.pop(0)
        for requirement in node.requires:
            if requirement.kind != "skill":
                continue
            target = snapshot.requirements.target(requirement)
            if target is None:
                unserved.append(f"{node.name} requires {requirement}")
            elif target.name not in names:
                names.add(target.name)
                found.append((target, node.name, requirement))
                queue.append(target)
    return found, unserved


def reference_left_out(snapshot: Snapshot, entitlements: Entitlements) -> set[str]:
    """The skills needing, themselves or through a required skill, what `entitlements` lack."""
    return {
        skill.name
        for skill in snapshot.skills
        if any(
            entitlements.lacks(requirement)
            for node in [skill, *(target for target, _, _ in _required(snapshot, skill)[0])]
            for requirement in node.requires
        )
    }


def _with_required(
    snapshot: Snapshot, ranked: list[EffectiveSkill], pulled: Collection[str]
) -> tuple[list[EffectiveSkill], RequiredOffered]:
    """`ranked` with what its pulled skills require placed after each, a name placed once."""
    ordered: dict[str, EffectiveSkill] = {}
    required_by: dict[str, list[str]] = {}
    warnings: list[tuple[str, str]] = []
    for skill in ranked:
        if skill.name in ordered:
            continue
        ordered[skill.name] = skill
        if skill.name not in pulled:
            continue
        closure, unserved = _required(snapshot, skill)
        warnings += [
            (skill.name, f"Skill '{skill.name}': {entry}, which is not served.") for entry in dict.fromkeys(unserved)
        ]
        for target, by, requirement in closure:
            held = ordered.setdefault(target.name, target)
            if held.version != target.version:
                warnings.append(
                    (by, f"Skill '{by}' requires {requirement}; '{target.name}' is offered at version {held.version}.")
                )
            else:
                required_by.setdefault(target.name, []).append(by)
    by = {name: tuple(dict.fromkeys(names)) for name, names in required_by.items()}
    return list(ordered.values()), RequiredOffered(Ranking([], {}, 0), by, tuple(warnings))


def reference_resolve(
    snapshot: Snapshot,
    *,
    query: str,
    forced_skill: str | None = None,
    context: Mapping[str, Any] | None = None,
    max_skills: int,
    max_chars: int,
    entitlements: Entitlements = NO_ENTITLEMENTS,
) -> ResolveResult:
    """What resolve answers over `snapshot`, the straightforward way."""
    # The product's reasons (warnings quote them), for exactly the skills found here.
    left_out = {
        name: snapshot.requirements.left_out(entitlements)[name] for name in reference_left_out(snapshot, entitlements)
    }
    matched = rules_fire_all(query, snapshot.rules)
    forced = forced_skills(snapshot, forced_skill=forced_skill, fired=matched.fired, left_out=left_out)
    invocable = [s for s in snapshot.skills if s.model_invocable]
    text = _match_text(query, context)
    # Scored among every skill at the label: one the consumer cannot use is not listed, but the
    # statistics a score is made of are the registry's, whoever asks.
    scored = match(text, MatchIndex(invocable)) if query or context else []
    matches = {m.skill.name: m for m in scored if m.skill.name not in left_out}
    invocable = [s for s in invocable if s.name not in left_out]
    ranked = [snapshot.by_name[name] for name in forced.by]
    ranked += [m.skill for m in matches.values() if m.skill.name not in forced.by]
    ranked += [s for s in invocable if s.name not in forced.by and s.name not in matches]
    ordered, required = _with_required(snapshot, ranked, {*forced.by, *matches})
    return resolve_result(
        snapshot=snapshot,
        label=snapshot.label,
        matched=matched,
        forced=forced,
        ranking=Ranking(ordered=ordered, matches=matches, total=len(ordered)),
        max_skills=max_skills,
        max_chars=max_chars,
        required=required,
        left_out=tuple(left_out[name] for name in sorted(left_out)),
    )
