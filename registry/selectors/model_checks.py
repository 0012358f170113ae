"""Reading model checks: a check's report (per skill, the candidate's trigger F1 and task pass rate
against the current model's, with intervals and the probability that the candidate is worse),
the regression threshold a label asks for, the baseline a drift watch compares with, and the
drift banner. Reads only: registry/services/model_checks.py stores the report when a check ends.

Task pass rates compare as eval compare and the label policies' `not_worse` do: Newcombe's
interval for the difference, and P(worse) from the two Beta posteriors, exactly. Trigger F1 is no
proportion, so it is compared through its posterior instead (Goutte & Gaussier, 2005): each run's
confusion counts give a Dirichlet posterior over (tp, fp, fn, tn) rates, from which F1 is drawn,
with a fixed seed so a report reads the same every time.
"""

from __future__ import annotations

import random
from typing import Any

from django.db.models import QuerySet

from registry.errors import NotFound
from registry.models import (
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    ModelCheck,
    ModelCheckKind,
    ModelCheckRun,
    ModelCheckSide,
)
from registry.selectors.analytics import newcombe_difference, probability_b_better
from registry.selectors.evals import TaskFigures, TriggerFigures, eval_run_results, task_figures, trigger_figures
from registry.selectors.label_policies import label_policy_get

# Worse "beyond chance": P(candidate worse) at least this, the figure the label policies' `not_worse`
# gate uses (NOT_WORSE_P in registry/services/label_policies.py; selectors import no services).
DEFAULT_P_WORSE = 0.95
F1_DRAWS = 4000
F1_SEED = 33
MEASURED, NO_EVIDENCE = "measured", "no evidence"


def model_check_get(*, check_id: Any) -> ModelCheck:
    check = ModelCheck.objects.select_related("created_by").filter(pk=check_id).first()
    if check is None:
        raise NotFound(f"No model check {check_id}.")
    return check


def model_checks_recent(*, limit: int = 50) -> list[ModelCheck]:
    return list(ModelCheck.objects.select_related("created_by")[:limit])


def model_checks_unfinished() -> QuerySet[ModelCheck]:
    return ModelCheck.objects.exclude(status__in=("succeeded", "failed"))


def model_check_runs(*, check: ModelCheck) -> list[ModelCheckRun]:
    return list(check.runs.select_related("run", "run__skill", "run__version"))


def model_check_progress(*, check: ModelCheck) -> dict[str, int]:
    """Runs ended of the check's runs."""
    statuses = list(check.runs.values_list("run__status", flat=True))
    ended = sum(1 for status in statuses if status in ("succeeded", "failed", "cancelled"))
    return {"runs_done": ended, "runs": len(statuses)}


def model_check_threshold(*, label: str) -> dict[str, Any]:
    """When a skill counts as regressed at `label`: P(worse) at least `p_worse`, from the label's
    policy when it asks `not_worse`, else the default (the same figure)."""
    policy = label_policy_get(label=label)
    if policy is not None and (policy.require_eval or {}).get("not_worse"):
        return {"p_worse": DEFAULT_P_WORSE, "source": "policy", "detail": f"label policy '{label}' (not_worse)"}
    detail = f"default: label '{label}' has no policy asking not_worse"
    return {"p_worse": DEFAULT_P_WORSE, "source": "default", "detail": detail}


def f1_comparison(current: TriggerFigures, candidate: TriggerFigures) -> dict[str, Any] | None:
    """Candidate F1 − current F1 with a 95% credible interval and P(candidate worse), from each
    side's Dirichlet(1 + counts) posterior; None when a side has no F1 (no positives at all)."""
    if current.f1 is None or candidate.f1 is None:
        return None
    draws = random.Random(F1_SEED)
    deltas, worse = [], 0
    for _ in range(F1_DRAWS):
        delta = _f1_draw(draws, candidate) - _f1_draw(draws, current)
        deltas.append(delta)
        worse += delta < 0
    deltas.sort()
    low, high = deltas[int(0.025 * F1_DRAWS)], deltas[int(0.975 * F1_DRAWS) - 1]
    return {
        "current": _round(current.f1),
        "candidate": _round(candidate.f1),
        "delta": _round(candidate.f1 - current.f1),
        "interval": [_round(low), _round(high)],
        "probability_worse": _round(worse / F1_DRAWS),
    }


def _f1_draw(draws: random.Random, figures: TriggerFigures) -> float:
    # Gamma draws normalised are a Dirichlet draw; F1's normaliser cancels, so it is not divided.
    tp, fp, fn = (draws.gammavariate(1 + count, 1.0) for count in (figures.tp, figures.fp, figures.fn))
    return 2 * tp / (2 * tp + fp + fn)


