"""Skillsets: publishing a set version, and moving, rolling out and rolling back a set label
together with each member's label of the same name.

A set label change is one transaction: the set's label and every member's label move in it, each
member through the skill label services (`label_move`, `label_rollout_set`), so every member's
label policy applies as it would to a move of that skill alone. One refusal raises out of the
transaction, naming the member, and nothing is moved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import (
    LabelChange,
    Skill,
    Skillset,
    SkillsetLabel,
    SkillsetLabelHistory,
    SkillsetMember,
    SkillsetVersion,
    SkillVersion,
    WebhookEvent,
)
from registry.readmodel.effective import skill_winner
from registry.readmodel.served import skills_named
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.generation import registry_changed
from registry.services.label_policies import LabelGate, label_gate, label_policy_enforce
from registry.services.labels import IMPLICIT_LABEL, label_move, label_name_check
from registry.services.rollouts import RolloutConflict, label_rollout_abort, label_rollout_set, weight_check
from registry.services.webhooks import webhook_event_emit

# The Agent Skills name rule: lowercase letters, digits and inner hyphens, at most 64.
SKILLSET_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
DESCRIPTION_MAX = 1000
NOTE_MAX = 500


class InvalidSkillset(ApplicationError):
    code = "invalid_skillset"


def _member_error(name: str, problem: str, detail: str) -> InvalidSkillset:
    return InvalidSkillset(f"Member '{name}': {detail}", fields={f"members.{name}": problem}, extra={"member": name})


def skillset_name_check(name: Any) -> str:
    if not isinstance(name, str) or not SKILLSET_NAME.fullmatch(name):
        raise InvalidSkillset(
            f"Skillset names are 1-64 lowercase letters, digits and inner hyphens; got {str(name)[:80]!r}.",
            fields={"name": "must match [a-z0-9-], at most 64, no leading or trailing hyphen"},
        )
    clash = Skill.objects.filter(name__iexact=name).first()
    if clash is not None:
        raise InvalidSkillset(
            f"'{name}' is the name of the skill '{clash.name}': skills and skillsets share one namespace, so a "
            "consumer asking for either gets what it means. Choose another name for the set.",
            fields={"name": f"taken by the skill '{clash.name}'"},
        )
    return name


def _member_version(name: Any, ref: Any) -> SkillVersion:
    """The version a publish takes for one member: a number as given, a label as it points now
    (`latest`: the newest version), of the skill that wins the name."""
    if not isinstance(name, str) or not name:
        raise InvalidSkillset("Member names are skill names (non-empty text).", fields={"members": "skill names"})
    candidates = skills_named(name=name)
    if not candidates:
        raise _member_error(name, "unknown skill", "no skill has this name.")
    skill = skill_winner(candidates)
    if skill is None:
        raise _member_error(name, "disabled", "the skill is disabled; enable it or leave it out of the set.")
    if isinstance(ref, int) and not isinstance(ref, bool):
        version = skill.versions.filter(number=ref).first()
        if version is None:
            raise _member_error(name, f"between 1 and {skill.latest_version}", f"has no version {ref}.")
        return version
    if not isinstance(ref, str) or not ref:
        raise _member_error(name, "a version number or a label", f"{str(ref)[:40]!r} is neither a version nor a label.")
    if ref == IMPLICIT_LABEL:
        return skill.versions.get(number=skill.latest_version)
    label = skill.labels.select_related("version").filter(name=ref).first()
    if label is None:
        raise _member_error(name, f"no label '{ref}'", f"the skill has no label '{ref}'.")
    return label.version


def skillset_members_resolve(members: Any) -> dict[str, SkillVersion]:
    """Check a publish's members ({skill name: version | label}) and take each one's version."""
    if not isinstance(members, Mapping):
        raise InvalidSkillset(
            "members is an object of skill name to version number or label.", fields={"members": "an object"}
        )
    if not members:
        raise InvalidSkillset("A skillset needs at least one member.", fields={"members": "empty"})
    limit = settings.SKILLSET_MAX_MEMBERS
    if len(members) > limit:
        raise InvalidSkillset(
            f"A skillset has at most {limit} members (SKILLSET_MAX_MEMBERS); got {len(members)}.",
            fields={"members": f"at most {limit}"},
            extra={"setting": "SKILLSET_MAX_MEMBERS"},
        )
    seen: dict[str, str] = {}
    for name in members:
        folded = str(name).lower()
        if folded in seen:  # skill names are unique regardless of case: this is one skill twice
            raise _member_error(name, "listed twice", f"the skill is already in the set as '{seen[folded]}'.")
        seen[folded] = name
    return {name: _member_version(name, ref) for name, ref in members.items()}


def _text(value: Any, field: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidSkillset(f"{field} is text of at most {limit} characters.", fields={field: f"at most {limit}"})
    return value.strip()


def _locked_skillset(*, name: str, actor: Actor) -> Skillset:
    skillset = Skillset.objects.filter(name__iexact=name).first()
    if skillset is None:
        skillset_name_check(name)
        try:
            with transaction.atomic():
                skillset = Skillset.objects.create(name=name, created_by=actor.user_or_none)
        except IntegrityError:  # created meanwhile: publish on top of it
            skillset = Skillset.objects.get(name__iexact=name)
    return Skillset.objects.select_for_update().get(pk=skillset.pk)


def skillset_publish(
    *,
    name: str,
    members: Any,
    description: str | None = None,
    note: str = "",
    actor: Actor = SYSTEM,
) -> tuple[SkillsetVersion, bool]:
    """Publish the next version of set `name` (created on first publish) from `members`
    ({skill name: version number | label}, labels taken as they point now). Returns the version
    and whether it was created: members identical to the newest version's create nothing."""
    description = _text(description, "description", DESCRIPTION_MAX) if description is not None else None
    note = _text(note, "note", NOTE_MAX)
    picked = skillset_members_resolve(members)
    numbers = {member: version.number for member, version in picked.items()}
    with transaction.atomic():
        skillset = _locked_skillset(name=name, actor=actor)
        newest = skillset.versions.filter(number=skillset.latest_version).first()
        if newest is not None and _member_numbers(newest) == numbers and description is None:
            return newest, False
        if description is not None:
            skillset.description = description
        skillset.latest_version += 1
        skillset.save(update_fields=["latest_version", "description"])
        version = SkillsetVersion.objects.create(
            skillset=skillset, number=skillset.latest_version, note=note, created_by=actor.user_or_none
        )
        SkillsetMember.objects.bulk_create(
            SkillsetMember(version=version, skill_name=member, skill_version_number=sv.number, skill_version=sv)
            for member, sv in sorted(picked.items())
        )
        audit_record(
            actor=actor,
            action="skillset.publish",
            object_type="skillset",
            object_repr=skillset.name,
            before={"version": newest.number, "members": _member_numbers(newest)} if newest else None,
            after={"version": version.number, "members": numbers},
        )
        # `latest` of the set changed; naming the set (never a skill's name) updates snapshots in place.
        registry_changed(skill=skillset.name)
    return version, True


