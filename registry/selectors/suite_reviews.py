"""Which eval suite revisions a label policy's eval gate counts, and who may accept a revision.

A `require_eval` gate judges a version by an eval run, and the run is only as strict as its
suite. So a suite is evidence only when someone the gate trusts stands behind it: a change by a
role every `require_eval` policy names (admins always) is accepted as it is made; anyone else's
is a proposal that runs may use but the gate does not count until such a role accepts it
(registry/services/suite_reviews.py). Acceptance is decided when it happens: a policy set or
changed later does not revisit revisions made before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.models import EvalRun, EvalRunStatus, EvalSuiteRevision, LabelPolicy, Skill, SkillVersion
from registry.roles import ADMIN
from registry.selectors.label_policies import eval_run_evidence


@dataclass(frozen=True)
class SuiteReviewers:
    """The roles whose suite changes count as made, and the labels whose policies ask for them."""

    roles: frozenset[str]
    labels: tuple[str, ...]


def suite_reviewers() -> SuiteReviewers | None:
    """Admin and the roles every `require_eval` policy names; None when no policy asks for eval
    evidence (then every change is accepted as made: there is no gate to fool)."""
    policies = list(LabelPolicy.objects.filter(require_eval__isnull=False).order_by("label"))
    if not policies:
        return None
    shared = set.intersection(*(set(policy.roles) for policy in policies))
    return SuiteReviewers(roles=frozenset(shared | {ADMIN}), labels=tuple(policy.label for policy in policies))


def suite_role_accepts(*, role: str | None) -> bool:
    """Whether a suite change made as `role` is accepted as made, and whether `role` may accept a
    proposal. No role is the operator (the CLI, the sync of bundled skills), as for label moves."""
    if role is None:
        return True
    reviewers = suite_reviewers()
    return reviewers is None or role in reviewers.roles


def eval_suite_accepted_revision(*, skill: Skill) -> EvalSuiteRevision | None:
    """The newest accepted revision of the skill's suite: the one the gate asks runs to be on."""
    revisions = EvalSuiteRevision.objects.filter(suite__skill=skill, accepted_at__isnull=False)
    return revisions.select_related("created_by", "accepted_by").order_by("-number").first()


@dataclass(frozen=True)
class EvalEvidence:
    """What a `require_eval` gate has for a version: `run` on the accepted `revision` (or none),
    and `proposal`, a newer revision not accepted yet, with the version's run on it if any: why a
    run the author sees passing does not count."""

    run: EvalRun | None
    revision: EvalSuiteRevision | None
    proposal: EvalSuiteRevision | None = None
    proposal_run: EvalRun | None = None


def eval_evidence(*, skill: Skill, version: SkillVersion, model: str) -> EvalEvidence:
    """The one answer to "does this run count" for a label policy's gate: the version's newest
    succeeded run with `model` on the suite's newest accepted revision.

    A run on a proposal counts once the proposal is accepted, as it stands: accepting judges the
    revision's cases, and a run of that revision ran exactly those cases, so it needs no rerun.
    A pending proposal changes nothing the gate asks for: evidence on the accepted revision still
    counts, and is still the one judged."""
    revision = eval_suite_accepted_revision(skill=skill)
    run = eval_run_evidence(version=version, model=model, suite_revision=revision) if revision else None
    pending = EvalSuiteRevision.objects.filter(suite__skill=skill, accepted_at__isnull=True)
    if revision is not None:
        pending = pending.filter(number__gt=revision.number)
    # The refusal names the proposal the version was run on, else the one the next run will use.
    proposal_run = (
        EvalRun.objects.filter(version=version, model=model, status=EvalRunStatus.SUCCEEDED, suite_revision__in=pending)
        .select_related("suite_revision")
        .order_by("-suite_revision__number", "-finished_at")
        .first()
    )
    proposal = proposal_run.suite_revision if proposal_run else pending.order_by("-number").first()
    return EvalEvidence(run=run, revision=revision, proposal=proposal, proposal_run=proposal_run)
