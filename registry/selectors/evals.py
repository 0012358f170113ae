"""Reading eval suites and runs: the suite's cases, a run's progress and summary, two runs
compared, each version's latest result. Reads only; the figures are computed from the graded
case results, so a summary read while a run is going equals the one stored when it ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from registry.errors import NotFound
from registry.models import EVAL_RUN_FINISHED, EvalCaseResult, EvalRun, EvalRunStatus, EvalSuiteRevision, Skill
from registry.selectors.analytics import newcombe_difference, probability_b_better, wilson_interval
from registry.selectors.catalog_evals import catalog_eval_runs_active_count, catalog_eval_turns_queued
from registry.skillformat.evals import suite_as_skill_creator


def eval_suite_revision(*, skill: Skill, number: int | None = None) -> EvalSuiteRevision | None:
    """The suite's newest revision (or revision `number`), None when the skill has no suite."""
    revisions = EvalSuiteRevision.objects.filter(suite__skill=skill).select_related("created_by", "accepted_by")
    if number is not None:
        return revisions.filter(number=number).first()
    return revisions.order_by("-number").first()


def eval_suite_cases(*, skill: Skill) -> list[dict[str, Any]]:
    revision = eval_suite_revision(skill=skill)
    return list(revision.cases) if revision else []


def eval_suite_skill_creator(*, skill: Skill) -> dict[str, Any]:
    """The suite's task cases as skill-creator's evals/evals.json."""
    return suite_as_skill_creator(skill_name=skill.name, cases=eval_suite_cases(skill=skill))


def eval_run_get(*, run_id: Any) -> EvalRun:
    run = EvalRun.objects.select_related("skill", "version", "suite_revision").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No eval run {run_id}.")
    return run


def eval_runs_of_skill(*, skill: Skill, limit: int = 50) -> list[EvalRun]:
    return list(EvalRun.objects.filter(skill=skill).select_related("version", "suite_revision")[:limit])


def eval_runs_unfinished() -> QuerySet[EvalRun]:
    return EvalRun.objects.exclude(status__in=EVAL_RUN_FINISHED)


def eval_runs_active_count(*, user: Any) -> int:
    """The user's runs that are queued or running, catalog runs included (one quota for both)."""
    return eval_runs_unfinished().filter(created_by=user).count() + catalog_eval_runs_active_count(user=user)


def eval_turns_queued() -> int:
    """Eval turns not yet graded (waiting, queued or running) across every unfinished run,
    catalog runs' included."""
    skill_runs = EvalCaseResult.objects.filter(graded_at__isnull=True).exclude(run__status__in=EVAL_RUN_FINISHED)
    return skill_runs.count() + catalog_eval_turns_queued()


def eval_run_results(*, run: EvalRun) -> list[EvalCaseResult]:
    return list(run.results.order_by("position"))


def eval_run_progress(*, run: EvalRun) -> dict[str, int]:
    counts = run.results.aggregate(total=Count("pk"), done=Count("pk", filter=Q(graded_at__isnull=False)))
    return {"done": counts["done"] or 0, "total": counts["total"] or 0}


@dataclass(frozen=True)
class TriggerFigures:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def as_dict(self) -> dict[str, Any]:
        figures: dict[str, Any] = {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn}
        return figures | {"precision": _round(self.precision), "recall": _round(self.recall), "f1": _round(self.f1)}


@dataclass(frozen=True)
class TaskFigures:
    passed: int = 0
    failed: int = 0

    @property
    def n(self) -> int:
        return self.passed + self.failed

    @property
    def rate(self) -> float | None:
        return _ratio(self.passed, self.n)

    def as_dict(self) -> dict[str, Any]:
        low, high = wilson_interval(self.passed, self.n) or (None, None)
        return {"passed": self.passed, "failed": self.failed, "rate": _round(self.rate), "low": _round(low)} | {
            "high": _round(high)
        }


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def trigger_figures(results: list[EvalCaseResult]) -> TriggerFigures:
    """Confusion counts of the graded trigger results (a case whose turn did not say whether it
    triggered counts as not triggered: the skill did not help that query)."""
    tp = fp = tn = fn = 0
    for result in results:
        if result.kind != "trigger" or result.graded_at is None:
            continue
        triggered = bool(result.triggered)
        should = bool(result.passed) == triggered  # a trigger case passes when it triggered as it should
        if triggered and should:
            tp += 1
        elif triggered:
            fp += 1
        elif should:
            fn += 1
        else:
            tn += 1
    return TriggerFigures(tp=tp, fp=fp, tn=tn, fn=fn)


def task_figures(results: list[EvalCaseResult]) -> TaskFigures:
    graded = [r for r in results if r.kind == "task" and r.graded_at is not None]
    passed = sum(1 for r in graded if r.passed)
    return TaskFigures(passed=passed, failed=len(graded) - passed)


def eval_run_summary(*, run: EvalRun, results: list[EvalCaseResult] | None = None) -> dict[str, Any]:
    """The run's figures from its graded results (with the skill; the baseline apart)."""
    results = eval_run_results(run=run) if results is None else results
    main = [r for r in results if not r.baseline]
    base = [r for r in results if r.baseline]
    summary: dict[str, Any] = {
        "trigger": trigger_figures(main).as_dict(),
        "task": task_figures(main).as_dict(),
        "baseline": None,
        "tokens": sum(r.tokens for r in results),
        "cost": round(sum(r.cost for r in results), 6),
        "duration_ms": _duration_ms(run),
        "errors": sum(1 for r in results if r.error),
    }
    if run.baseline:
        summary["baseline"] = {"trigger": trigger_figures(base).as_dict(), "task": task_figures(base).as_dict()}
    return summary


