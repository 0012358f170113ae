"""Which skills, at which versions, a request for a skillset gets: the set's version at a label
(the canary one for a subject its rollout picks) and exactly its members at that version's
numbers — never the members' own labels, so a reader sees the set before or after a move, never
a mix.

A set's label rows are read once per registry generation and name (a label move, a rollout or a
publish of a set bumps the generation in its transaction), and a set version's members once per
process (versions never change): a warm request costs no query. The side of a set's rollout is
one draw per subject for the whole set, the skill rollouts' bucket (rollouts.py) keyed
`skillset:NAME`, so a subject reads every new member or none. `served_skillset`
(registry/selectors/skillsets.py) answers the same from the database and is this one's oracle in
tests/registry/test_skillset_reads.py.

A request's skills are a snapshot of the members alone (`skillset_snapshot`): the label
snapshot's rules, the members' entries read as pins (snapshot.py), and an index over them only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import F

from registry.errors import NotFound
from registry.matching.index import TermIndex
from registry.models import Skillset, SkillsetLabel, SkillsetMember, SkillsetVersion
from registry.readmodel.effective import LATEST, requested_label
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.results import cache_namespace
from registry.readmodel.rollouts import subject_bucket
from registry.readmodel.snapshot import Snapshot, pinned_entries, registry_snapshot


@dataclass(frozen=True)
class SkillsetServed:
    """A set as one reader gets it: the version at the label and its members' numbers."""

    name: str
    label: str
    version: int
    members: dict[str, int] = field(default_factory=dict)  # member skill name -> version number
    canary: bool = False  # the version is the canary of the set label's rollout


@dataclass(frozen=True)
class _LabelState:
    """A set's label as of one generation: its stable version, and its rollout if one runs."""

    name: str
    stable: tuple[int, int]  # (version id, number)
    canary: tuple[int, int] | None = None
    weight: int = 0


_STATES: GenerationMemo[_LabelState | NotFound] = GenerationMemo(maxsize=256)
# Keyed by 0 (no generation: a version's members never change) and the cache namespace (a
# restored database reuses version ids).
_MEMBERS: GenerationMemo[dict[str, int]] = GenerationMemo(maxsize=1024)


def skillset_served(
    *, name: str, label: str | None = None, subject: str | None = None, generation: int | None = None
) -> SkillsetServed:
    """The set `name` at `label` (no label: production; `latest`: its newest version) for
    `subject`; NotFound naming the set or the label when there is none."""
    generation = current_generation() if generation is None else generation
    label_name = requested_label(label)
    key = (generation, name.lower(), label_name)
    state = _STATES.get(key)
    if state is None:
        state = _label_state(name, label_name)
        _STATES.put(key, state)
    if isinstance(state, NotFound):
        raise state
    chosen, canary = state.stable, False
    if subject and state.canary is not None and state.weight > 0:
        set_key = f"skillset:{state.name}"  # served_skillset's bucket: one draw for every member
        if subject_bucket(skill=set_key, label=label_name, canary=state.canary[1], subject=subject) < state.weight:
            chosen, canary = state.canary, True
    return SkillsetServed(
        name=state.name, label=label_name, version=chosen[1], members=_members_of(chosen[0]), canary=canary
    )


def _label_state(name: str, label: str) -> _LabelState | NotFound:
    """One query for a set's label (two for a miss, to say whether the set or the label is unknown)."""
    if label == LATEST:
        newest = SkillsetVersion.objects.filter(skillset__name__iexact=name, number=F("skillset__latest_version"))
        row = newest.values("id", "number", "skillset__name").first()
        if row is None:
            return _not_found(name, label)
        return _LabelState(name=row["skillset__name"], stable=(row["id"], row["number"]))
    fields = (
        "skillset__name",
        "version_id",
        "version__number",
        "canary_version_id",
        "canary_version__number",
        "weight",
    )
    row = SkillsetLabel.objects.filter(skillset__name__iexact=name, name=label).values(*fields).first()
    if row is None:
        return _not_found(name, label)
    canary = None
    if row["canary_version_id"] is not None:
        canary = (row["canary_version_id"], row["canary_version__number"])
    return _LabelState(
        name=row["skillset__name"],
        stable=(row["version_id"], row["version__number"]),
        canary=canary,
        weight=row["weight"],
    )


def _not_found(name: str, label: str) -> NotFound:
    found = Skillset.objects.filter(name__iexact=name).values_list("name", flat=True).first()
    if found is None:
        return NotFound(f"No skillset named '{name}'.", fields={"skillset": name})
    if label == LATEST:
        return NotFound(f"Skillset '{found}' has no versions.", fields={"skillset": name})
    return NotFound(f"Skillset '{found}' has no label '{label}'.", fields={"label": label})


def _members_of(version_id: int) -> dict[str, int]:
    key = (0, cache_namespace(), version_id)
    members = _MEMBERS.get(key)
    if members is None:
        rows = SkillsetMember.objects.filter(version_id=version_id).order_by("skill_name")
        members = dict(rows.values_list("skill_name", "skill_version_number"))
        _MEMBERS.put(key, members)
    return dict(members)


_SNAPSHOTS: GenerationMemo[Snapshot] = GenerationMemo(maxsize=32)


def skillset_snapshot(*, served: SkillsetServed, label: str | None, generation: int | None = None) -> Snapshot:
    """The skills a request for `served` gets: its members at their numbers and no other skill
    (a member no longer there, deleted or disabled, is left out), with the rules of the label's
    snapshot, so rule instructions apply as to any request. Kept per generation and set version."""
    generation = current_generation() if generation is None else generation
    pins = tuple(sorted(served.members.items()))
    key = (generation, served.name, served.version, label, pins)
    found = _SNAPSHOTS.get(key)
    if found is not None:
        return found
    base = registry_snapshot(label=label, generation=generation)
    skills = tuple(sorted(pinned_entries(generation, label, pins), key=lambda skill: skill.name))
    snapshot = Snapshot(
        generation=generation,
        label=label,
        skills=skills,
        by_name={skill.name: skill for skill in skills},
        index=TermIndex(skill for skill in skills if skill.model_invocable),
        rules=base.rules,
        rule_set=base.rule_set,
        rule_warnings=base.rule_warnings,
        skillset=served.name,
    )
    _SNAPSHOTS.put(key, snapshot)
    return snapshot


def members_missing(served: SkillsetServed, snapshot: Snapshot) -> list[str]:
    """The members a request for the set cannot be given (deleted, disabled, or their version
    gone since the set was published), by name."""
    return [name for name in served.members if name not in snapshot.by_name]
