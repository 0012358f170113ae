"""Label policies: who may move a label, and on what evidence (an eval run that meets the
policy's thresholds); and the label history every label change is written to.

A policy protects a label name for every skill (`production` everywhere). Without one a label
moves as it always did. `label_policy_enforce` is the one check: the label move service calls it
inside its transaction, and so does anything else that changes what a label serves (rollouts).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.errors import ApplicationError, NotFound, PermissionDenied
from registry.models import LabelChange, LabelHistory, LabelPolicy, Skill, SkillVersion
from registry.roles import ADMIN, ROLE_SCOPES
from registry.selectors.evals import eval_run_summary_current, eval_runs_compare
from registry.selectors.label_policies import eval_run_evidence, label_policy_get
from registry.selectors.suite_reviews import eval_evidence
from registry.services.audit import SYSTEM, Actor, audit_record

# `not_worse` fails when the candidate's task pass rate is worse than the held version's with at
# least this probability (the Beta posterior comparison eval compare and analytics use).
NOT_WORSE_P = 0.95
MODEL_MAX = 200
P_WORSE_MAX = 0.999  # a guard that needs certainty never fires
REASON_MAX = 1000
REQUIRE_EVAL_KEYS = {"model", "min_task_rate", "min_trigger_f1", "not_worse"}
GUARD_KEYS = {"min_n", "p_worse"}


class InvalidLabelPolicy(ApplicationError):
    code = "invalid_policy"


class LabelPolicyForbidden(PermissionDenied):
    """The actor's role may not move a label its policy protects (403 naming the policy)."""

    code = "policy"


class LabelPolicyUnmet(ApplicationError):
    """The version lacks the evidence the label's policy asks for; `extra["unmet"]` lists each
    check as {"check", "wanted", "got", "run"}."""

    status = 409
    code = "policy"


# --- policies ------------------------------------------------------------------------------


