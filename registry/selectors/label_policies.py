"""Reading label policies, and the eval runs a policy judges a version by."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from registry.models import (
    EvalRun,
    EvalRunStatus,
    EvalSuiteRevision,
    LabelChange,
    LabelHistory,
    LabelPolicy,
    Skill,
    SkillVersion,
)


def label_policy_get(*, label: str) -> LabelPolicy | None:
    """The policy protecting `label` (of every skill), None when the label is unprotected."""
    return LabelPolicy.objects.select_related("updated_by").filter(label=label).first()


def label_policy_list() -> list[LabelPolicy]:
    return list(LabelPolicy.objects.select_related("updated_by").order_by("label"))


def eval_run_evidence(*, version: SkillVersion, model: str, suite_revision: EvalSuiteRevision) -> EvalRun | None:
    """The newest succeeded run of `version` with `model` on `suite_revision`: what a policy's
    `require_eval` reads (a failed or cancelled run, or one on an older suite, is no evidence)."""
    runs = EvalRun.objects.filter(
        version=version, model=model, suite_revision=suite_revision, status=EvalRunStatus.SUCCEEDED
    )
    return runs.select_related("skill", "version", "suite_revision").order_by("-finished_at", "-created_at").first()


def label_versions_served_since(*, skill: Skill, label: str, since: datetime) -> set[int]:
    """The versions `label` of `skill` stopped pointing to at `since` or later, so served then:
    the `from_version` of each move, override, promotion, removal or move back since. A
    rollout's rows keep the label where it was (and the guard's rollback has a weight)."""
    left = Q(kind__in=[LabelChange.MOVE, LabelChange.OVERRIDE, LabelChange.PROMOTE, LabelChange.DELETE]) | Q(
        kind=LabelChange.ROLLBACK, weight__isnull=True
    )
    rows = LabelHistory.objects.filter(left, skill=skill, label=label, changed_at__gte=since)
    return {number for number in rows.values_list("from_version", flat=True) if number is not None}
