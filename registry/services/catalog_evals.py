"""Writing catalog eval runs: every served skill's trigger cases at a label, as agent turns with the
whole catalog offered (agents/evals/catalog_runner.py dispatches them), and the conditional
updates that count each result once however many workers advance the run.

A catalog run shares the eval quotas with skill runs (`eval_run_admit`): it is one run of the
user's EVAL_MAX_ACTIVE_RUNS_PER_USER, and its turns count toward EVAL_MAX_QUEUED_TURNS."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import EVAL_RUN_FINISHED, CatalogEvalCaseResult, CatalogEvalRun, EvalRunStatus
from registry.readmodel.effective import LATEST
from registry.selectors.catalog_evals import catalog_eval_run_result
from registry.selectors.catalog_routing import MEASURED, NO_EVIDENCE, NOT_OFFERED, catalog_routing_inputs
from registry.selectors.versions import label_names_in_use
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.evals import MAX_REPEAT, eval_run_admit


def catalog_eval_label_check(*, label: str | None) -> None:
    """A NotFound naming `label` when no skill carries it (`latest` every skill has): a run there
    would offer the model nothing, which is a typo far more often than a question."""
    if label and label != LATEST and label not in label_names_in_use():
        raise NotFound(f"No skill carries the label {label!r}.", fields={"label": "unknown label"})


def catalog_eval_run_create(*, label: str | None, model: str, repeat: int = 1, actor: Actor = SYSTEM) -> CatalogEvalRun:
    """A queued run of every trigger case (that should load its skill) of every skill served at
    `label` (None: resolve's default), `repeat` times, with one result row per case x repeat.
    The model is checked by the caller (agents' `agent_model_check`); its turns are dispatched
    after commit. A catalog with no such case is a Conflict: there would be nothing to measure."""
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ApplicationError(f"repeat must be 1-{MAX_REPEAT}.", fields={"repeat": f"1 to {MAX_REPEAT}"})
    catalog_eval_label_check(label=label)
    inputs = catalog_routing_inputs(label=label)
    skills, cases = [], []
    for skill in inputs.snapshot.skills:
        offered = skill.model_invocable
        own = inputs.cases.get(skill.skill_id, []) if offered else []
        status = MEASURED if own else (NO_EVIDENCE if offered else NOT_OFFERED)
        skills.append(
            {"name": skill.name, "version": skill.version, "description": skill.description}
            | {"status": status, "cases": len(own)}
        )
        cases += [(skill.name, case) for case in own]
    if not cases:
        raise Conflict(
            f"No skill served{f' at {label!r}' if label else ''} has a trigger case that should load it: "
            "add trigger cases to the skills' eval suites first.",
            fields={"label": "no trigger cases"},
        )
    total = len(cases) * repeat
    if total > settings.EVAL_MAX_QUEUED_TURNS:
        raise ApplicationError(
            f"The run would be {total:,} turns; at most {settings.EVAL_MAX_QUEUED_TURNS:,} (EVAL_MAX_QUEUED_TURNS).",
            fields={"repeat": "fewer repeats"},
        )
    with transaction.atomic():
        eval_run_admit(user=actor.user_or_none, turns=total)
        run = CatalogEvalRun.objects.create(
            label=label or "", model=model, repeat=repeat, skills=skills, created_by=actor.user_or_none
        )
        # Repeats interleaved (every case once, then again), as skill runs do.
        rows = [
            CatalogEvalCaseResult(
                run=run, skill=name, case_id=case["id"], query=case["query"], script=case.get("script"), repeat=number
            )
            for number in range(1, repeat + 1)
            for name, case in cases
        ]
        for position, row in enumerate(rows):
            row.position = position
        CatalogEvalCaseResult.objects.bulk_create(rows, batch_size=2000)
        audit_record(
            actor=actor,
            action="catalog_eval_run.create",
            object_type="catalog_eval_run",
            object_repr=f"{label or 'default'} {run.pk}",
            after={"model": model, "repeat": repeat, "skills": len(skills), "turns": total},
        )
    return run


def catalog_eval_run_lock(*, run_id: Any) -> CatalogEvalRun | None:
    """The run's row, locked until the caller's transaction ends: one worker at a time dispatches."""
    return CatalogEvalRun.objects.select_for_update().filter(pk=run_id).first()


def catalog_eval_run_start(*, run_id: Any) -> bool:
    """queued -> running; False when it is not queued."""
    return bool(
        CatalogEvalRun.objects.filter(pk=run_id, status=EvalRunStatus.QUEUED).update(
            status=EvalRunStatus.RUNNING, started_at=timezone.now()
        )
    )


def catalog_eval_result_dispatch(*, result_id: int, turn_id: Any) -> bool:
    """Tie a result to the turn that runs it; False when it already has one."""
    return bool(
        CatalogEvalCaseResult.objects.filter(pk=result_id, turn__isnull=True, graded_at__isnull=True).update(
            turn_id=turn_id, dispatched_at=timezone.now()
        )
    )


def catalog_eval_result_grade(
    *, result_id: int, loaded: list[str], error: str = "", tokens: int = 0, cost: float = 0.0
) -> bool:
    """Store which skills a result's turn loaded, once: False when it was graded already."""
    return bool(
        CatalogEvalCaseResult.objects.filter(pk=result_id, graded_at__isnull=True).update(
            loaded=loaded, error=error[:2000], tokens=tokens, cost=cost, graded_at=timezone.now()
        )
    )


def catalog_eval_run_finish(*, run_id: Any, status: str = EvalRunStatus.SUCCEEDED, error: str = "") -> bool:
    """End an unfinished run with its matrix; False when it had ended already."""
    with transaction.atomic():
        run = CatalogEvalRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status in EVAL_RUN_FINISHED:
            return False
        run.status, run.error, run.finished_at = status, error[:2000], timezone.now()
        run.started_at = run.started_at or run.finished_at
        run.result = catalog_eval_run_result(run=run)
        run.save(update_fields=["status", "error", "finished_at", "started_at", "result"])
    return True


def catalog_eval_run_cancel(*, run: CatalogEvalRun, actor: Actor = SYSTEM) -> CatalogEvalRun:
    """Mark the run cancelled with the matrix of what was graded; the agents app then cancels its
    unfinished turns. A finished run is a Conflict."""
    with transaction.atomic():
        if not catalog_eval_run_finish(run_id=run.pk, status=EvalRunStatus.CANCELLED, error="Cancelled."):
            run.refresh_from_db()
            raise Conflict(f"The catalog eval run has already {run.status}.", fields={"run": run.status})
        audit_record(
            actor=actor, action="catalog_eval_run.cancel", object_type="catalog_eval_run", object_repr=str(run.pk)
        )
    run.refresh_from_db()
    return run
