"""A resolve snapshot (the effective skills, their match index and the compiled rules of one
registry generation) and how it moves to a newer generation by re-reading only what changed, so
a publish does not cost every process a rebuild.

Every registry write records what it changed (`RegistryChange`: a skill name, the rules, or
anything) in the same transaction that bumps the generation (readmodel/generation.py). The bumps
queue on the generation row's lock, so generations commit in order: once a process reads
generation G, every change up to G has committed, and the records of the generations between its
snapshot's and G say everything that separates the two. A gap among them (records pruned, the
generation row reset to another number) or a change of anything means a full rebuild.

Moving forward re-reads the named skills (all their sources, since precedence picks among them)
at the snapshot's label, and all enabled rules when any changed (a few hundred rows; the RE2 sets
of unchanged rule buckets are reused). The skills left out of the change keep their entries, and
the inverted index is updated for the changed ones only; tests/registry/test_snapshot_delta.py
checks that the result equals a snapshot built afresh.

Newest snapshots are held per label (and apart, per label and pins), so the next read at a label
starts from that label's own.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from registry.errors import ApplicationError
from registry.matching.index import RuleSet, TermIndex
from registry.matching.patterns import compile_pattern
from registry.models import ForceIncludeRule, RegistryChange
from registry.readmodel.effective import LATEST, effective_skills
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.requirements import SkillKey, SnapshotRequirements
from registry.readmodel.skill import EffectiveSkill


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
    skillset: str | None = None  # the set whose members alone this snapshot holds (readmodel/skillsets.py)

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

    @functools.cached_property
    def requirements(self) -> SnapshotRequirements:
        """What its skills require of each other and of the consumer: worked out once per
        snapshot, from the requirements each version's entry was parsed with."""
        return SnapshotRequirements(skills=self.skills, by_name=self.by_name, label=self.label, read=_required_read)


def _required_read(keys: Collection[SkillKey]) -> dict[SkillKey, EffectiveSkill]:
    """The skills `skill:NAME@LABEL` and `skill:NAME@VERSION` entries name, where the snapshot
    holds another version: one read per label, and one per pinned version of a name."""
    found: dict[SkillKey, EffectiveSkill] = {}
    by_label: dict[str, list[str]] = {}
    pinned: list[tuple[str, int]] = []
    for name, label, version in keys:
        if version is not None:
            pinned.append((name, version))
        elif label is not None:
            by_label.setdefault(label, []).append(name)
    for label, names in by_label.items():
        for entry in effective_skills(label=label, names=names):
            found[(entry.name, label, None)] = entry
    while pinned:
        batch: dict[str, int] = {}
        for name, version in pinned:
            batch.setdefault(name, version)
        pinned = [(name, version) for name, version in pinned if batch[name] != version]
        for entry in effective_skills(label=LATEST, names=batch, pins=batch):
            found[(entry.name, None, entry.version)] = entry
    return found


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


# --- the snapshot: skills, index and rules of one generation -------------------------------


# One snapshot per label (the newest read), for the few labels agents resolve at; each moves
# forward on its own from what it was when last read.
_SNAPSHOTS: GenerationMemo[Snapshot] = GenerationMemo(maxsize=8)
# Pinned snapshots are kept apart: a burst of turns trying versions must not evict the labels'
# snapshots, which cost a full read to build again (a pinned one costs one small read).
_PINNED_SNAPSHOTS: GenerationMemo[Snapshot] = GenerationMemo(maxsize=8)

# {skill name: version number}: skills a turn reads at that exact version (`effective_skills`).
Pins = Mapping[str, int]


def _pins_key(pins: Pins) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(pins.items()))


def _snapshot_rules() -> tuple[tuple[tuple[RuleEntry, Any], ...], tuple[str, ...]]:
    rules = []
    warnings = []
    # Plain values, not model instances: building those is a third of the time at 1,000 rules,
    # which a rule edit makes every process pay to move its snapshot forward.
    enabled = ForceIncludeRule.objects.filter(enabled=True).order_by("-priority", "name")
    for rule in enabled.values("id", "name", "pattern", "skills", "tools", "instruction", "auto_invoke", "priority"):
        try:
            compiled = compile_pattern(rule["pattern"])
        except ApplicationError as exc:
            # Stored before a limit was lowered, or written around the service: skip, say so.
            warnings.append(f"Rule '{rule['name']}' is skipped: {exc.detail}")
            continue
        rules.append(
            (
                RuleEntry(
                    id=rule["id"],
                    name=rule["name"],
                    pattern=rule["pattern"],
                    skills=tuple(rule["skills"] or ()),
                    tools=tuple(rule["tools"] or ()),
                    instruction=rule["instruction"] or "",
                    auto_invoke=rule["auto_invoke"] or None,
                    priority=rule["priority"],
                ),
                compiled,
            )
        )
    return tuple(rules), tuple(warnings)


