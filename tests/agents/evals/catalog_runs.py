"""Catalog eval runs written through the registry's services, as the runner leaves them: for pages
to be tested without running turns (tests/agents/evals/test_catalog_evals_integration.py runs
them on a real worker)."""

from __future__ import annotations

from collections.abc import Callable

from agents.models import AgentTurn, TurnOrigin, TurnStatus
from registry.models import CatalogEvalRun
from registry.services.audit import Actor
from registry.services.catalog_evals import (
    catalog_eval_result_dispatch,
    catalog_eval_result_grade,
    catalog_eval_run_create,
    catalog_eval_run_finish,
)


def graded_catalog_run(
    *, loads: Callable[[str, str], list[str]], model: str = "offline", repeat: int = 1, user=None
) -> CatalogEvalRun:
    """A finished run of the catalog served now, where the query of `case` of `skill` loaded
    `loads(skill, case)`; each case with a turn of its own, `user`'s as the runner makes them."""
    run = catalog_eval_run_create(label=None, model=model, repeat=repeat, actor=Actor(user=user, via="test"))
    for result in run.results.order_by("position"):
        turn = AgentTurn.objects.create(
            user=user, message=result.query, model=model, origin=TurnOrigin.EVAL, status=TurnStatus.SUCCEEDED
        )
        catalog_eval_result_dispatch(result_id=result.pk, turn_id=turn.pk)
        catalog_eval_result_grade(result_id=result.pk, loaded=loads(result.skill, result.case_id), tokens=120)
    catalog_eval_run_finish(run_id=run.pk)
    run.refresh_from_db()
    return run


def digest_takes_summaries(skill: str, case: str) -> list[str]:
    """invoice-summary's second query loads invoice-digest; every other query its own skill."""
    return ["invoice-digest"] if (skill, case) == ("invoice-summary", "t-1") else [skill]