def _member_numbers(version: SkillsetVersion) -> dict[str, int]:
    return {m.skill_name: m.skill_version_number for m in version.members.all()}


# --- labels ----------------------------------------------------------------------------------


def _set_version(skillset: Skillset, number: Any) -> SkillsetVersion:
    if isinstance(number, bool) or not isinstance(number, int):
        raise ApplicationError("The version must be an integer.", fields={"version": "integer required"})
    version = skillset.versions.filter(number=number).prefetch_related("members__skill_version__skill").first()
    if version is None:
        raise NotFound(
            f"Skillset '{skillset.name}' has no version {number} (latest is {skillset.latest_version}).",
            fields={"version": f"between 1 and {skillset.latest_version}"},
        )
    return version


def _movable_members(version: SkillsetVersion) -> list[SkillsetMember]:
    """The members a label move takes along; a member deleted or disabled since publish stops it."""
    members = sorted(version.members.all(), key=lambda m: m.skill_name)
    for member in members:
        if member.skill_version is None:
            raise _member_error(
                member.skill_name,
                "deleted",
                f"v{member.skill_version_number} no longer exists; publish a set version without it.",
            )
        if not member.skill_version.skill.enabled:
            raise _member_error(
                member.skill_name, "disabled", "the skill is disabled; enable it or publish without it."
            )
    return members