def task_comparison(current: TaskFigures, candidate: TaskFigures) -> dict[str, Any] | None:
    """Candidate pass rate − current with Newcombe's 95% interval and P(candidate worse)."""
    difference = newcombe_difference(current.passed, current.n, candidate.passed, candidate.n)
    if difference is None or current.rate is None or candidate.rate is None:
        return None
    delta, low, high = difference
    worse = probability_b_better(candidate.passed, candidate.failed, current.passed, current.failed)
    return {
        "current": _round(current.rate),
        "candidate": _round(candidate.rate),
        "delta": _round(delta),
        "interval": [_round(low), _round(high)],
        "probability_worse": _round(worse),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def skill_comparison(
    *, current: list[EvalCaseResult], candidate: list[EvalCaseResult], p_worse: float
) -> dict[str, Any]:
    """One skill's two runs compared (baselines left out): each figure, the worse of the two
    probabilities, and whether that reaches `p_worse`."""
    current = [r for r in current if not r.baseline]
    candidate = [r for r in candidate if not r.baseline]
    trigger = f1_comparison(trigger_figures(current), trigger_figures(candidate))
    task = task_comparison(task_figures(current), task_figures(candidate))
    measured = [figure["probability_worse"] for figure in (trigger, task) if figure is not None]
    worst = max(measured) if measured else None
    worse_in = [name for name, figure in (("trigger_f1", trigger), ("task_rate", task)) if figure is not None]
    worse_in = [name for name, figure in zip(worse_in, measured, strict=True) if figure >= p_worse]
    return {
        "evidence": MEASURED if measured else NO_EVIDENCE,
        "regressed": worst is not None and worst >= p_worse,
        "worse_in": worse_in,
        "trigger_f1": trigger,
        "task_rate": task,
        "probability_worse": worst,
    }


def model_check_report(*, check: ModelCheck, baselines: dict[str, EvalRun] | None = None) -> dict[str, Any]:
    """The check's figures per skill, regressed first. A check compares its two sides' runs; a
    watch compares its run of each skill with `baselines` (skill name -> its last accepted run)."""
    threshold = model_check_threshold(label=check.label)
    by_skill: dict[str, dict[str, EvalRun]] = {}
    for link in model_check_runs(check=check):
        by_skill.setdefault(link.run.skill.name, {})[link.side] = link.run
    if check.kind == ModelCheckKind.WATCH:
        for name, runs in by_skill.items():
            runs[ModelCheckSide.CANDIDATE] = runs.pop(ModelCheckSide.CURRENT)
            if baselines and name in baselines:
                runs[ModelCheckSide.CURRENT] = baselines[name]
    skills = [_skill_row(entry, by_skill.get(entry["name"], {}), threshold["p_worse"]) for entry in check.skills]
    skills.sort(key=lambda s: (not s["regressed"], -(s["probability_worse"] or 0), s["name"]))
    return {
        "threshold": threshold,
        "skills": skills,
        "regressed": sum(1 for s in skills if s["regressed"]),
        "no_evidence": sum(1 for s in skills if s["evidence"] == NO_EVIDENCE),
    }


def _skill_row(entry: dict[str, Any], runs: dict[str, EvalRun], p_worse: float) -> dict[str, Any]:
    row: dict[str, Any] = {"name": entry["name"], "version": entry["version"], "cases": entry["cases"]}
    current, candidate = runs.get(ModelCheckSide.CURRENT), runs.get(ModelCheckSide.CANDIDATE)
    row["runs"] = {
        "current": str(current.pk) if current else None,
        "candidate": str(candidate.pk) if candidate else None,
    }
    ended = [run for run in (current, candidate) if run is not None and run.status != EvalRunStatus.SUCCEEDED]
    if current is None or candidate is None or ended:
        why = "no eval cases" if not entry["cases"] else "no accepted run to compare with" if candidate else ""
        why = why or "; ".join(f"its {run.model} run {run.status}" for run in ended)
        empty = {"evidence": NO_EVIDENCE, "regressed": False, "worse_in": [], "trigger_f1": None, "task_rate": None}
        return row | empty | {"probability_worse": None, "reason": why}
    compared = skill_comparison(
        current=eval_run_results(run=current), candidate=eval_run_results(run=candidate), p_worse=p_worse
    )
    reason = "no graded trigger or task figures on both sides" if compared["evidence"] == NO_EVIDENCE else ""
    return row | compared | {"reason": reason}


def model_check_baseline(*, run: EvalRun) -> EvalRun | None:
    """The run a watch's `run` is compared with: the newest succeeded run before it of the same
    version with the same model on the same suite revision that is accepted (any ordinary run,
    or a watch run that did not drift or whose drift was dismissed)."""
    unaccepted = ModelCheckRun.objects.filter(accepted=False).values("run_id")
    return (
        EvalRun.objects.filter(
            version=run.version_id,
            model=run.model,
            suite_revision=run.suite_revision_id,
            status=EvalRunStatus.SUCCEEDED,
            created_at__lt=run.created_at,
        )
        .exclude(pk__in=unaccepted)
        .order_by("-created_at")
        .first()
    )


def catalog_drift_current() -> ModelCheck | None:
    """The newest finished watch, when it found drift and nobody dismissed it: the banner's. A
    clean watch after it hides the banner, as it is the newest."""
    newest = ModelCheck.objects.filter(kind=ModelCheckKind.WATCH, finished_at__isnull=False).first()
    if newest is None or not newest.regressed or newest.dismissed_at is not None:
        return None
    return newest
