"""Proposing and accepting eval suite revisions (registry/selectors/suite_reviews.py says why and
who): each new revision is accepted or proposed as it is made, and a proposal is accepted by a
role every `require_eval` policy names. Both are audited and, while some policy asks for eval
evidence, written to the skill's label history beside the moves they are evidence for."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from registry.errors import Conflict, NotFound, PermissionDenied
from registry.models import EvalSuite, EvalSuiteRevision, LabelChange, Skill
from registry.selectors.suite_reviews import suite_reviewers, suite_role_accepts
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.label_policies import label_history_record


class SuiteReviewForbidden(PermissionDenied):
    """The actor's role may not accept suite revisions (403 naming the roles that may)."""

    code = "policy"


def eval_suite_revision_record(*, skill: Skill, revision: EvalSuiteRevision, actor: Actor) -> None:
    """Put a new revision in the label history, as a change or a proposal, while some policy
    asks for eval evidence (inside the caller's transaction)."""
    if suite_reviewers() is None:
        return
    label_history_record(
        skill=skill,
        label="",
        kind=LabelChange.SUITE_CHANGE if revision.accepted else LabelChange.SUITE_PROPOSAL,
        from_version=None,
        to_version=None,
        suite_revision=revision.number,
        actor=actor,
    )


def eval_suite_revision_accept(
    *, skill: Skill, number: int, actor: Actor = SYSTEM, role: str | None = None
) -> EvalSuiteRevision:
    """Accept revision `number` of the skill's suite: from now the gate counts runs on it,
    including those made before. Accepting an accepted revision changes nothing; one older than
    an accepted revision is a Conflict (the gate reads the newest accepted one)."""
    if not suite_role_accepts(role=role):
        reviewers = suite_reviewers()
        roles = ", ".join(sorted(reviewers.roles)) if reviewers else ""
        labels = ", ".join(reviewers.labels) if reviewers else ""
        raise SuiteReviewForbidden(
            f"Only {roles} may accept eval suite revisions: the policies of {labels} ask for eval evidence"
            f" ({'you act as ' + role if role else 'you hold no role'}).",
            extra={"roles": sorted(reviewers.roles) if reviewers else []},
        )
    with transaction.atomic():
        suite = EvalSuite.objects.select_for_update().filter(skill=skill).first()
        revision = suite.revisions.select_related("created_by").filter(number=number).first() if suite else None
        if suite is None or revision is None:
            latest = suite.revision if suite else 0
            raise NotFound(
                f"'{skill.name}' has no eval suite revision {number} (the newest is {latest}).",
                fields={"revision": f"between 1 and {latest}" if latest else "the skill has no suite"},
            )
        if revision.accepted:
            return revision
        newer = suite.revisions.filter(number__gt=number, accepted_at__isnull=False).order_by("-number").first()
        if newer is not None:
            raise Conflict(
                f"Suite revision {newer.number} is newer and accepted: the gate counts runs on it, so accepting"
                f" revision {number} would change nothing.",
                fields={"revision": f"superseded by {newer.number}"},
            )
        revision.accepted_at, revision.accepted_by = timezone.now(), actor.user_or_none
        revision.save(update_fields=["accepted_at", "accepted_by"])
        label_history_record(
            skill=skill,
            label="",
            kind=LabelChange.SUITE_ACCEPT,
            from_version=None,
            to_version=None,
            suite_revision=number,
            actor=actor,
        )
        audit_record(
            actor=actor,
            action="eval_suite.accept",
            object_type="eval_suite",
            object_repr=skill.name,
            before={"revision": number, "accepted": False},
            after={
                "revision": number,
                "accepted": True,
                "proposed_by": revision.created_by.username if revision.created_by else None,
            },
        )
    return revision
