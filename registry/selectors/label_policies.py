"""Reading label policies, and the eval runs a policy judges a version by."""

from __future__ import annotations

from registry.models import EvalRun, EvalRunStatus, EvalSuiteRevision, LabelPolicy, SkillVersion


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
