"""Reading catalog eval runs (agents/evals/catalog_runner.py runs them): their progress and their
confusion matrix. Reads only.

For each skill, its queries (its trigger cases that should load it, x repeats) are split into
those that loaded it, those that loaded another skill (which), and those that loaded none, each
share with its 95% Wilson interval. A turn may load several skills: it then counts for each of
them, so the shares of a row may sum to more than one. A collision is a pair (a, b) where a's
queries load b at a rate whose interval excludes zero. With the Wilson score interval that is
any pair seen at all, however rarely: the interval's upper end says how large the rate may
be, and repeats narrow it. A skill without trigger cases is "no evidence", never perfect.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from registry.errors import NotFound
from registry.models import EVAL_RUN_FINISHED, CatalogEvalCaseResult, CatalogEvalRun
from registry.selectors.analytics import wilson_interval
from registry.selectors.catalog_routing import MEASURED, NO_EVIDENCE

TURNS_SHOWN = 20  # the turns a collision links to, at most


def catalog_eval_run_get(*, run_id: Any) -> CatalogEvalRun:
    run = CatalogEvalRun.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No catalog eval run {run_id}.")
    return run


def catalog_eval_runs_recent(*, limit: int = 20) -> list[CatalogEvalRun]:
    return list(CatalogEvalRun.objects.select_related("created_by")[:limit])


def catalog_eval_runs_unfinished() -> QuerySet[CatalogEvalRun]:
    return CatalogEvalRun.objects.exclude(status__in=EVAL_RUN_FINISHED)


def catalog_eval_runs_active_count(*, user: Any) -> int:
    """The user's catalog runs that are queued or running (they count toward the eval quotas)."""
    return catalog_eval_runs_unfinished().filter(created_by=user).count()


def catalog_eval_turns_queued() -> int:
    """Catalog eval turns not yet graded across every unfinished run."""
    return (
        CatalogEvalCaseResult.objects.filter(graded_at__isnull=True).exclude(run__status__in=EVAL_RUN_FINISHED).count()
    )


def catalog_eval_results_in_flight(*, run: CatalogEvalRun) -> list[CatalogEvalCaseResult]:
    return list(run.results.filter(turn__isnull=False, graded_at__isnull=True).order_by("position"))


def catalog_eval_results_waiting(*, run: CatalogEvalRun, limit: int) -> list[CatalogEvalCaseResult]:
    if limit <= 0:
        return []
    return list(run.results.filter(turn__isnull=True, graded_at__isnull=True).order_by("position")[:limit])


def catalog_eval_run_for_turn(*, turn_id: Any) -> CatalogEvalRun | None:
    result = CatalogEvalCaseResult.objects.select_related("run").filter(turn_id=turn_id).first()
    return result.run if result else None


@dataclass(frozen=True)
class CaseOutcome:
    """One graded query: whose trigger case it was, what the model loaded, and the turn."""

    skill: str
    loaded: tuple[str, ...]
    turn: str | None = None


