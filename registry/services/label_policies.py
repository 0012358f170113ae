"""Label policies: who may move a label, and on what evidence (an eval run that meets the
policy's thresholds); and the label history every label change is written to.

A policy protects a label name for every skill (`production` everywhere). Without one a label
moves as it always did. `label_policy_enforce` is the one check: the label move service calls it
inside its transaction, and so does anything else that changes what a label serves (rollouts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_duration
from django.utils.duration import duration_iso_string

from registry.errors import ApplicationError, NotFound, PermissionDenied
from registry.models import (
    VERDICT_RANK,
    LabelChange,
    LabelHistory,
    LabelPolicy,
    ScanVerdict,
    Skill,
    SkillScan,
    SkillVersion,
)
from registry.roles import ADMIN, ROLE_SCOPES
from registry.selectors.attestations import versions_publisher_signed
from registry.selectors.capabilities import LabelCapabilityChange, label_capability_changes
from registry.selectors.evals import eval_run_summary_current, eval_runs_compare
from registry.selectors.label_policies import eval_run_evidence, label_policy_get, label_versions_served_since
from registry.selectors.scans import finding_summary, scan_findings, scans_latest_with_findings
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
REQUIRE_SCAN_KEYS = {"max_verdict"}
# What `require_scan.max_verdict` may name: `error` would admit a scan that could not tell.
SCAN_MAX_VERDICTS = [ScanVerdict.CLEAN, ScanVerdict.REVIEW, ScanVerdict.WARN, ScanVerdict.MALICIOUS]
SCAN = "scan"
SCAN_FINDINGS_SHOWN = 20
ROLLBACK_WINDOW_DEFAULT = timedelta(days=7)
ROLLBACK_WINDOW_MAX = timedelta(days=365)
# `7d`, `36h`, `90m` (the console's box), besides what Django's parse_duration reads (ISO 8601
# `P7D`, `7 00:00:00`), which the API answers with.
_SHORT_DURATION = re.compile(r"^\s*(\d{1,6})\s*([dhm])\s*$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


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


def _flag(value: Any, field: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidLabelPolicy(f"{field} must be true or false.", fields={field: "boolean"})
    return value


def _model(value: Any) -> str:
    """An eval gate's model: one of AGENT_MODELS, the only models an eval run may use (any
    other gate could never be met)."""
    allowed = settings.AGENT_MODELS
    if not isinstance(value, str) or not value.strip() or len(value) > MODEL_MAX:
        raise InvalidLabelPolicy(
            f"require_eval.model must name the model eval runs use, one of {', '.join(allowed)}.",
            fields={"require_eval.model": f"one of {', '.join(allowed)}"},
        )
    if value.strip() not in allowed:
        raise InvalidLabelPolicy(
            f"require_eval.model: eval runs cannot use {value.strip()[:80]!r}; it is not one of AGENT_MODELS "
            f"({', '.join(allowed)}).",
            fields={"require_eval.model": f"one of {', '.join(allowed)}"},
        )
    return value.strip()


def rollback_window_parse(value: Any) -> timedelta:
    """A policy's rollback_window from a timedelta or text (`7d`, `36h`, `P7D`; None: the
    default), from 0 (every move needs evidence) to ROLLBACK_WINDOW_MAX."""
    window = value
    if value is None:
        window = ROLLBACK_WINDOW_DEFAULT
    elif isinstance(value, str):
        short = _SHORT_DURATION.fullmatch(value)
        window = timedelta(**{_UNITS[short[2]]: int(short[1])}) if short else parse_duration(value.strip())
    if not isinstance(window, timedelta) or not timedelta(0) <= window <= ROLLBACK_WINDOW_MAX:
        raise InvalidLabelPolicy(
            f"rollback_window must be a duration from 0 to {ROLLBACK_WINDOW_MAX.days} days, such as 7d, 36h "
            f"or P7D; got {str(value)[:40]!r}.",
            fields={"rollback_window": f"a duration from 0 to {ROLLBACK_WINDOW_MAX.days} days"},
        )
    return window


NEW_CAPABILITIES_CHOICES = ("admin",)


def new_capabilities_clean(value: Any) -> str:
    """A policy's `new_capabilities`: "admin" (a move that adds a network destination, a command
    or a credential read needs an admin's override) or "" / None (no such check)."""
    if value in (None, ""):
        return ""
    if value not in NEW_CAPABILITIES_CHOICES:
        raise InvalidLabelPolicy(
            f'new_capabilities must be "admin" or null; got {str(value)[:40]!r}.',
            fields={"new_capabilities": '"admin" or null'},
        )
    return str(value)


