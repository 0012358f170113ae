"""Writing model checks: the check's row and its runs (queued by agents/evals/model_check.py, which
runs the turns), its report once every run has ended, and for a drift watch the `catalog.drift`
webhook per skill that got worse than its last accepted run, and the banner's dismissal."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from registry.errors import Conflict
from registry.models import (
    EVAL_RUN_FINISHED,
    EvalRun,
    EvalRunStatus,
    ModelCheck,
    ModelCheckKind,
    ModelCheckRun,
    ModelCheckStatus,
    WebhookEvent,
)
from registry.selectors.model_checks import model_check_baseline, model_check_report, model_check_runs
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.evals import eval_run_admit
from registry.services.webhooks import webhook_event_emit


def model_check_create(
    *,
    kind: str,
    label: str,
    current_model: str,
    candidate_model: str = "",
    repeat: int,
    skills: list[dict[str, Any]],
    turns: int,
    actor: Actor = SYSTEM,
) -> ModelCheck:
    """The check's row, admitted under the eval quotas as one request: refused (429) while its
    author has EVAL_MAX_ACTIVE_RUNS_PER_USER runs going, or when its `turns` would pass
    EVAL_MAX_QUEUED_TURNS. Inside the caller's transaction, which then queues its runs (each
    counted again as it is created, so the whole check fits or nothing is written)."""
    eval_run_admit(user=actor.user_or_none, turns=turns)
    check = ModelCheck.objects.create(
        kind=kind,
        label=label,
        current_model=current_model,
        candidate_model=candidate_model,
        repeat=repeat,
        skills=skills,
        created_by=actor.user_or_none,
    )
    audit_record(
        actor=actor,
        action=f"model_check.{kind}",
        object_type="model_check",
        object_repr=f"{label} {current_model}{' -> ' + candidate_model if candidate_model else ''} {check.pk}",
        after={"skills": len(skills), "turns": turns, "repeat": repeat},
    )
    return check


def model_check_run_add(*, check: ModelCheck, run: EvalRun, side: str, user: Any = None) -> ModelCheckRun:
    """Tie a queued run to the check; the run is its author's (their quota, their turns) though it
    was created without counting it against them a second time."""
    if user is not None and run.created_by_id is None:
        EvalRun.objects.filter(pk=run.pk).update(created_by=user)
    return ModelCheckRun.objects.create(model_check=check, run=run, side=side)


def model_check_finish(*, check_id: Any) -> bool:
    """Store the report once every run of the check has ended; False while one goes on, or when it
    was stored already. A watch's drifted runs stop being baselines and raise `catalog.drift`."""
    with transaction.atomic():
        check = ModelCheck.objects.select_for_update().filter(pk=check_id).first()
        if check is None or check.is_finished:
            return False
        links = model_check_runs(check=check)
        if any(link.run.status not in EVAL_RUN_FINISHED for link in links):
            return False
        baselines = None
        if check.kind == ModelCheckKind.WATCH:
            found = {link.run.skill.name: model_check_baseline(run=link.run) for link in links}
            baselines = {name: run for name, run in found.items() if run is not None}
        report = model_check_report(check=check, baselines=baselines)
        failed = any(link.run.status != EvalRunStatus.SUCCEEDED for link in links)
        check.status = ModelCheckStatus.FAILED if failed else ModelCheckStatus.SUCCEEDED
        check.report, check.regressed, check.finished_at = report, report["regressed"], timezone.now()
        check.save(update_fields=["status", "report", "regressed", "finished_at"])
        if check.kind == ModelCheckKind.WATCH:
            _drift_raise(check=check, links=links, report=report)
    return True


def _drift_raise(*, check: ModelCheck, links: list[ModelCheckRun], report: dict[str, Any]) -> None:
    drifted = {row["name"]: row for row in report["skills"] if row["regressed"]}
    for link in links:
        row = drifted.get(link.run.skill.name)
        if row is None:
            continue
        ModelCheckRun.objects.filter(pk=link.pk).update(accepted=False)
        webhook_event_emit(
            event=WebhookEvent.CATALOG_DRIFT,
            actor=SYSTEM,
            skill=row["name"],
            version=row["version"],
            label=check.label,
            extra={
                "model": check.current_model,
                "check": str(check.pk),
                "run": row["runs"]["candidate"],
                "baseline_run": row["runs"]["current"],
                "worse_in": row["worse_in"],
                "trigger_f1": row["trigger_f1"],
                "task_rate": row["task_rate"],
                "probability_worse": row["probability_worse"],
                "threshold": report["threshold"]["p_worse"],
            },
        )
    if drifted:
        audit_record(
            actor=SYSTEM,
            action="catalog.drift",
            object_type="model_check",
            object_repr=f"{check.label} {check.current_model} {check.pk}",
            after={"skills": sorted(drifted)},
        )


def catalog_drift_dismiss(*, check: ModelCheck, actor: Actor = SYSTEM) -> ModelCheck:
    """Hide the watch's drift banner and accept what it measured: its runs become the baselines
    the next watch compares with. A check that is not a finished watch with drift is a Conflict."""
    with transaction.atomic():
        check = ModelCheck.objects.select_for_update().get(pk=check.pk)
        if check.kind != ModelCheckKind.WATCH or not check.regressed or check.dismissed_at is not None:
            raise Conflict("Only a drift watch that found drift, not yet dismissed, can be dismissed.")
        check.dismissed_at, check.dismissed_by = timezone.now(), actor.user_or_none
        check.save(update_fields=["dismissed_at", "dismissed_by"])
        check.runs.update(accepted=True)
        audit_record(
            actor=actor,
            action="catalog.drift.dismiss",
            object_type="model_check",
            object_repr=f"{check.label} {check.current_model} {check.pk}",
        )
    return check
