"""Weighted rollouts of a label: start, raise or lower, abort, and the guard's automatic rollback.

A rollout keeps the label on its stable version and sends `weight`% of subjects to a canary
version (registry/readmodel/rollouts.py decides who). Promoting is an ordinary label move
(`label_move`), which ends the rollout. Label policies apply to starting and raising; every step
goes to the label history and the audit log, and bumps the registry generation so every reader
serves the new split at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from registry.errors import ApplicationError, NotFound
from registry.models import Label, LabelChange, Skill, SkillVersion, WebhookEvent
from registry.selectors.label_policies import label_policy_get
from registry.selectors.rollouts import rollout_comparison
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.generation import registry_changed
from registry.services.label_policies import label_history_record, label_policy_enforce
from registry.services.labels import label_name_check, label_version_get
from registry.services.webhooks import webhook_event_emit


class RolloutConflict(ApplicationError):
    status = 409
    code = "rollout_conflict"


def weight_check(weight: object) -> int:
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise ApplicationError(
            "The weight is the share of subjects sent to the canary: a whole number from 0 to 100; "
            f"got {str(weight)[:40]!r}.",
            fields={"weight": "an integer from 0 to 100"},
        )
    return weight


def _rollout_state(label: Label) -> dict:
    return {
        "label": label.name,
        "stable": label.version.number,
        "canary": label.canary_number,
        "weight": label.weight,
    }


def label_rollout_set(
    *,
    skill: Skill,
    label: str,
    version_number: int,
    weight: int,
    actor: Actor = SYSTEM,
    role: str | None = None,
    override_reason: str | None = None,
) -> Label:
    """Send `weight`% of subjects at `label` to version `version_number`, keeping the label on
    its stable version. A new canary starts a rollout (its subjects are drawn afresh); the same
    canary with another weight raises or lowers it, and a raise moves only stable subjects to
    the canary. Starting and raising are checked against the label's policy as `role` (None: the
    operator, whom policies do not bind); lowering is not."""
    label_name_check(label)
    weight_check(weight)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        current, version = _rollout_target(skill=skill, label=label, version_number=version_number)
        starting = current.canary_version_id != version.pk
        unmet: list[dict] = []
        if role is not None and (starting or weight > current.weight):
            unmet = label_policy_enforce(
                skill=skill, label=label, version=version, actor=actor, role=role, override_reason=override_reason
            ).unmet
        before = _rollout_state(current)
        if starting:
            current.rollout_end()
            current.canary_version = version
            current.rollout_started_at = timezone.now()
            current.rollout_started_by = actor.user_or_none
        if weight > current.weight:  # sending traffic again is a decision that outlives a rollback
            current.rolled_back_at = None
            current.rollback_figures = None
        current.weight = weight
        current.updated_by = actor.user_or_none
        current.save()
        _rollout_recorded(
            skill=skill,
            label=current,
            kind=LabelChange.ROLLOUT_START if starting else LabelChange.ROLLOUT_STEP,
            to_version=version.number,
            actor=actor,
            action="label.rollout",
            before=before,
            reason=(override_reason or "").strip() if unmet else "",
            unmet=unmet,
        )
    return current


def _rollout_target(*, skill: Skill, label: str, version_number: int) -> tuple[Label, SkillVersion]:
    """The label a rollout changes and the canary version; a label not set yet, or a canary that
    is its stable version, is a conflict."""
    version = label_version_get(skill=skill, version_number=version_number)
    current = Label.objects.select_related("version", "canary_version").filter(skill=skill, name=label).first()
    if current is None:
        raise RolloutConflict(
            f"'{skill.name}' has no label '{label}' yet: point it at a stable version first "
            f"(PUT without weight), then roll out a canary.",
            fields={"label": "no stable version to roll out from"},
        )
    if current.version_id == version.pk:
        raise RolloutConflict(
            f"'{label}' already holds version {version_number}: a canary must be another version.",
            fields={"version": f"differs from the stable version {version_number}"},
        )
    return current, version


def label_rollout_abort(*, skill: Skill, label: str, actor: Actor = SYSTEM) -> Label:
    """End the rollout at `label`: every subject reads the stable version again."""
    label_name_check(label)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=skill.pk)
        current = Label.objects.select_related("version", "canary_version").filter(skill=skill, name=label).first()
        if current is None or current.canary_version_id is None:
            raise NotFound(f"'{skill.name}' has no rollout at label '{label}'.")
        before = _rollout_state(current)
        canary, weight = current.canary_number, current.weight
        current.rollout_end()
        current.updated_by = actor.user_or_none
        current.save()
        _rollout_recorded(
            skill=skill,
            label=current,
            kind=LabelChange.ABORT,
            to_version=canary,
            actor=actor,
            action="label.rollout_abort",
            before=before,
            weight=weight,  # the share it was aborted at, not the 0 it leaves
        )
    return current


def _rollout_recorded(
    *,
    skill: Skill,
    label: Label,
    kind: str,
    to_version: int | None,
    actor: Actor,
    action: str,
    before: dict,
    reason: str = "",
    unmet: list[dict] | None = None,
    figures: dict | None = None,
    weight: int | None = None,
) -> None:
    """One rollout step (`label` as saved) everywhere it is read: the label history, the audit
    log (with the guard's `figures` when it rolled back), and the generation every reader checks."""
    label_history_record(
        skill=skill,
        label=label.name,
        kind=kind,
        from_version=label.version.number,
        to_version=to_version,
        weight=label.weight if weight is None else weight,
        actor=actor,
        reason=reason,
        unmet=unmet,
    )
    audit_record(
        actor=actor,
        action=action,
        object_type="skill",
        object_repr=f"{skill.name}@{skill.source}",
        before=before,
        after={**_rollout_state(label), **({"figures": figures} if figures is not None else {})},
    )
    registry_changed(skill=skill.name)


# --- the guard ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GuardVerdict:
    label_id: int
    rolled_back: bool
    figures: dict


def label_rollout_guard(*, label_id: int) -> GuardVerdict:
    """Check one active rollout against its label policy's guard; when P(canary worse) ≥
    `p_worse` with at least `min_n` outcomes on each side, set the weight to 0 (the canary is
    kept so its figures stay readable), as the system. Never promotes."""
    label = Label.objects.select_related("skill", "version", "canary_version").filter(pk=label_id).first()
    guard = _guard_of(label.name) if label else None
    if label is None or guard is None or not label.rollout_active:
        return GuardVerdict(label_id=label_id, rolled_back=False, figures={})
    figures = {**rollout_comparison(label=label).as_dict(), "guard": guard}
    worse = figures["p_worse"]
    enough = min(figures["stable"]["n"], figures["canary"]["n"]) >= guard["min_n"]
    if worse is None or not enough or worse < guard["p_worse"]:
        return GuardVerdict(label_id=label_id, rolled_back=False, figures=figures)
    measured = (label.canary_version_id, label.rollout_started_at)
    with transaction.atomic():
        skill = Skill.objects.select_for_update().get(pk=label.skill_id)
        current = Label.objects.select_related("version", "canary_version").filter(pk=label_id).first()
        # Aborted, promoted, deleted or replaced by another rollout while we measured: these
        # figures are not its figures.
        if current is None or not current.rollout_active:
            return GuardVerdict(label_id=label_id, rolled_back=False, figures=figures)
        if (current.canary_version_id, current.rollout_started_at) != measured:
            return GuardVerdict(label_id=label_id, rolled_back=False, figures=figures)
        label = current
        before = _rollout_state(label)
        label.weight = 0
        label.rolled_back_at = timezone.now()
        label.rollback_figures = figures
        label.save()
        reason = (
            f"P(canary worse) = {worse:.3f} ≥ {guard['p_worse']} with n = {figures['stable']['n']} stable "
            f"and {figures['canary']['n']} canary"
        )
        _rollout_recorded(
            skill=skill,
            label=label,
            kind=LabelChange.ROLLBACK,
            to_version=label.canary_number,
            actor=SYSTEM,
            action="label.rolled_back",
            before=before,
            reason=reason,
            figures=figures,
        )
        webhook_event_emit(
            event=WebhookEvent.LABEL_ROLLED_BACK,
            actor=SYSTEM,
            skill=skill.name,
            version=label.version.number,
            label=label.name,
            from_version=label.canary_number,
            extra={"figures": figures},
        )
    return GuardVerdict(label_id=label_id, rolled_back=True, figures=figures)


def _guard_of(label: str) -> dict | None:
    policy = label_policy_get(label=label)
    return (policy.guard or None) if policy is not None else None