def require_scan_clean(value: Any) -> dict[str, str] | None:
    """`{"max_verdict": "review"}`: the worst scan verdict the label may serve (null: no scan asked)."""
    wanted = _object(value, "require_scan", REQUIRE_SCAN_KEYS)
    if wanted is None:
        return None
    verdict = wanted.get("max_verdict")
    if verdict not in SCAN_MAX_VERDICTS:
        choices = ", ".join(SCAN_MAX_VERDICTS)
        raise InvalidLabelPolicy(
            f"require_scan.max_verdict must be one of {choices}; got {str(verdict)[:40]!r}.",
            fields={"require_scan.max_verdict": f"one of {choices}"},
        )
    return {"max_verdict": str(verdict)}


def label_policy_clean(
    *,
    roles: Any,
    require_eval: Any,
    guard: Any,
    rollback_window: Any = None,
    new_capabilities: Any = None,
    require_publisher_signature: Any = False,
) -> dict[str, Any]:
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
    cleaned: dict[str, Any] = {
        "roles": sorted(set(roles)),
        "require_eval": None,
        "guard": None,
        "rollback_window": rollback_window_parse(rollback_window),
        "new_capabilities": new_capabilities_clean(new_capabilities),
        "require_publisher_signature": _flag(require_publisher_signature, "require_publisher_signature"),
    }
    evidence = _object(require_eval, "require_eval", REQUIRE_EVAL_KEYS)
    if evidence is not None:
        model = _model(evidence.get("model"))
        not_worse = evidence.get("not_worse", False)
        if not isinstance(not_worse, bool):
            raise InvalidLabelPolicy(
                "require_eval.not_worse must be true or false.", fields={"require_eval.not_worse": "boolean"}
            )
        cleaned["require_eval"] = {
            "model": model,
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
    *,
    label: str,
    roles: Any,
    require_eval: Any = None,
    guard: Any = None,
    rollback_window: Any = None,
    new_capabilities: Any = None,
    require_publisher_signature: Any = False,
    require_scan: Any = None,
    actor: Actor = SYSTEM,
) -> LabelPolicy:
    """Create or replace the policy of `label` (the caller has checked the label's name)."""
    cleaned = label_policy_clean(
        roles=roles,
        require_eval=require_eval,
        guard=guard,
        rollback_window=rollback_window,
        new_capabilities=new_capabilities,
        require_publisher_signature=require_publisher_signature,
    )
    cleaned_scan = require_scan_clean(require_scan)
    with transaction.atomic():
        policy = LabelPolicy.objects.select_for_update().filter(label=label).first()
        before = _policy_state(policy) if policy else None
        if policy is None:
            policy = LabelPolicy(label=label)
        policy.roles, policy.require_eval, policy.guard = cleaned["roles"], cleaned["require_eval"], cleaned["guard"]
        policy.rollback_window = cleaned["rollback_window"]
        policy.new_capabilities = cleaned["new_capabilities"]
        policy.require_publisher_signature = cleaned["require_publisher_signature"]
        policy.require_scan = cleaned_scan
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
    return {
        "label": policy.label,
        "roles": policy.roles,
        "require_eval": policy.require_eval,
        "guard": policy.guard,
        "rollback_window": duration_iso_string(policy.rollback_window),
        "new_capabilities": policy.new_capabilities or None,
        "require_publisher_signature": policy.require_publisher_signature,
        "require_scan": policy.require_scan,
    }


# --- enforcement ---------------------------------------------------------------------------


def _unmet(check: str, wanted: Any, got: Any, run: Any = None) -> dict[str, Any]:
    return {"check": check, "wanted": wanted, "got": got, "run": None if run is None else str(run.pk)}


SUITE_UNACCEPTED = "suite_accepted"
# A version its publisher did not sign, under `require_publisher_signature`.
PUBLISHER_SIGNATURE = "publisher_signature"


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