@contextmanager
def _as_member(name: str) -> Iterator[None]:
    """Name the member in a refusal from the skill label services (the policy's check stays in
    `extra`), so the caller reads which member stopped the set."""
    try:
        yield
    except ApplicationError as refusal:
        refusal.detail = f"Member '{name}': {refusal.detail}"
        refusal.args = (refusal.detail,)
        refusal.extra = {**refusal.extra, "member": name}
        raise


def _recorded(
    *,
    skillset: Skillset,
    label: SkillsetLabel | None,
    name: str,
    kind: str,
    before: int | None,
    to_version: int | None,
    actor: Actor,
    weight: int | None = None,
    reason: str = "",
) -> None:
    """One set label change everywhere it is read: the set's label history, the audit log, the
    generation every reader checks, and the webhook."""
    SkillsetLabelHistory.objects.create(
        skillset=skillset,
        label=name,
        kind=kind,
        from_version=before,
        to_version=to_version,
        weight=weight,
        reason=reason,
        changed_by=actor.user_or_none,
        via=actor.via[:120],
    )
    state = {"label": name, "version": label.version.number if label else None}
    if label is not None and label.canary_version_id is not None:
        state.update(canary=label.canary_version.number, weight=label.weight)  # type: ignore[union-attr]
    audit_record(
        actor=actor,
        action=f"skillset.{kind}",
        object_type="skillset",
        object_repr=skillset.name,
        before={"label": name, "version": before},
        after=state,
    )
    registry_changed(skill=skillset.name)
    webhook_event_emit(
        event=WebhookEvent.SKILLSET_LABEL_MOVED,
        actor=actor,
        label=name,
        version=to_version,
        from_version=before,
        extra={"skillset": skillset.name, "kind": kind, "weight": weight},
    )


def _held(skillset: Skillset, label: str) -> SkillsetLabel | None:
    """The set's label of that name, with its versions (the caller holds the set's row lock)."""
    return (
        SkillsetLabel.objects.select_related("version", "canary_version").filter(skillset=skillset, name=label).first()
    )


def skillset_label_move(
    *,
    skillset: Skillset,
    label: str,
    version_number: int,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
    kind: str = LabelChange.MOVE,
) -> SkillsetLabel:
    """Point the set's `label` at version `version_number` and, in the same transaction, each
    member's `label` at that member's number (`label_move`: its policy applies as `role`, its
    history and webhook are written). All or nothing: a member whose policy refuses raises,
    naming it, and no label has moved. Members of the old version that the new one drops keep
    their labels: other consumers may read them alone."""
    label_name_check(label)
    with transaction.atomic():
        skillset = Skillset.objects.select_for_update().get(pk=skillset.pk)
        version = _set_version(skillset, version_number)
        current = _held(skillset, label)
        for member in _movable_members(version):
            with _as_member(member.skill_name):
                label_move(
                    skill=member.skill_version.skill,  # type: ignore[union-attr]
                    label=label,
                    version_number=member.skill_version_number,
                    actor=actor,
                    role=role,
                    override_reason=override_reason,
                )
        before = current.version.number if current else None
        if current is not None and current.version_id == version.pk and not current.canary_version_id:
            return current
        if current is not None and current.canary_version_id == version.pk and kind == LabelChange.MOVE:
            kind = LabelChange.PROMOTE
        if current is None:
            current = SkillsetLabel(skillset=skillset, name=label)
        current.version = version
        current.updated_by = actor.user_or_none
        current.rollout_end()
        current.save()
        _recorded(
            skillset=skillset,
            label=current,
            name=label,
            kind=kind,
            before=before,
            to_version=version.number,
            actor=actor,
            reason=(override_reason or "").strip(),
        )
    return current


