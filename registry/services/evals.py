"""Writing eval suites and runs. Running the turns is the agents app's job (agents/evals/runner.py);
here are the rows it reads and the conditional updates that make a run's progress count each
case result once however many workers grade it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from registry.errors import ApplicationError, Conflict, LimitReached, NotFound
from registry.models import (
    EVAL_RUN_FINISHED,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
    EvalSuiteRevision,
    Skill,
    SkillVersion,
    eval_run_turns,
)
from registry.selectors.evals import (
    eval_run_summary,
    eval_runs_active_count,
    eval_suite_cases,
    eval_suite_revision,
    eval_turns_queued,
)
from registry.selectors.suite_reviews import suite_role_accepts
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.services.catalog_routing import catalog_routing_changed
from registry.services.suite_reviews import eval_suite_revision_record
from registry.skillformat.evals import suite_cases_read

MAX_REPEAT = 20
MAX_RESULTS = 5000  # cases x repeats (x 2 with a baseline) of one run
# Starting runs one at a time (PostgreSQL; SQLite has one writer at a time), so two started at
# once cannot both fit under a limit that only one fits. Any constant no other advisory lock uses.
_ADMISSION_LOCK = 0x5EED_E7A1
# A refused run's Retry-After: runs take minutes, and which ends first is not known in advance.
LIMIT_RETRY_AFTER_SECONDS = 60


def eval_suite_replace(
    *, skill: Skill, document: Any, actor: Actor = SYSTEM, role: str | None = None
) -> EvalSuiteRevision:
    """Validate `document` (our `{"cases"}`, skill-creator's evals.json or its trigger list) and
    make it the suite's new revision; the same cases as the newest revision make none.

    The revision is accepted as made when `role` may accept suites, else it is a proposal the
    label policies' eval gates do not count yet (registry/selectors/suite_reviews.py). Without a
    role the caller is the operator (the CLI, the bundled skills' sync), as for label moves."""
    cases = suite_cases_read(document)
    with transaction.atomic():
        suite, _ = EvalSuite.objects.get_or_create(skill=skill)
        suite = EvalSuite.objects.select_for_update().get(pk=suite.pk)
        current = eval_suite_revision(skill=skill)
        if current is not None and current.cases == cases:
            return current
        suite.revision += 1
        suite.save(update_fields=["revision", "updated_at"])
        accepted = suite_role_accepts(role=role)
        revision = EvalSuiteRevision.objects.create(
            suite=suite,
            number=suite.revision,
            cases=cases,
            created_by=actor.user_or_none,
            accepted_at=timezone.now() if accepted else None,
            accepted_by=actor.user_or_none if accepted else None,
        )
        eval_suite_revision_record(skill=skill, revision=revision, actor=actor)
        transaction.on_commit(catalog_routing_changed)  # its trigger cases are the routing report's
        audit_record(
            actor=actor,
            action="eval_suite.replace",
            object_type="eval_suite",
            object_repr=skill.name,
            before={"revision": current.number, "cases": len(current.cases)} if current else None,
            after={"revision": revision.number, "cases": len(cases), "accepted": accepted},
        )
    return revision


def eval_suite_case_save(
    *, skill: Skill, case: dict[str, Any], actor: Actor = SYSTEM, role: str | None = None
) -> EvalSuiteRevision:
    """Add `case` to the suite, or replace the case with its id (the console's table, "Save as
    eval case" on a turn): a new revision of the whole suite, validated as a whole."""
    cases = eval_suite_cases(skill=skill)
    position = next((i for i, c in enumerate(cases) if c["id"] == case.get("id")), None)
    if position is None:
        cases.append(case)
    else:
        cases[position] = case
    return eval_suite_replace(skill=skill, document={"cases": cases}, actor=actor, role=role)


def eval_suite_case_delete(
    *, skill: Skill, case_id: str, actor: Actor = SYSTEM, role: str | None = None
) -> EvalSuiteRevision:
    """Remove the case with `case_id` (NotFound when the suite has none): a new revision."""
    cases = eval_suite_cases(skill=skill)
    kept = [c for c in cases if c["id"] != case_id]
    if len(kept) == len(cases):
        raise NotFound(f"'{skill.name}' has no eval case '{case_id}'.", fields={"case": "unknown"})
    return eval_suite_replace(skill=skill, document={"cases": kept}, actor=actor, role=role)


def eval_run_create(
    *,
    skill: Skill,
    version: SkillVersion,
    label: str = "",
    model: str,
    repeat: int = 1,
    baseline: bool = False,
    actor: Actor = SYSTEM,
) -> EvalRun:
    """A queued run of the suite's newest revision, with one result row per case x repeat (x with
    and without the skill); the caller (agents/evals/runner.py) dispatches their turns after commit."""
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ApplicationError(f"repeat must be 1-{MAX_REPEAT}.", fields={"repeat": f"1 to {MAX_REPEAT}"})
    revision = eval_suite_revision(skill=skill)
    if revision is None or not revision.cases:
        raise Conflict(
            f"'{skill.name}' has no eval cases yet: PUT /api/v1/skills/{skill.name}/evals first.",
            fields={"suite": "empty"},
        )
    sides = (False, True) if baseline else (False,)
    total = eval_run_turns(cases=len(revision.cases), repeat=repeat, baseline=baseline)
    most = min(MAX_RESULTS, settings.EVAL_MAX_QUEUED_TURNS)
    if total > most:
        raise ApplicationError(
            f"The run would be {total:,} turns; at most {most:,}"
            + (" (EVAL_MAX_QUEUED_TURNS)." if most < MAX_RESULTS else "."),
            fields={"repeat": "fewer repeats"},
        )
    with transaction.atomic():
        eval_run_admit(user=actor.user_or_none, turns=total)
        run = EvalRun.objects.create(
            skill=skill,
            version=version,
            label=label or "",
            model=model,
            repeat=repeat,
            baseline=baseline,
            suite_revision=revision,
            created_by=actor.user_or_none,
        )
        # Repeats interleaved (every case once, then again) so a cancelled run has seen every case.
        rows = [
            EvalCaseResult(run=run, case_id=case["id"], kind=case["kind"], repeat=number, baseline=side)
            for number in range(1, repeat + 1)
            for side in sides
            for case in revision.cases
        ]
        for position, row in enumerate(rows):
            row.position = position
        EvalCaseResult.objects.bulk_create(rows)
        audit_record(
            actor=actor,
            action="eval_run.create",
            object_type="eval_run",
            object_repr=f"{skill.name} v{version.number} {run.pk}",
            after={"model": model, "repeat": repeat, "baseline": baseline, "suite_revision": revision.number},
        )
    return run


def eval_run_admit(*, user: Any, turns: int) -> None:
    """Refuse (429) a run past EVAL_MAX_ACTIVE_RUNS_PER_USER or EVAL_MAX_QUEUED_TURNS; inside the
    transaction that creates it, holding the admission lock until it commits. Catalog runs
    (registry/services/catalog_evals.py) are admitted here too: one quota for both kinds."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADMISSION_LOCK])
    if user is not None:
        active, most = eval_runs_active_count(user=user), settings.EVAL_MAX_ACTIVE_RUNS_PER_USER
        if active >= most:
            raise LimitReached(
                f"You have {active} eval run{'s' if active != 1 else ''} queued or running, the most "
                f"EVAL_MAX_ACTIVE_RUNS_PER_USER allows ({most}): wait for one to end, or cancel one.",
                setting="EVAL_MAX_ACTIVE_RUNS_PER_USER",
                retry_after=LIMIT_RETRY_AFTER_SECONDS,
            )
    queued, most = eval_turns_queued(), settings.EVAL_MAX_QUEUED_TURNS
    if queued + turns > most:
        raise LimitReached(
            f"This run's {turns:,} turns would make {queued + turns:,} eval turns queued across everyone, "
            f"over EVAL_MAX_QUEUED_TURNS ({most:,}): try again when earlier runs have ended, or run fewer repeats.",
            setting="EVAL_MAX_QUEUED_TURNS",
            retry_after=LIMIT_RETRY_AFTER_SECONDS,
        )


def eval_run_lock(*, run_id: Any) -> EvalRun | None:
    """The run's row, locked until the caller's transaction ends (inside `transaction.atomic`):
    one worker at a time decides what of the run to dispatch next."""
    return EvalRun.objects.select_for_update(of=("self",)).select_related("skill", "version").filter(pk=run_id).first()


def eval_result_lock_ungraded(*, result_id: int) -> bool:
    """Lock a result that is not graded yet until the caller's transaction ends (inside
    `transaction.atomic`); False when it is graded already or another worker is grading it, so
    a judge (a paid model call) is asked once per result however many workers advance the run."""
    return (
        EvalCaseResult.objects.select_for_update(skip_locked=True).filter(pk=result_id, graded_at__isnull=True).exists()
    )


def eval_run_start(*, run_id: Any) -> bool:
    """queued -> running; False when it is not queued (started already, or cancelled)."""
    return bool(
        EvalRun.objects.filter(pk=run_id, status=EvalRunStatus.QUEUED).update(
            status=EvalRunStatus.RUNNING, started_at=timezone.now()
        )
    )


def eval_result_dispatch(*, result_id: int, turn_id: Any) -> bool:
    """Tie a result to the turn that runs it; False when it already has one."""
    return bool(
        EvalCaseResult.objects.filter(pk=result_id, turn__isnull=True, graded_at__isnull=True).update(
            turn_id=turn_id, dispatched_at=timezone.now()
        )
    )


def eval_result_grade(
    *,
    result_id: int,
    passed: bool,
    checks: list[dict[str, Any]],
    triggered: bool | None = None,
    error: str = "",
    tokens: int = 0,
    cost: float = 0.0,
) -> bool:
    """Store a result's grade once: False (and nothing written) when it was graded already."""
    return bool(
        EvalCaseResult.objects.filter(pk=result_id, graded_at__isnull=True).update(
            passed=passed,
            triggered=triggered,
            checks=checks,
            error=error[:2000],
            tokens=tokens,
            cost=cost,
            graded_at=timezone.now(),
        )
    )


def eval_run_finish(*, run_id: Any, status: str = EvalRunStatus.SUCCEEDED, error: str = "") -> bool:
    """End an unfinished run with its summary; False when it had ended already."""
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status in EVAL_RUN_FINISHED:
            return False
        run.status, run.error, run.finished_at = status, error[:2000], timezone.now()
        if run.started_at is None:
            run.started_at = run.finished_at
        run.summary = eval_run_summary(run=run)
        run.save(update_fields=["status", "error", "finished_at", "started_at", "summary"])
    return True


def eval_run_cancel(*, run: EvalRun, actor: Actor = SYSTEM) -> EvalRun:
    """Mark the run cancelled with the figures of what was graded; the agents app then cancels
    its unfinished turns. A finished run is a Conflict."""
    with transaction.atomic():  # the cancel and its audit record land together, or neither
        if not eval_run_finish(run_id=run.pk, status=EvalRunStatus.CANCELLED, error="Cancelled."):
            run.refresh_from_db()
            raise Conflict(f"The eval run has already {run.status}.", fields={"run": run.status})
        audit_record(
            actor=actor, action="eval_run.cancel", object_type="eval_run", object_repr=f"{run.skill.name} {run.pk}"
        )
    run.refresh_from_db()
    return run
