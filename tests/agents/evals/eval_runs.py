"""Eval runs written through the registry's services, as a runner leaves them: for pages to be
tested without running turns (the runner's own tests run them on real workers)."""

from __future__ import annotations

from agents.models import AgentTurn, TurnOrigin, TurnStatus
from registry.models import EvalRun, Skill
from registry.selectors.evals import eval_run_results
from registry.services.evals import eval_result_dispatch, eval_result_grade, eval_run_create, eval_run_finish

SUITE = {
    "cases": [
        {"id": "t-pr", "kind": "trigger", "query": "review this pull request", "should_trigger": True},
        {"id": "t-poem", "kind": "trigger", "query": "write me a haiku", "should_trigger": False},
        {"id": "k-sql", "kind": "task", "prompt": "Review app.py", "expect": [{"skill_loaded": "code-review"}]},
    ]
}


def graded_run(
    skill: Skill, *, outcomes: dict[str, bool], version: int = 1, model: str = "scripted", repeat: int = 1
) -> EvalRun:
    """A finished run of the skill's suite (SUITE's cases) on `version` whose cases ended as
    `outcomes` says (case id -> passed, in every repeat), each with a turn of its own."""
    run = eval_run_create(skill=skill, version=skill.versions.get(number=version), model=model, repeat=repeat)
    should_trigger = {case["id"]: case.get("should_trigger") for case in SUITE["cases"]}
    for result in eval_run_results(run=run):
        turn = AgentTurn.objects.create(
            message=result.case_id, model=model, origin=TurnOrigin.EVAL, status=TurnStatus.SUCCEEDED
        )
        eval_result_dispatch(result_id=result.pk, turn_id=turn.pk)
        passed, should = outcomes[result.case_id], should_trigger[result.case_id]
        eval_result_grade(
            result_id=result.pk,
            passed=passed,
            triggered=None if should is None else passed == should,
            checks=[{"check": "skill_loaded", "passed": passed, "detail": "code-review v1 via read_skill"}],
        )
    eval_run_finish(run_id=run.pk)
    run.refresh_from_db()
    return run
