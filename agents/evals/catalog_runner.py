"""Running catalog evals: every served skill's trigger cases as ordinary agent turns (origin
`eval`) resolved at the run's label with nothing pinned or hidden, so the model picks from the
whole catalog as an agent would; each ended turn is graded by which skills the model loaded.

Moves forward as skill runs do (agents/evals/runner.py): `catalog_eval_run_advance` grades what
ended, then, holding the run's row lock, dispatches up to EVAL_CONCURRENCY turns in flight and
ends the run once every result is graded. It is called after the run is created, after each of
its turns ends (agents/tasks.py) and every reaper round, and every step is a conditional update.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from agents.evals.runner import NO_SCRIPT, eval_run_advance_send, eval_turns_cancel, eval_turns_of
from agents.model_strings import SCRIPTED
from agents.models import FINISHED_STATUSES, AgentTurn, TraceEvent, TurnOrigin, TurnStatus
from agents.turns.services import agent_model_check, agent_turn_create, agent_turn_label_check
from registry.errors import ApplicationError
from registry.models import CatalogEvalCaseResult, CatalogEvalRun, EvalRunStatus
from registry.selectors.catalog_evals import (
    catalog_eval_results_in_flight,
    catalog_eval_results_waiting,
    catalog_eval_run_for_turn,
    catalog_eval_runs_unfinished,
)
from registry.services import catalog_evals as services
from registry.services.audit import SYSTEM, Actor

logger = logging.getLogger(__name__)

ADVANCE_TASK = "agents.tasks.catalog_eval_run_advance_task"


def catalog_eval_run_queue(
    *, label: str | None = None, model: str | None = None, repeat: int = 1, actor: Actor = SYSTEM
) -> CatalogEvalRun:
    """Queue a catalog run at `label` (None: resolve's default) with `model` (one of
    AGENT_MODELS; none: AGENT_MODEL); its turns start after commit."""
    chosen = agent_model_check(model=model)
    label = agent_turn_label_check(label=label)
    with transaction.atomic():
        run = services.catalog_eval_run_create(label=label, model=chosen, repeat=repeat, actor=actor)
        transaction.on_commit(lambda: eval_run_advance_send(run_id=str(run.pk), task=ADVANCE_TASK))
    return run


def catalog_eval_run_cancel(*, run: CatalogEvalRun, actor: Actor = SYSTEM) -> CatalogEvalRun:
    """Cancel the run (a Conflict once it ended) and every turn of it that has not ended."""
    run = services.catalog_eval_run_cancel(run=run, actor=actor)
    eval_turns_cancel(results=catalog_eval_results_in_flight(run=run))
    return run


def catalog_eval_runs_advance_later() -> None:
    """The reaper's round: a message per unfinished run."""
    for run_id in catalog_eval_runs_unfinished().values_list("pk", flat=True):
        eval_run_advance_send(run_id=str(run_id), task=ADVANCE_TASK)


def catalog_eval_run_advance_for_turn(*, turn_id: Any) -> None:
    """After an eval turn ended: move its catalog run on, if it belongs to one."""
    run = catalog_eval_run_for_turn(turn_id=turn_id)
    if run is not None and not run.is_finished:
        catalog_eval_run_advance(run_id=run.pk)


def catalog_eval_run_advance(*, run_id: Any) -> bool:
    """Grade what ended, dispatch what fits, end the run when all is graded. True while it goes on."""
    run = CatalogEvalRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return False
    dispatched = catalog_eval_results_in_flight(run=run)
    turns = eval_turns_of(dispatched)
    for result in dispatched:
        turn = turns.get(result.turn_id)
        if turn is not None and turn.status in FINISHED_STATUSES:
            services.catalog_eval_result_grade(result_id=result.pk, **catalog_eval_case_grade(turn=turn))
    with transaction.atomic():
        run = services.catalog_eval_run_lock(run_id=run_id)
        if run is None or run.is_finished:
            return False
        services.catalog_eval_run_start(run_id=run.pk)
        in_flight = len(catalog_eval_results_in_flight(run=run))
        waiting = catalog_eval_results_waiting(run=run, limit=settings.EVAL_CONCURRENCY - in_flight)
        try:
            for result in waiting:
                turn = agent_turn_create(user=run.created_by or AnonymousUser(), **_turn_for(run, result))
                services.catalog_eval_result_dispatch(result_id=result.pk, turn_id=turn.pk)
        except ApplicationError as error:
            # The model was withdrawn meanwhile: no later turn would run either.
            services.catalog_eval_run_finish(
                run_id=run.pk, status=EvalRunStatus.FAILED, error=f"Could not start a turn: {error.detail}"
            )
            return False
        if in_flight == 0 and not waiting:
            services.catalog_eval_run_finish(run_id=run.pk)
            return False
    return True


def _turn_for(run: CatalogEvalRun, result: CatalogEvalCaseResult) -> dict[str, Any]:
    """agent_turn_create's arguments for one case: its query, never forced, the catalog at the
    run's label with no skill pinned or hidden."""
    turn: dict[str, Any] = {
        "message": result.query,
        "model": run.model,
        "origin": TurnOrigin.EVAL,
        "label": run.label or None,
    }
    if run.model == SCRIPTED:
        turn["script"] = result.script or NO_SCRIPT
    return turn


def catalog_eval_case_grade(*, turn: AgentTurn) -> dict[str, Any]:
    """`catalog_eval_result_grade`'s figures of an ended turn: the skills the model loaded itself
    (a forced load is not the model's pick), in order, from the stored trace."""
    activations = TraceEvent.objects.filter(turn=turn, type="skill_activated").values_list("data", flat=True)
    loaded = [str(data.get("skill")) for data in activations if data.get("trigger") != "forced" and data.get("skill")]
    error = "" if turn.status == TurnStatus.SUCCEEDED else f"the turn {turn.status}: {turn.error[:300]}"
    return {
        "loaded": list(dict.fromkeys(loaded)),
        "error": error,
        "tokens": turn.prompt_tokens + turn.completion_tokens,
        "cost": turn.cost,
    }