def _share(count: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(count, n) or (None, None)
    return {
        "count": count,
        "rate": round(count / n, 4) if n else None,
        "low": None if low is None else round(low, 4),
        "high": None if high is None else round(high, 4),
    }


def _excludes_zero(count: int, n: int) -> bool:
    interval = wilson_interval(count, n)
    return interval is not None and interval[0] > 0


@dataclass
class _Row:
    """One skill's graded queries, counted."""

    queries: int = 0
    itself: int = 0
    none: int = 0
    others: Counter[str] = field(default_factory=Counter)
    turns: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def _rows(outcomes: Iterable[CaseOutcome]) -> dict[str, _Row]:
    rows: dict[str, _Row] = defaultdict(_Row)
    for outcome in outcomes:
        row = rows[outcome.skill]
        row.queries += 1
        loaded = dict.fromkeys(outcome.loaded)
        row.itself += outcome.skill in loaded
        row.none += not loaded
        for other in loaded:
            if other != outcome.skill:
                row.others[other] += 1
                if outcome.turn and len(row.turns[other]) < TURNS_SHOWN:
                    row.turns[other].append(outcome.turn)
    return rows


def _skill_entry(skill: dict[str, Any], row: _Row | None) -> dict[str, Any]:
    entry = {key: skill.get(key) for key in ("name", "version", "description", "status", "cases")}
    if row is None or skill.get("status") != MEASURED:
        return {**entry, "queries": 0, "loaded_self": None, "loaded_none": None, "loaded_other": []}
    return {
        **entry,
        "queries": row.queries,
        "loaded_self": _share(row.itself, row.queries),
        "loaded_none": _share(row.none, row.queries),
        "loaded_other": [
            {"skill": other, **_share(count, row.queries)}
            for other, count in sorted(row.others.items(), key=lambda pair: (-pair[1], pair[0]))
        ],
    }


def _order(entry: dict[str, Any]) -> tuple:
    measured = entry["status"] == MEASURED and entry["queries"]
    rate = entry["loaded_self"]["rate"] if measured else 0
    return (not measured, entry["status"] != NO_EVIDENCE, rate, entry["name"])


def catalog_eval_matrix(*, skills: list[dict[str, Any]], outcomes: Iterable[CaseOutcome]) -> dict[str, Any]:
    """The confusion matrix of the graded `outcomes` over the run's `skills` (as the run stored
    them): per skill the shares that loaded it, another, none; the collisions, most frequent
    first, each with the turns behind it; measured skills worst first, then those without
    evidence, then those not offered."""
    rows = _rows(outcomes)
    entries = sorted((_skill_entry(skill, rows.get(skill["name"])) for skill in skills), key=_order)
    descriptions = {skill["name"]: skill.get("description", "") for skill in skills}
    collisions = []
    for name, row in rows.items():
        for other, count in row.others.items():
            if _excludes_zero(count, row.queries):
                collisions.append(
                    {
                        "skill": name,
                        "with": other,
                        "queries": row.queries,
                        **_share(count, row.queries),
                        "skill_description": descriptions.get(name, ""),
                        "with_description": descriptions.get(other, ""),
                        "turns": row.turns[other],
                    }
                )
    collisions.sort(key=lambda c: (-c["rate"], -c["count"], c["skill"], c["with"]))
    queries = sum(row.queries for row in rows.values())
    return {
        "queries": queries,
        "loaded_self": _share(sum(row.itself for row in rows.values()), queries),
        "skills": entries,
        "collisions": collisions,
    }


def catalog_eval_run_result(*, run: CatalogEvalRun) -> dict[str, Any]:
    """The run's matrix: stored once it ended, else of the results graded so far; with its usage."""
    if run.is_finished and run.result is not None:
        return run.result
    graded = run.results.filter(graded_at__isnull=False).order_by("position")
    outcomes = [
        CaseOutcome(skill=skill, loaded=tuple(loaded), turn=str(turn) if turn else None)
        for skill, loaded, turn in graded.values_list("skill", "loaded", "turn_id")
    ]
    usage = run.results.aggregate(tokens=Sum("tokens"), cost=Sum("cost"))
    matrix = catalog_eval_matrix(skills=run.skills, outcomes=outcomes)
    return {**matrix, "tokens": usage["tokens"] or 0, "cost": round(usage["cost"] or 0.0, 6)}


def catalog_eval_run_progress(*, run: CatalogEvalRun) -> dict[str, int]:
    counts = run.results.aggregate(total=Count("pk"), done=Count("pk", filter=Q(graded_at__isnull=False)))
    return {"done": counts["done"] or 0, "total": counts["total"] or 0}


def _heat(share: dict[str, Any] | None) -> int:
    """0 (none) to 4 (most): how strongly the console shades a cell."""
    rate = (share or {}).get("rate") or 0
    return 0 if rate <= 0 else min(4, 1 + int(rate * 4))


def catalog_eval_grid(result: dict[str, Any]) -> dict[str, Any]:
    """The matrix as the console draws it: only the skills in some confusion (as the query's
    skill or as the one loaded instead), most confused first; each cell a's share that loaded b
    (the diagonal: loaded a itself), then the share that loaded none."""
    rows = {entry["name"]: entry for entry in result["skills"] if entry["loaded_other"]}
    confused: Counter = Counter()
    for name, entry in rows.items():
        for other in entry["loaded_other"]:
            confused[name] += other["count"]
            confused[other["skill"]] += other["count"]
    names = sorted(confused, key=lambda name: (-confused[name], name))
    grid = []
    for name in [n for n in names if n in rows]:
        entry = rows[name]
        shares = {other["skill"]: other for other in entry["loaded_other"]}
        if entry["loaded_self"]:
            shares[name] = entry["loaded_self"]
        grid.append(
            {
                "skill": name,
                "queries": entry["queries"],
                "cells": [
                    {"with": other, "share": shares.get(other), "self": other == name, "heat": _heat(shares.get(other))}
                    for other in names
                ],
                "none": entry["loaded_none"],
            }
        )
    return {"columns": names, "rows": grid}