ALLOWED, NEEDS_EVIDENCE, ADMIN_ONLY = "allowed", "needs_evidence", "admin_override"
GATE_TITLES = {ALLOWED: "allowed", NEEDS_EVIDENCE: "needs evidence", ADMIN_ONLY: "admin override only"}
# Removing a label leaves its readers on no version an eval run vouches for: the check a
# removal of an eval-gated label fails, whoever asks.
REMOVAL = "removal"
# A move to a version that can do more than the one the label serves (policy `new_capabilities`).
NEW_CAPABILITIES = "new_capabilities"
# Checks no evidence can meet: only an admin's override (with a reason) passes them.
ADMIN_CHECKS = ("role", REMOVAL, NEW_CAPABILITIES)


@dataclass(frozen=True)
class LabelGate:
    """What making `label` serve `version` (None: removing the label) needs under the label's
    policy, for one role: `allowed`, `needs_evidence` (the `unmet` eval checks) or
    `admin_override` (only an admin's override: a role the policy does not name, or a removal
    the evidence cannot vouch for). `rollback`: the label served `version` within the policy's
    rollback_window, so no evidence is asked for. The move services enforce it and the console
    shows it beside each button, from `label_gate` alone."""

    label: str
    version: int | None
    status: str = ALLOWED
    unmet: list[dict] = field(default_factory=list)
    rollback: bool = False
    policy: LabelPolicy | None = None

    @property
    def title(self) -> str:
        return GATE_TITLES[self.status]

    @property
    def needs(self) -> str:
        """What the change lacks, in words: the eval run and thresholds it wants (empty: none)."""
        return "; ".join(_needed(check, self.policy) for check in self.unmet)


def _figure(value: Any) -> str:
    return "none" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _thresholds(require_eval: dict[str, Any]) -> str:
    wanted = [
        f"{name} ≥ {require_eval[key]:g}"
        for key, name in (("min_task_rate", "task pass rate"), ("min_trigger_f1", "trigger F1"))
        if require_eval.get(key) is not None
    ]
    if require_eval.get("not_worse"):
        wanted.append("not worse than the version it replaces")
    return f" with {' and '.join(wanted)}" if wanted else ""


def _needed(check: dict[str, Any], policy: LabelPolicy | None) -> str:
    name, wanted, got = check["check"], check["wanted"], check["got"]
    require_eval = (policy.require_eval if policy else None) or {}
    if name == "role":
        return f"the policy lets only {', '.join(wanted)} change it"
    if name == REMOVAL:
        return f"removing it leaves its readers on a version no eval run with {wanted['model']} vouches for"
    if name == NEW_CAPABILITIES:
        return f"an admin's approval: {_capabilities_phrase(check)}"
    if name == "eval_run":
        if wanted.get("suite_revision") is None:
            return f"an eval suite, then an eval run of v{wanted['version']} with {wanted['model']}"
        on = f"on suite revision {wanted['suite_revision']}"
        return f"an eval run of v{wanted['version']} with {wanted['model']} {on}{_thresholds(require_eval)}"
    if name == SUITE_UNACCEPTED:
        return f"{label_policy_unmet_phrase(check)}: someone in the policy's roles accepts it"
    if name == PUBLISHER_SIGNATURE:
        return "its publisher's signature (`skillreg push --sign KEY`, with a key registered on the Tokens page)"
    if name == SCAN:
        if got is None:
            return f"a finished scan with a verdict of at most {wanted['max_verdict']} (not scanned yet)"
        why = f": {check.get('reason')}" if got == ScanVerdict.ERROR and check.get("reason") else ""
        return f"a scan verdict of at most {wanted['max_verdict']} (its scan says {got}{why})"
    if name == "min_task_rate":
        return f"task pass rate ≥ {wanted:g} (its run has {_figure(got)})"
    if name == "min_trigger_f1":
        return f"trigger F1 ≥ {wanted:g} (its run has {_figure(got)})"
    return f"{name}: {_figure(wanted) if not isinstance(wanted, str) else wanted} (got {_figure(got)})"


def label_gate(*, skill: Skill, label: str, version: SkillVersion | None, role: str) -> LabelGate:
    """The one reading of a label's policy for a change: see LabelGate. Reads only."""
    return label_gates(skill=skill, label=label, versions=[version], role=role)[0]