def skillset_label_delete(
    *,
    skillset: Skillset,
    label: str,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> None:
    """Remove the set's label (its consumers get a 404 at it). The members' labels stay: each
    may be read alone, and removing a skill's label is that skill's own decision.

    The set's consumers lose what the label served them, so each member of the version it
    serves is checked as for a removal of that member's label (`label_policy_enforce` with no
    version), all or nothing: a protected `production` takes its policy's role, and an
    eval-gated one an admin's `override_reason`, recorded in the set's label history. Without a
    role the caller is the operator, as for `label_delete`."""
    label_name_check(label)
    with transaction.atomic():
        skillset = Skillset.objects.select_for_update().get(pk=skillset.pk)
        current = _held(skillset, label)
        if current is None:
            raise NotFound(f"Skillset '{skillset.name}' has no label '{label}'.")
        if role is not None:
            for member in current.version.members.select_related("skill_version__skill").order_by("skill_name"):
                if member.skill_version is None:  # deleted since publish: no policy left to ask
                    continue
                with _as_member(member.skill_name):
                    label_policy_enforce(
                        skill=member.skill_version.skill,
                        label=label,
                        version=None,
                        actor=actor,
                        role=role,
                        override_reason=override_reason,
                    )
        before = current.version.number
        current.delete()
        _recorded(
            skillset=skillset,
            label=None,
            name=label,
            kind=LabelChange.DELETE,
            before=before,
            to_version=None,
            actor=actor,
            reason=(override_reason or "").strip(),
        )


@dataclass(frozen=True)
class MemberMove:
    """What moving a set label does to one member: its label of that name now (`held`), the
    number it would serve, and what its policy asks of that change (`gate`; `allowed` when the
    member's label already serves it)."""

    name: str
    held: int | None
    target: int
    gate: LabelGate

    @property
    def changed(self) -> bool:
        return self.held != self.target


def skillset_label_preview(*, skillset: Skillset, label: str, version_number: int, role: str) -> list[MemberMove]:
    """Each member's part in moving the set's `label` to `version_number`, read with the gate the
    move will enforce (`label_gate`): what the console's confirmation shows. Reads only; a
    member deleted or disabled since publish raises as the move would."""
    label_name_check(label)
    version = _set_version(skillset, version_number)
    moves = []
    for member in _movable_members(version):
        skill = member.skill_version.skill  # type: ignore[union-attr]
        held = skill.labels.select_related("version").filter(name=label).first()
        number = member.skill_version_number
        if held is not None and held.version_id == member.skill_version_id:
            gate = LabelGate(label=label, version=number)
        else:
            gate = label_gate(skill=skill, label=label, version=member.skill_version, role=role)
        moves.append(MemberMove(member.skill_name, held.version.number if held else None, number, gate))
    return moves


# --- rollouts and rollback -------------------------------------------------------------------


def skillset_rollout_set(
    *,
    skillset: Skillset,
    label: str,
    version_number: int,
    weight: int,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> SkillsetLabel:
    """Send `weight`% of subjects at the set's `label` to set version `version_number`: one draw
    per subject for the whole set (registry/selectors/skillsets.py), so a subject reads all the
    new members or none. Each member whose label serves another number gets the same canary and
    weight (`label_rollout_set`, its policy applying); members whose label already serves their
    number, or that carry no such label yet, have nothing to roll out. All or nothing."""
    label_name_check(label)
    weight_check(weight)
    with transaction.atomic():
        skillset = Skillset.objects.select_for_update().get(pk=skillset.pk)
        version = _set_version(skillset, version_number)
        current = _rollout_target(skillset=skillset, label=label, version=version)
        for member in _movable_members(version):
            skill = member.skill_version.skill  # type: ignore[union-attr]
            held = skill.labels.select_related("version").filter(name=label).first()
            if held is None or held.version.number == member.skill_version_number:
                continue  # nothing to roll out from, or already there
            with _as_member(member.skill_name):
                label_rollout_set(
                    skill=skill,
                    label=label,
                    version_number=member.skill_version_number,
                    weight=weight,
                    actor=actor,
                    role=role,
                    override_reason=override_reason,
                )
        starting = current.canary_version_id != version.pk
        if starting:
            current.rollout_end()
            current.canary_version = version
            current.rollout_started_at = timezone.now()
            current.rollout_started_by = actor.user_or_none
        current.weight = weight
        current.updated_by = actor.user_or_none
        current.save()
        _recorded(
            skillset=skillset,
            label=current,
            name=label,
            kind=LabelChange.ROLLOUT_START if starting else LabelChange.ROLLOUT_STEP,
            before=current.version.number,
            to_version=version.number,
            weight=weight,
            actor=actor,
        )
    return current


def _rollout_target(*, skillset: Skillset, label: str, version: SkillsetVersion) -> SkillsetLabel:
    """The set label a rollout changes; one not set yet, or a canary that is its stable version,
    is a conflict (as for a skill's label)."""
    current = _held(skillset, label)
    if current is None:
        raise RolloutConflict(
            f"Skillset '{skillset.name}' has no label '{label}' yet: point it at a stable version first "
            "(PUT without weight), then roll out a canary.",
            fields={"label": "no stable version to roll out from"},
        )
    if current.version_id == version.pk:
        raise RolloutConflict(
            f"'{label}' already holds version {version.number}: a canary must be another version.",
            fields={"version": "differs from the stable version"},
        )
    return current


def skillset_label_rollback(
    *,
    skillset: Skillset,
    label: str,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> SkillsetLabel:
    """Take the set's `label` back, members and all: a running rollout ends (every member's
    rollout of that canary is aborted; every subject reads the stable set again); otherwise the
    label moves back to the version it held before its last move, as a move (so each member's
    policy applies, and its rollback window lets a recent version back without new evidence)."""
    label_name_check(label)
    with transaction.atomic():
        skillset = Skillset.objects.select_for_update().get(pk=skillset.pk)
        current = _held(skillset, label)
        if current is None:
            raise NotFound(f"Skillset '{skillset.name}' has no label '{label}'.")
        if current.canary_version is not None:
            return _rollout_end(skillset=skillset, current=current, actor=actor)
        previous = _version_before(skillset=skillset, label=label, now=current.version.number)
        return skillset_label_move(
            skillset=skillset,
            label=label,
            version_number=previous,
            actor=actor,
            role=role,
            override_reason=override_reason,
            kind=LabelChange.ROLLBACK,
        )


def _version_before(*, skillset: Skillset, label: str, now: int) -> int:
    moves = skillset.label_history.filter(
        label=label,
        to_version=now,
        kind__in=[LabelChange.MOVE, LabelChange.PROMOTE, LabelChange.ROLLBACK],
        from_version__isnull=False,
    )
    previous = moves.values_list("from_version", flat=True).first()
    if previous is None:
        raise Conflict(
            f"'{label}' of skillset '{skillset.name}' has held v{now} since it was set: there is nothing to roll "
            "back to. Move it to the version you want instead.",
            fields={"label": "no earlier version"},
        )
    return previous


def skillset_rollout_abort(*, skillset: Skillset, label: str, actor: Actor = SYSTEM) -> SkillsetLabel:
    """End the rollout at the set's `label` and each member's rollout of its canary: every
    subject reads the stable set again."""
    label_name_check(label)
    with transaction.atomic():
        skillset = Skillset.objects.select_for_update().get(pk=skillset.pk)
        current = _held(skillset, label)
        if current is None or current.canary_version is None:
            raise NotFound(f"Skillset '{skillset.name}' has no rollout at label '{label}'.")
        return _rollout_end(skillset=skillset, current=current, actor=actor)


def _rollout_end(*, skillset: Skillset, current: SkillsetLabel, actor: Actor) -> SkillsetLabel:
    canary = current.canary_version
    assert canary is not None  # the callers checked
    weight = current.weight
    for member in canary.members.select_related("skill_version__skill"):
        if member.skill_version is None:
            continue
        held = member.skill_version.skill.labels.filter(name=current.name).first()
        if held is not None and held.canary_version_id == member.skill_version_id:
            label_rollout_abort(skill=member.skill_version.skill, label=current.name, actor=actor)
    current.rollout_end()
    current.updated_by = actor.user_or_none
    current.save()
    _recorded(
        skillset=skillset,
        label=current,
        name=current.name,
        kind=LabelChange.ABORT,
        before=current.version.number,
        to_version=canary.number,
        weight=weight,
        actor=actor,
    )
    return current
