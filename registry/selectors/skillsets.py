"""Reads of skillsets: what a consumer is served for a set at a label, the list, one set's
versions and labels, and the diff between two versions."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.db.models import Count, F

from registry.errors import NotFound
from registry.models import Skillset, SkillsetLabel, SkillsetLabelHistory, SkillsetVersion
from registry.readmodel.effective import requested_label


@dataclass(frozen=True)
class ServedSkillset:
    """A set as one consumer reads it: its version at the label (the canary one when the
    subject is on the canary side of the set's rollout) and its members at their numbers."""

    name: str
    label: str
    version: int
    members: dict[str, int] = field(default_factory=dict)  # member skill name -> version number
    canary: bool = False


def skillset_bucket(*, skillset: str, label: str, canary: int, subject: str) -> int:
    """The subject's bucket in [0, 100) for a set's rollout: the skill rollouts' hash
    (registry/readmodel/rollouts.py::subject_bucket) keyed on the set, so one draw decides every
    member and a subject reads all the new members or none. The `skillset:` prefix keeps a set
    and a skill of the same spelling (not allowed, but renamed data may hold one) apart."""
    digest = hashlib.sha256(f"skillset:{skillset}\x00{label}\x00{canary}\x00{subject}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def _members(version: SkillsetVersion) -> dict[str, int]:
    return {m.skill_name: m.skill_version_number for m in version.members.all()}


def served_skillset(name: str, label: str | None = None, subject: str | None = None) -> ServedSkillset:
    """The set `name` at `label` (no label: production; `latest`: its newest version). Raises
    NotFound for an unknown set or a label the set does not carry. The label row and the
    members it points at are read in one query each from one committed state (a move is one
    transaction), so a reader sees the set before or after a move, never a mix."""
    label_name = requested_label(label)
    skillset = skillset_get(name=name)
    if label_name == "latest":
        version = skillset.versions.prefetch_related("members").filter(number=skillset.latest_version).first()
        if version is None:
            raise NotFound(f"Skillset {skillset.name!r} has no versions.", fields={"skillset": name})
        return ServedSkillset(name=skillset.name, label=label_name, version=version.number, members=_members(version))
    row = (
        SkillsetLabel.objects.filter(skillset=skillset, name=label_name)
        .select_related("version", "canary_version")
        .prefetch_related("version__members", "canary_version__members")
        .first()
    )
    if row is None:
        raise NotFound(f"Skillset {skillset.name!r} has no label {label_name!r}.", fields={"label": label_name})
    chosen, canary = row.version, False
    if subject and row.rollout_active and row.canary_version is not None:
        bucket = skillset_bucket(
            skillset=skillset.name, label=label_name, canary=row.canary_version.number, subject=subject
        )
        if bucket < row.weight:
            chosen, canary = row.canary_version, True
    return ServedSkillset(
        name=skillset.name, label=label_name, version=chosen.number, members=_members(chosen), canary=canary
    )


def skillset_get(*, name: str) -> Skillset:
    """The set called `name` (any case), or NotFound."""
    skillset = Skillset.objects.filter(name__iexact=name).first()
    if skillset is None:
        raise NotFound(f"No skillset named {name!r}.", fields={"skillset": name})
    return skillset


def skillset_name_taken(*, name: str) -> Skillset | None:
    """The set whose name is `name` regardless of case (a new skill may not take it)."""
    return Skillset.objects.filter(name__iexact=name).first()


def skillset_version_get(*, skillset: Skillset, number: int) -> SkillsetVersion:
    """One version with its members (each with its skill version, when it still exists)."""
    found = (
        skillset.versions.filter(number=number)
        .prefetch_related("members__skill_version__skill")
        .select_related("created_by")
        .first()
    )
    if found is None:
        raise NotFound(
            f"Skillset {skillset.name!r} has no version {number} (latest is {skillset.latest_version}).",
            fields={"version": f"between 1 and {skillset.latest_version}"},
        )
    return found


# --- the API's and the console's reads -----------------------------------------------------


@dataclass(frozen=True)
class SkillsetRow:
    skillset: Skillset
    members: int  # in the newest version
    labels: dict[str, int]  # label -> version it holds
    rollouts: dict[str, tuple[int, int]]  # label -> (canary version, weight), while one runs


def skillset_list() -> list[SkillsetRow]:
    """Every set with its newest version's size and its labels. Three queries."""
    sets = list(Skillset.objects.select_related("created_by").order_by("name"))
    sizes = dict(
        SkillsetVersion.objects.filter(skillset__in=sets, number=F("skillset__latest_version"))
        .annotate(n=Count("members"))
        .values_list("skillset_id", "n")
    )
    labels: dict[int, dict[str, int]] = {}
    rollouts: dict[int, dict[str, tuple[int, int]]] = {}
    rows = SkillsetLabel.objects.filter(skillset__in=sets).select_related("version", "canary_version")
    for label in rows.order_by("skillset_id", "name"):
        labels.setdefault(label.skillset_id, {})[label.name] = label.version.number
        if label.rollout_active and label.canary_version is not None:
            rollouts.setdefault(label.skillset_id, {})[label.name] = (label.canary_version.number, label.weight)
    return [SkillsetRow(s, sizes.get(s.pk, 0), labels.get(s.pk, {}), rollouts.get(s.pk, {})) for s in sets]


def skillset_labels_held(skillset: Skillset) -> dict[str, SkillsetLabel]:
    """The set's labels by name, with the versions they hold."""
    labels = skillset.labels.select_related("version", "canary_version")
    return {label.name: label for label in labels}


@dataclass(frozen=True)
class MemberRow:
    """One member of a set version as it stands now: `missing` when its skill version was
    deleted since publish, `disabled` when its skill is off."""

    name: str
    version: int
    missing: bool
    disabled: bool
    source: str | None


def skillset_member_rows(version: SkillsetVersion) -> list[MemberRow]:
    rows = []
    for member in version.members.all():
        skill = member.skill_version.skill if member.skill_version is not None else None
        rows.append(
            MemberRow(
                name=member.skill_name,
                version=member.skill_version_number,
                missing=skill is None,
                disabled=skill is not None and not skill.enabled,
                source=skill.source if skill is not None else None,
            )
        )
    return sorted(rows, key=lambda row: row.name)


@dataclass(frozen=True)
class SkillsetVersionRow:
    version: SkillsetVersion
    members: int
    labels: list[str]


@dataclass(frozen=True)
class SkillsetDetail:
    skillset: Skillset
    versions: list[SkillsetVersionRow]  # newest first
    labels: list[SkillsetLabel]
    history: list[SkillsetLabelHistory]
    members: list[MemberRow]  # the newest version's


def skillset_detail(skillset: Skillset, *, history_limit: int = 50) -> SkillsetDetail:
    labels = list(skillset.labels.select_related("version", "canary_version", "updated_by").order_by("name"))
    held: dict[int, list[str]] = {}
    for label in labels:
        held.setdefault(label.version_id, []).append(label.name)
    versions = skillset.versions.select_related("created_by").annotate(n=Count("members")).order_by("-number")
    rows = [SkillsetVersionRow(v, v.n, held.get(v.pk, [])) for v in versions]  # type: ignore[attr-defined]
    history = list(skillset.label_history.select_related("changed_by")[:history_limit])
    newest = skillset_version_get(skillset=skillset, number=skillset.latest_version) if rows else None
    members = skillset_member_rows(newest) if newest is not None else []
    return SkillsetDetail(skillset=skillset, versions=rows, labels=labels, history=history, members=members)


@dataclass(frozen=True)
class MemberChange:
    """One member between two set versions: `added`, `removed`, `changed` (another version of
    the skill) or `same`."""

    name: str
    change: str
    old: int | None
    new: int | None


def skillset_versions_diff(*, old: SkillsetVersion, new: SkillsetVersion) -> list[MemberChange]:
    before, after = _members(old), _members(new)
    changes = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        change = "added" if was is None else "removed" if now is None else "same" if was == now else "changed"
        changes.append(MemberChange(name=name, change=change, old=was, new=now))
    return changes
