"""Skills served at a label with a suite, and eval runs ended as a runner leaves them (through the
registry's grading services), for model-check tests that run no turns."""

from __future__ import annotations

from registry.models import EvalRun, Skill
from registry.selectors.evals import eval_run_results
from registry.services.evals import (
    eval_result_dispatch,
    eval_result_grade,
    eval_run_create,
    eval_run_finish,
    eval_suite_replace,
)
from registry.services.labels import label_move
from tests.factories import publish

CASES = [
    {"id": "t-yes", "kind": "trigger", "query": "review this pull request", "should_trigger": True},
    {"id": "t-no", "kind": "trigger", "query": "write me a haiku", "should_trigger": False},
    {"id": "k-1", "kind": "task", "prompt": "Review app.py", "expect": [{"answer_matches": "OK"}]},
    {"id": "k-2", "kind": "task", "prompt": "Review db.py", "expect": [{"answer_matches": "OK"}]},
]


def served(name: str, *, cases: list[dict] | None = None, label: str = "production") -> Skill:
    """`name` v1 at `label`, with `cases` as its suite (none: no suite)."""
    skill = publish(name, description=f"{name} does one thing well.").version.skill
    label_move(skill=skill, label=label, version_number=1)
    if cases:
        eval_suite_replace(skill=skill, document={"cases": cases})
    return skill


def grade_all(run: EvalRun, *, tasks_pass: bool) -> EvalRun:
    """End `run` as its runner would: trigger cases right (`t-yes` triggers), task cases passing or not."""
    for result in eval_run_results(run=run):
        eval_result_dispatch(result_id=result.pk, turn_id=None)
        triggered = result.case_id == "t-yes" if result.kind == "trigger" else None
        passed = True if result.kind == "trigger" else tasks_pass
        eval_result_grade(result_id=result.pk, passed=passed, checks=[], triggered=triggered)
    eval_run_finish(run_id=run.pk)
    return run


def accepted_run(skill: Skill, *, model: str) -> EvalRun:
    """A finished run of v1 on which every case passed: what a drift watch compares with."""
    return grade_all(eval_run_create(skill=skill, version=skill.versions.get(number=1), model=model), tasks_pass=True)