def _build_snapshot(generation: int, label: str | None) -> Snapshot:
    skills = effective_skills(label=label)
    rules, warnings = _snapshot_rules()
    return Snapshot(
        generation=generation,
        label=label,
        skills=tuple(skills),
        by_name={s.name: s for s in skills},
        index=TermIndex(s for s in skills if s.model_invocable),
        rules=rules,
        rule_set=RuleSet((rule.id, rule.pattern) for rule, _ in rules),
        rule_warnings=warnings,
    )


def _advanced_snapshot(generation: int, label: str | None) -> Snapshot | None:
    """The newest snapshot this process holds for `label`, moved to `generation` by re-reading
    only what changed since ; None when it holds none or the change
    log cannot say."""
    previous = _SNAPSHOTS.newest_before(generation, label)
    if previous is None:
        return None
    delta = registry_delta(since=previous.generation, until=generation)
    if delta is None:
        return None
    return snapshot_advance(
        previous,
        generation=generation,
        delta=delta,
        entries=effective_skills(label=label, names=delta.skills) if delta.skills else [],
        rules=_snapshot_rules() if delta.rules else None,
    )


def registry_snapshot(*, label: str | None = None, generation: int | None = None, pins: Pins | None = None) -> Snapshot:
    """The skills, match index and compiled rules as of `generation` (built once per process),
    with the skills named in `pins` read at those versions."""
    generation = current_generation() if generation is None else generation
    if pins:
        return _pinned_snapshot(generation, label, _pins_key(pins))
    found = _SNAPSHOTS.get((generation, label))
    if found is not None:
        return found
    # Two threads may build it at once: same result.
    snapshot = _advanced_snapshot(generation, label) or _build_snapshot(generation, label)
    _SNAPSHOTS.put((generation, label), snapshot)
    return snapshot


def _pinned_snapshot(generation: int, label: str | None, pins: tuple[tuple[str, int], ...]) -> Snapshot:
    """The label's snapshot with its pinned skills re-read through `effective_skills`, as a
    change to those skills moves a snapshot forward: the same entries, index and rules but for
    them, so a pinned turn and an unpinned one differ in nothing else."""
    found = _PINNED_SNAPSHOTS.get((generation, label, pins))
    if found is not None:
        return found
    base = registry_snapshot(label=label, generation=generation)
    names = frozenset(name for name, _ in pins)
    entries = pinned_entries(generation, label, pins)
    snapshot = snapshot_advance(
        base, generation=generation, delta=RegistryDelta(skills=names, rules=False), entries=entries, rules=None
    )
    _PINNED_SNAPSHOTS.put((generation, label, pins), snapshot)
    return snapshot


# Each pinned skill's entry, kept per generation: a rollout's subjects fall into many combinations
# of sides (two per rollout), and each combination's snapshot is built from the same few entries.
_PINNED_ENTRIES: GenerationMemo[tuple[EffectiveSkill, ...]] = GenerationMemo(maxsize=1024)


def pinned_entries(generation: int, label: str | None, pins: tuple[tuple[str, int], ...]) -> list[EffectiveSkill]:
    """The entries of the pinned skills (a pin the skill cannot take has none), read in one query
    for those not read before at this generation."""
    found: list[EffectiveSkill] = []
    missing: dict[str, int] = {}
    for name, number in pins:
        held = _PINNED_ENTRIES.get((generation, label, name, number))
        if held is None:
            missing[name] = number
        else:
            found.extend(held)
    if missing:
        read = {entry.name: entry for entry in effective_skills(label=label, names=missing, pins=missing)}
        for name, number in missing.items():
            entry = read.get(name)
            _PINNED_ENTRIES.put((generation, label, name, number), (entry,) if entry else ())
            if entry is not None:
                found.append(entry)
    return found