def label_gates(*, skill: Skill, label: str, versions: Sequence[SkillVersion | None], role: str) -> list[LabelGate]:
    """`label_gate` for each of `versions`, what the checks read (the policy, the rollback window,
    signatures, scans, what each version adds) read once for all of them: a page with a button per
    version costs as many queries for one version as for fifty. Eval evidence (`require_eval`) is
    still read per version."""
    policy = label_policy_get(label=label)
    if policy is None:
        return [LabelGate(label=label, version=version.number if version else None) for version in versions]
    facts = _GateFacts.read(skill=skill, policy=policy, versions=[v for v in versions if v is not None])
    return [_label_gate(skill=skill, policy=policy, version=version, role=role, facts=facts) for version in versions]


@dataclass(frozen=True)
class _GateFacts:
    """What a policy's checks read about the versions a label might serve, read together."""

    served_within_window: set[int]  # version numbers
    changes: dict[int, LabelCapabilityChange]  # by version id; only when the policy checks capabilities
    signed: set[int]  # version ids a publisher signed; only when the policy asks for a signature
    scans: dict[int, SkillScan]  # the newest finished scan by version id; only when the policy asks for one

    @classmethod
    def read(cls, *, skill: Skill, policy: LabelPolicy, versions: list[SkillVersion]) -> _GateFacts:
        ids = [version.pk for version in versions]
        window = policy.rollback_window
        served = set()
        if window and versions:
            served = label_versions_served_since(skill=skill, label=policy.label, since=timezone.now() - window)
        checks_capabilities = policy.new_capabilities and versions
        return cls(
            served_within_window=served,
            changes=label_capability_changes(skill=skill, label=policy.label, targets=versions)
            if checks_capabilities
            else {},
            signed=versions_publisher_signed(version_ids=ids) if policy.require_publisher_signature and ids else set(),
            scans=scans_latest_with_findings(ids) if policy.require_scan and ids else {},
        )


def _label_gate(
    *, skill: Skill, policy: LabelPolicy, version: SkillVersion | None, role: str, facts: _GateFacts
) -> LabelGate:
    label = policy.label
    unmet = [] if role in policy.roles else [_unmet("role", policy.roles, role or None)]
    rollback = version is not None and version.number in facts.served_within_window
    if policy.require_eval and version is None:
        unmet.append(_unmet(REMOVAL, {"model": policy.require_eval["model"]}, None))
    elif policy.require_eval and version is not None and not rollback:
        unmet += label_policy_unmet(skill=skill, label=label, version=version, require_eval=policy.require_eval)
    if policy.new_capabilities and version is not None and not rollback:
        unmet += _capabilities_unmet(facts.changes[version.pk])
    if policy.require_publisher_signature and version is not None and version.pk not in facts.signed:
        unmet.append(_unmet(PUBLISHER_SIGNATURE, True, False))
    if policy.require_scan and version is not None:  # a rollback too: a rescan may have found something
        unmet += scan_unmet(scan=facts.scans.get(version.pk), require_scan=policy.require_scan)
    status = ALLOWED
    if any(check["check"] in ADMIN_CHECKS for check in unmet):
        status = ADMIN_ONLY
    elif unmet:
        status = NEEDS_EVIDENCE
    return LabelGate(
        label=label,
        version=version.number if version is not None else None,
        status=status,
        unmet=unmet,
        rollback=rollback,
        policy=policy,
    )


def _capabilities_unmet(change: LabelCapabilityChange) -> list[dict]:
    """The `new_capabilities` check: what the change's target adds that a policy asks an admin
    about (network destinations, commands, credential reads) compared with the version the label
    serves now (with none, everything it does is new). Empty when it adds none of them."""
    added = change.diff.gated_added
    if not added:
        return []
    served = change.served.number if change.served is not None else None
    return [
        _unmet(
            NEW_CAPABILITIES,
            {"approved_by": "admin", "compared_with": f"v{served}" if served else "nothing served"},
            [item.text for item in added],
        )
    ]


def _capabilities_phrase(check: dict[str, Any]) -> str:
    compared = check["wanted"]["compared_with"]
    shown = "; ".join(check["got"][:6]) + (f"; and {len(check['got']) - 6} more" if len(check["got"]) > 6 else "")
    return f"it adds, compared with {compared}: {shown}"