def _fraction(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidLabelPolicy(f"{field} must be a number from 0 to 1 (or null).", fields={field: "0 to 1"})
    return float(value)


def _object(value: Any, field: str, allowed: set[str]) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidLabelPolicy(f"{field} must be an object or null.", fields={field: "object or null"})
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise InvalidLabelPolicy(
            f"{field} has no field '{unknown[0]}' (it takes {', '.join(sorted(allowed))}).",
            fields={f"{field}.{unknown[0]}": "unknown field"},
        )
    return value


def label_policy_clean(*, roles: Any, require_eval: Any, guard: Any) -> dict[str, Any]:
    """A policy's parts checked and normalised, or InvalidLabelPolicy naming the field."""
    if not isinstance(roles, list) or not roles or not all(isinstance(role, str) for role in roles):
        raise InvalidLabelPolicy(
            "roles must be a non-empty list of role names.", fields={"roles": "non-empty list of roles"}
        )
    unknown = sorted(set(roles) - set(ROLE_SCOPES))
    if unknown:
        raise InvalidLabelPolicy(
            f"roles: no role '{unknown[0][:40]}' (roles are {', '.join(sorted(ROLE_SCOPES))}).",
            fields={"roles": f"one of {', '.join(sorted(ROLE_SCOPES))}"},
        )
    cleaned: dict[str, Any] = {"roles": sorted(set(roles)), "require_eval": None, "guard": None}
    evidence = _object(require_eval, "require_eval", REQUIRE_EVAL_KEYS)
    if evidence is not None:
        model = evidence.get("model")
        if not isinstance(model, str) or not model.strip() or len(model) > MODEL_MAX:
            raise InvalidLabelPolicy(
                f"require_eval.model must name the model eval runs use (1-{MODEL_MAX} characters).",
                fields={"require_eval.model": "model name required"},
            )
        not_worse = evidence.get("not_worse", False)
        if not isinstance(not_worse, bool):
            raise InvalidLabelPolicy(
                "require_eval.not_worse must be true or false.", fields={"require_eval.not_worse": "boolean"}
            )
        cleaned["require_eval"] = {
            "model": model.strip(),
            "min_task_rate": _fraction(evidence.get("min_task_rate"), "require_eval.min_task_rate"),
            "min_trigger_f1": _fraction(evidence.get("min_trigger_f1"), "require_eval.min_trigger_f1"),
            "not_worse": not_worse,
        }
    watch = _object(guard, "guard", GUARD_KEYS)
    if watch is not None:
        min_n, p_worse = watch.get("min_n"), watch.get("p_worse")
        if isinstance(min_n, bool) or not isinstance(min_n, int) or not 1 <= min_n <= 1_000_000:
            raise InvalidLabelPolicy(
                "guard.min_n must be a whole number from 1 to 1,000,000 (outcomes on each side).",
                fields={"guard.min_n": "1 to 1000000"},
            )
        if isinstance(p_worse, bool) or not isinstance(p_worse, int | float) or not 0.5 <= p_worse <= P_WORSE_MAX:
            raise InvalidLabelPolicy(
                f"guard.p_worse must be a probability from 0.5 to {P_WORSE_MAX}.",
                fields={"guard.p_worse": f"0.5 to {P_WORSE_MAX}"},
            )
        cleaned["guard"] = {"min_n": min_n, "p_worse": float(p_worse)}
    return cleaned


def label_policy_set(
    *, label: str, roles: Any, require_eval: Any = None, guard: Any = None, actor: Actor = SYSTEM
) -> LabelPolicy:
    """Create or replace the policy of `label` (the caller has checked the label's name)."""
    cleaned = label_policy_clean(roles=roles, require_eval=require_eval, guard=guard)
    with transaction.atomic():
        policy = LabelPolicy.objects.select_for_update().filter(label=label).first()
        before = _policy_state(policy) if policy else None
        if policy is None:
            policy = LabelPolicy(label=label)
        policy.roles, policy.require_eval, policy.guard = cleaned["roles"], cleaned["require_eval"], cleaned["guard"]
        policy.updated_by = actor.user_or_none
        policy.save()
        audit_record(
            actor=actor,
            action="label_policy.set",
            object_type="label_policy",
            object_repr=label,
            before=before,
            after=_policy_state(policy),
        )
    return policy


def label_policy_delete(*, label: str, actor: Actor = SYSTEM) -> None:
    with transaction.atomic():
        policy = LabelPolicy.objects.select_for_update().filter(label=label).first()
        if policy is None:
            raise NotFound(f"No policy protects the label '{label}'.")
        before = _policy_state(policy)
        policy.delete()
        audit_record(
            actor=actor, action="label_policy.delete", object_type="label_policy", object_repr=label, before=before
        )


def _policy_state(policy: LabelPolicy) -> dict[str, Any]:
    return {"label": policy.label, "roles": policy.roles, "require_eval": policy.require_eval, "guard": policy.guard}


# --- enforcement ---------------------------------------------------------------------------


def _unmet(check: str, wanted: Any, got: Any, run: Any = None) -> dict[str, Any]:
    return {"check": check, "wanted": wanted, "got": got, "run": None if run is None else str(run.pk)}


SUITE_UNACCEPTED = "suite_accepted"


def _suite_unaccepted(number: int, run: Any) -> dict[str, Any]:
    """The check a run on a proposed suite revision fails: it counts once the revision is accepted."""
    return _unmet(SUITE_UNACCEPTED, {"suite_revision": number, "accepted": True}, "proposed", run)


def label_policy_unmet_phrase(check: dict[str, Any]) -> str:
    """How a refusal names an unmet check."""
    if check["check"] == SUITE_UNACCEPTED:
        return f"suite revision {check['wanted']['suite_revision']} was not accepted"
    return check["check"]


def label_policy_unmet(*, skill: Skill, label: str, version: SkillVersion, require_eval: dict[str, Any]) -> list[dict]:
    """The eval checks `version` does not meet for `label` under `require_eval` (empty: all met).

    The evidence is what `eval_evidence` counts: the version's newest succeeded run with the
    policy's model on the suite's newest accepted revision. `not_worse` compares it with the
    same kind of run of the version the label holds now; when that version has no such run there
    is nothing it is worse than."""
    model = require_eval["model"]
    evidence = eval_evidence(skill=skill, version=version, model=model)
    run, revision = evidence.run, evidence.revision
    if run is None or revision is None:
        if evidence.proposal is not None:
            return [_suite_unaccepted(evidence.proposal.number, evidence.proposal_run)]
        wanted = {"model": model, "version": version.number, "suite_revision": revision.number if revision else None}
        return [_unmet("eval_run", wanted, None)]
    summary = eval_run_summary_current(run=run)
    unmet = []
    task_rate, f1 = summary["task"]["rate"], summary["trigger"]["f1"]
    if require_eval.get("min_task_rate") is not None and (
        task_rate is None or task_rate < require_eval["min_task_rate"]
    ):
        unmet.append(_unmet("min_task_rate", require_eval["min_task_rate"], task_rate, run))
    if require_eval.get("min_trigger_f1") is not None and (f1 is None or f1 < require_eval["min_trigger_f1"]):
        unmet.append(_unmet("min_trigger_f1", require_eval["min_trigger_f1"], f1, run))
    held = skill.labels.select_related("version").filter(name=label).first() if require_eval.get("not_worse") else None
    if held is not None and held.version_id != version.pk:
        held_run = eval_run_evidence(version=held.version, model=model, suite_revision=revision)
        if held_run is not None:
            # P(the held version's task rate > the candidate's): the candidate is worse.
            p_worse = eval_runs_compare(a=run, b=held_run)["task"]["probability_b_better"]
            if p_worse >= NOT_WORSE_P:
                unmet.append(_unmet("not_worse", f"P(worse than v{held.version.number}) < {NOT_WORSE_P}", p_worse, run))
    if unmet and evidence.proposal_run is not None:  # the run its author saw pass does not count yet
        unmet.append(_suite_unaccepted(evidence.proposal_run.suite_revision.number, evidence.proposal_run))
    return unmet


def _forbidden(policy: LabelPolicy, role: str) -> LabelPolicyForbidden:
    return LabelPolicyForbidden(
        f"The policy of label '{policy.label}' lets only {', '.join(policy.roles)} change it"
        f" ({'you act as ' + role if role else 'you hold no role'}).",
        extra={"policy": policy.label, "roles": policy.roles},
    )


def label_policy_role_check(*, label: str, role: str) -> None:
    """Removing a protected label needs a role its policy names (there is no evidence to weigh)."""
    policy = label_policy_get(label=label)
    if policy is not None and role not in policy.roles:
        raise _forbidden(policy, role)


def label_policy_enforce(
    *,
    skill: Skill,
    label: str,
    version: SkillVersion,
    actor: Any,
    role: str,
    override_reason: str | None = None,
) -> list[dict]:
    """Check a change that makes `label` of `skill` serve `version` against the label's policy.

    Returns the unmet checks an admin overrode (audited here with the reason; the caller writes
    them to the label history), [] when nothing was unmet or no policy protects the label. Raises
    LabelPolicyForbidden when `role` may not move the label, LabelPolicyUnmet when evidence is
    missing and nobody overrode, PermissionDenied when a non-admin tries to override."""
    policy = label_policy_get(label=label)
    if policy is None:
        return []
    reason = (override_reason or "").strip()
    if reason and role != ADMIN:
        raise PermissionDenied("Only an admin may override a label policy.", fields={"override_reason": "admins only"})
    if len(reason) > REASON_MAX:
        raise InvalidLabelPolicy(
            f"override_reason is at most {REASON_MAX} characters.", fields={"override_reason": f"at most {REASON_MAX}"}
        )
    unmet = []
    if role not in policy.roles:
        if not reason:
            raise _forbidden(policy, role)
        unmet.append(_unmet("role", policy.roles, role))
    if policy.require_eval:
        unmet += label_policy_unmet(skill=skill, label=label, version=version, require_eval=policy.require_eval)
    if not unmet:
        return []
    if not reason:
        names = ", ".join(label_policy_unmet_phrase(check) for check in unmet)
        raise LabelPolicyUnmet(
            f"v{version.number} of {skill.name} does not meet the policy of label '{label}' ({names}).",
            extra={"policy": label, "unmet": unmet},
        )
    audit_record(
        actor=actor if isinstance(actor, Actor) else Actor(user=actor),
        action="label.override",
        object_type="skill",
        object_repr=f"{skill.name}@{skill.source}",
        after={"label": label, "version": version.number, "reason": reason, "unmet": unmet},
    )
    return unmet


# --- history -------------------------------------------------------------------------------


def label_history_record(
    *,
    skill: Skill,
    label: str,
    kind: str,
    from_version: int | None,
    to_version: int | None,
    weight: int | None = None,
    actor: Actor = SYSTEM,
    reason: str = "",
    unmet: list[dict] | None = None,
    suite_revision: int | None = None,
) -> LabelHistory:
    """Append one change to `skill`'s label history (rows are never edited). Kinds are
    `LabelChange`: move, delete, override, rollout_start, rollout_step, promote, abort, rollback,
    and the suite changes (blank `label`, their `suite_revision`)."""
    if kind not in LabelChange.values:
        raise ValueError(f"unknown label change kind {kind!r}")
    if weight is not None and not 0 <= weight <= 100:
        raise ValueError(f"a rollout weight is a percentage, got {weight}")
    return LabelHistory.objects.create(
        skill=skill,
        label=label,
        kind=kind,
        from_version=from_version,
        to_version=to_version,
        weight=weight,
        reason=reason,
        unmet=unmet or None,
        suite_revision=suite_revision,
        changed_by=actor.user_or_none,
        via=actor.via[:120],
    )