def _duration_ms(run: EvalRun) -> int | None:
    if run.started_at is None:
        return None
    end = run.finished_at or timezone.now()
    return max(0, int((end - run.started_at).total_seconds() * 1000))


def eval_run_summary_current(*, run: EvalRun, results: list[EvalCaseResult] | None = None) -> dict[str, Any]:
    """The stored summary of a finished run, else the figures so far (from `results` when the
    caller has read them)."""
    if run.is_finished and run.summary is not None:
        return run.summary
    return eval_run_summary(run=run, results=results)


@dataclass(frozen=True)
class EvalRunDetail:
    """A run as its page, its poll and `GET /evals/runs/{id}` show it: its results read once, the
    progress counted from them and its figures (stored once it ended, else so far)."""

    run: EvalRun
    results: list[EvalCaseResult]
    summary: dict[str, Any]

    @property
    def progress(self) -> dict[str, int]:
        done = sum(1 for result in self.results if result.graded_at is not None)
        return {"done": done, "total": len(self.results)}


def eval_run_detail(*, run: EvalRun) -> EvalRunDetail:
    results = eval_run_results(run=run)
    return EvalRunDetail(run=run, results=results, summary=eval_run_summary_current(run=run, results=results))


def _case_outcomes(results: list[EvalCaseResult]) -> dict[str, tuple[str, int, int]]:
    """case id -> (kind, repeats passed, repeats graded), with the skill."""
    outcomes: dict[str, tuple[str, int, int]] = {}
    for result in results:
        if result.baseline or result.graded_at is None:
            continue
        kind, passed, n = outcomes.get(result.case_id, (result.kind, 0, 0))
        outcomes[result.case_id] = (kind, passed + bool(result.passed), n + 1)
    return outcomes


def eval_runs_compare(
    *, a: EvalRun, b: EvalRun, results: tuple[list[EvalCaseResult], list[EvalCaseResult]] | None = None
) -> dict[str, Any]:
    """Run b against run a: the task pass rate's difference (b − a) with Newcombe's interval and
    P(b better), as analytics compares versions; both runs' trigger figures; and the cases whose
    outcome (passed in most of its repeats) flipped. `results`: both runs' results, when the
    caller has read them for the page."""
    results_a, results_b = results if results is not None else (eval_run_results(run=a), eval_run_results(run=b))
    main_a = [r for r in results_a if not r.baseline]
    main_b = [r for r in results_b if not r.baseline]
    task_a, task_b = task_figures(main_a), task_figures(main_b)
    trigger_a, trigger_b = trigger_figures(main_a), trigger_figures(main_b)
    difference = newcombe_difference(task_a.passed, task_a.n, task_b.passed, task_b.n)
    outcomes_a, outcomes_b = _case_outcomes(results_a), _case_outcomes(results_b)
    flipped = []
    for case_id in [c for c in outcomes_a if c in outcomes_b]:
        kind, passed_a, n_a = outcomes_a[case_id]
        _, passed_b, n_b = outcomes_b[case_id]
        was, now = 2 * passed_a > n_a, 2 * passed_b > n_b
        if was != now:
            flipped.append(
                {
                    "id": case_id,
                    "kind": kind,
                    "a": {"passed": passed_a, "of": n_a},
                    "b": {"passed": passed_b, "of": n_b},
                    "now": "passes" if now else "fails",
                }
            )
    estimate = None if difference is None else [round(x, 4) for x in difference]
    return {
        "a": _run_brief(a),
        "b": _run_brief(b),
        "task": {
            "a": task_a.as_dict(),
            "b": task_b.as_dict(),
            "difference": {
                "estimate": None if estimate is None else estimate[0],
                "ci_low": None if estimate is None else estimate[1],
                "ci_high": None if estimate is None else estimate[2],
            },
            "probability_b_better": round(
                probability_b_better(task_a.passed, task_a.failed, task_b.passed, task_b.failed), 4
            ),
        },
        "trigger": {"a": trigger_a.as_dict(), "b": trigger_b.as_dict(), "f1_a": _round(trigger_a.f1)}
        | {"f1_b": _round(trigger_b.f1)},
        "flipped": flipped,
    }


def _run_brief(run: EvalRun) -> dict[str, Any]:
    return {
        "id": str(run.pk),
        "skill": run.skill.name,
        "version": run.version.number,
        "model": run.model,
        "status": run.status,
        "suite_revision": run.suite_revision.number,
    }


def eval_latest_per_version(*, skill: Skill) -> dict[int, EvalRun]:
    """Each version's newest succeeded run: {version number: run} (versions never run are absent).
    The database picks each version's newest, so a skill run a thousand times reads one row per
    version."""
    succeeded = EvalRun.objects.filter(skill=skill, status=EvalRunStatus.SUCCEEDED)
    newest = succeeded.filter(version=OuterRef("version")).order_by("-created_at", "-pk").values("pk")[:1]
    runs = succeeded.filter(pk=Subquery(newest)).select_related("version")
    return {run.version.number: run for run in runs}


def eval_results_in_flight(*, run: EvalRun) -> list[EvalCaseResult]:
    """Results whose turn was dispatched and that are not graded yet."""
    return list(run.results.filter(turn__isnull=False, graded_at__isnull=True).order_by("position"))


def eval_results_waiting(*, run: EvalRun, limit: int) -> list[EvalCaseResult]:
    """The next `limit` results no turn was dispatched for, in dispatch order."""
    if limit <= 0:
        return []
    return list(run.results.filter(turn__isnull=True, graded_at__isnull=True).order_by("position")[:limit])


def eval_run_for_turn(*, turn_id: Any) -> EvalRun | None:
    result = EvalCaseResult.objects.select_related("run").filter(turn_id=turn_id).first()
    return result.run if result else None