def _new_capabilities_refusal(*, skill: Skill, gate: LabelGate, check: dict[str, Any]) -> LabelPolicyForbidden:
    return LabelPolicyForbidden(
        f"v{gate.version} of {skill.name} can do more than what label '{gate.label}' serves now: "
        f"{_capabilities_phrase(check)}. The label's policy asks an admin to approve new capabilities: "
        "an admin moves it with an override reason.",
        extra={"policy": gate.label, "unmet": gate.unmet, "gate": gate.status, "new_capabilities": check["got"]},
    )


def scan_unmet(*, scan: SkillScan | None, require_scan: dict[str, Any]) -> list[dict]:
    """The `scan` check a version fails under `require_scan` (empty: met), given its newest
    finished `scan`: over `max_verdict`, an `error`, or none yet. The check carries the verdict
    and the findings, so a refusal can show them."""
    wanted = require_scan["max_verdict"]
    verdict = scan.verdict if scan is not None else None
    if verdict is not None and verdict != ScanVerdict.ERROR and VERDICT_RANK[verdict] <= VERDICT_RANK[wanted]:
        return []
    check = _unmet(SCAN, {"max_verdict": wanted}, verdict)
    check["reason"] = scan.reason if scan is not None else "not scanned yet"
    check["findings"] = [finding_summary(f) for f in scan_findings(scan)[:SCAN_FINDINGS_SHOWN]] if scan else []
    return [check]


def label_policy_enforce(
    *,
    skill: Skill,
    label: str,
    version: SkillVersion | None,
    actor: Any,
    role: str,
    override_reason: str | None = None,
) -> LabelGate:
    """Check a change that makes `label` of `skill` serve `version` (None: removes the label)
    against the label's policy, as `label_gate` reads it.

    Returns the gate: `unmet` empty when nothing was unmet, else the checks an admin overrode
    (audited here with the reason; the caller writes them to the label history). Raises
    LabelPolicyForbidden when `role` may not change the label, LabelPolicyUnmet when evidence is
    missing (or a removal would leave none) and nobody overrode, PermissionDenied when a
    non-admin tries to override."""
    gate = label_gate(skill=skill, label=label, version=version, role=role)
    policy = gate.policy
    if policy is None:
        return gate
    reason = (override_reason or "").strip()
    if reason and role != ADMIN:
        raise PermissionDenied("Only an admin may override a label policy.", fields={"override_reason": "admins only"})
    if len(reason) > REASON_MAX:
        raise InvalidLabelPolicy(
            f"override_reason is at most {REASON_MAX} characters.", fields={"override_reason": f"at most {REASON_MAX}"}
        )
    if not gate.unmet:
        return gate
    if not reason:
        if role not in policy.roles:
            raise _forbidden(policy, role)
        capabilities = next((check for check in gate.unmet if check["check"] == NEW_CAPABILITIES), None)
        if capabilities is not None:
            raise _new_capabilities_refusal(skill=skill, gate=gate, check=capabilities)
        raise _unmet_error(skill=skill, gate=gate)
    audit_record(
        actor=actor if isinstance(actor, Actor) else Actor(user=actor),
        action="label.override",
        object_type="skill",
        object_repr=f"{skill.name}@{skill.source}",
        after={"label": label, "version": gate.version, "reason": reason, "unmet": gate.unmet},
    )
    return gate


def _unmet_error(*, skill: Skill, gate: LabelGate) -> LabelPolicyUnmet:
    names = ", ".join(label_policy_unmet_phrase(check) for check in gate.unmet)
    extra = {"policy": gate.label, "unmet": gate.unmet, "gate": gate.status, "needs": gate.needs}
    if gate.version is None:
        return LabelPolicyUnmet(
            f"Removing label '{gate.label}' of {skill.name} does not meet its policy ({names}): readers would get a "
            "version no eval run vouches for. Only an admin's override (with a reason) removes it; to change what "
            "it serves, move it to an evaluated version.",
            extra=extra,
        )
    return LabelPolicyUnmet(
        f"v{gate.version} of {skill.name} does not meet the policy of label '{gate.label}' ({names}).", extra=extra
    )


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
