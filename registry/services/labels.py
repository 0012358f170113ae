"""Labels: movable pointers (`production`, `staging`, ...) to one version of a skill (SPEC §3).

`latest` is implicit (the newest version) and can never be set or deleted. Every move is atomic
and leaves a LabelHistory row (who, from, to, when); rollback is moving a label back.
"""

from __future__ import annotations

import re

from django.db import transaction

from registry.errors import ApplicationError, NotFound
from registry.models import Label, LabelChange, Skill, SkillVersion, WebhookEvent
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.generation import registry_changed
from registry.services.label_policies import label_history_record, label_policy_enforce
from registry.services.webhooks import webhook_event_emit

LABEL_NAME = re.compile(r"^[a-z0-9_.-]{1,36}$")
IMPLICIT_LABEL = "latest"


class InvalidLabel(ApplicationError):
    code = "invalid_label"


def label_name_check(label: str) -> str:
    if label == IMPLICIT_LABEL:
        raise InvalidLabel(
            "'latest' is implicit: it always points to the newest version and cannot be set or deleted.",
            fields={"label": "'latest' is reserved"},
        )
    if not isinstance(label, str) or not LABEL_NAME.fullmatch(label):
        raise InvalidLabel(
            f"Label names are 1-36 characters of lowercase letters, digits, '_', '.' and '-'; got {str(label)[:60]!r}.",
            fields={"label": "must match [a-z0-9_.-]{1,36}"},
        )
    return label


def label_version_get(*, skill: Skill, version_number: int) -> SkillVersion:
    """The version of `skill` a label is to point at or roll out: a 400 when `version_number` is
    not a whole number, a 404 naming the range when the skill has no such version."""
    if isinstance(version_number, bool) or not isinstance(version_number, int):
        raise ApplicationError("The version must be an integer.", fields={"version": "integer required"})
    version = skill.versions.filter(number=version_number).first()
    if version is None:
        raise NotFound(
            f"'{skill.name}' has no version {version_number} (latest is {skill.latest_version}).",
            fields={"version": f"between 1 and {skill.latest_version}"},
        )
    return version


def label_move(
    *,
    skill: Skill,
    label: str,
    version_number: int,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> Label:
    """Point `label` at version `version_number` of `skill` (creating the label if needed).

    The skill row is locked so concurrent moves of the same label serialise and each history row
    records the version the label really pointed to before it. Moving a label to where it already
    points writes nothing. A user or token moves as `role` (registry.roles.acting_role), and the
    label's policy decides whether it may (LabelPolicyForbidden, LabelPolicyUnmet); an admin's
    `override_reason` moves it anyway. A move back to a version the label served within its
    policy's rollback_window needs no evidence and is recorded as a rollback. Without a role the
    caller is the operator (the CLI, a sync): policies do not apply.
    """
    label_name_check(label)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        version = label_version_get(skill=skill, version_number=version_number)
        current = Label.objects.select_related("version").filter(skill=skill, name=label).first()
        if current is not None and current.version_id == version.pk:
            return current
        before = current.version.number if current else None
        overridden: list[dict] = []
        rollback = False
        if role is not None:
            gate = label_policy_enforce(
                skill=skill, label=label, version=version, actor=actor, role=role, override_reason=override_reason
            )
            overridden, rollback = gate.unmet, gate.rollback
        promoted = current is not None and current.canary_version_id == version.pk
        current = _label_point(skill=skill, label=label, current=current, version=version, actor=actor)
        kind = LabelChange.ROLLBACK if rollback else LabelChange.PROMOTE if promoted else LabelChange.MOVE
        _label_changed(
            skill=skill,
            label=label,
            kind=kind,
            before=before,
            after=version.number,
            actor=actor,
            overridden=overridden,
            override_reason=override_reason,
        )
    return current


def _label_changed(
    *,
    skill: Skill,
    label: str,
    kind: str,
    before: int | None,
    after: int | None,
    actor: Actor,
    overridden: list[dict],
    override_reason: str | None,
) -> None:
    """Record a change of what `label` serves (`after` None: the label was removed): its history
    row (an admin's override, with its reason, when checks were unmet), the audit log, the read
    model and the `label.moved` webhook (a removal moves the label to nothing: `version` null)."""
    label_history_record(
        skill=skill,
        label=label,
        kind=LabelChange.OVERRIDE if overridden else kind,
        from_version=before,
        to_version=after,
        actor=actor,
        reason=(override_reason or "").strip() if overridden else "",
        unmet=overridden,
    )
    audit_record(
        actor=actor,
        action="label.move" if after is not None else "label.delete",
        object_type="skill",
        object_repr=f"{skill.name}@{skill.source}",
        before={"label": label, "version": before},
        after={"label": label, "version": after} if after is not None else None,
    )
    registry_changed(skill=skill.name)
    webhook_event_emit(
        event=WebhookEvent.LABEL_MOVED, actor=actor, skill=skill.name, version=after, label=label, from_version=before
    )


def _label_point(*, skill: Skill, label: str, current: Label | None, version: SkillVersion, actor: Actor) -> Label:
    if current is None:
        return Label.objects.create(skill=skill, name=label, version=version, updated_by=actor.user_or_none)
    current.version = version
    current.updated_by = actor.user_or_none
    current.rollout_end()  # promoting a canary is moving the label to it; any other move replaces it
    current.save()
    return current


def label_delete(
    *,
    skill: Skill,
    label: str,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> None:
    """Remove `label` from `skill`: its readers get what a request naming no label gets, or a 404.

    A removal is a change of what the label serves, so its policy is checked as for a move
    (`label_policy_enforce` with no version): the policy's roles may remove a label whose policy
    asks for no evidence; evidence can never vouch for a removal, so removing an eval-gated label
    takes an admin's `override_reason`, recorded in the label history. Without a role the caller
    is the operator, as for `label_move`."""
    label_name_check(label)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        current = Label.objects.select_related("version").filter(skill=skill, name=label).first()
        if current is None:
            raise NotFound(f"'{skill.name}' has no label '{label}'.")
        overridden: list[dict] = []
        if role is not None:
            gate = label_policy_enforce(
                skill=skill, label=label, version=None, actor=actor, role=role, override_reason=override_reason
            )
            overridden = gate.unmet
        before = current.version.number
        current.delete()
        _label_changed(
            skill=skill,
            label=label,
            kind=LabelChange.DELETE,
            before=before,
            after=None,
            actor=actor,
            overridden=overridden,
            override_reason=override_reason,
        )
