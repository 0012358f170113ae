"""Running eval suites: each case x repeat of a run is an ordinary agent turn (origin `eval`),
pinned to the run's version of the skill (or, for a baseline, without it), graded against its
stored trace and answer once it ends.

A run moves forward by `eval_run_advance`: grade the results whose turns ended, then, holding
the run's row lock, dispatch turns up to EVAL_CONCURRENCY in flight and end the run once every
result is graded. It is called after the run is created, after each of its turns ends (by the
worker that ran it) and every reaper round (agents/tasks.py), so a run goes on after a worker
dies: its turns are resumed by the turn reaper and graded when they end. Every step is a
conditional update, so calling it twice, or on two workers at once, counts nothing twice.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import kombu.exceptions
from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from agents.model_strings import SCRIPTED
from agents.models import FINISHED_STATUSES, AgentTurn, TraceEvent, TurnOrigin, TurnStatus
from agents.runtime.llm import LLMError, TransientLLMError, complete
from agents.turns.services import (
    agent_model_check,
    agent_turn_cancel,
    agent_turn_create,
    agent_turn_label_check,
    agent_turn_pins_check,
    llm_options_for,
)
from registry.errors import ApplicationError, Conflict
from registry.models import EvalCaseResult, EvalRun, EvalRunStatus
from registry.selectors.evals import (
    eval_results_in_flight,
    eval_results_waiting,
    eval_run_for_turn,
    eval_runs_unfinished,
)
from registry.selectors.skills import skill_get, skill_version_for
from registry.services import evals as eval_services
from registry.services.audit import SYSTEM, Actor
from registry.skillformat.evals import answer_pattern

logger = logging.getLogger(__name__)

ADVANCE_TASK = "agents.tasks.eval_run_advance_task"
# A scripted turn of a case that brings no script: a plain answer that loads nothing.
NO_SCRIPT = [{"content": "(this case has no script for the scripted model)"}]
JUDGE_PROMPT = (
    "You grade an AI assistant's answer against one criterion. Reply with JSON only: "
    '{"passed": true or false, "reason": "one sentence"}.'
)


def eval_run_queue(
    *,
    skill_name: str,
    version: int | None = None,
    label: str | None = None,
    model: str | None = None,
    repeat: int = 1,
    baseline: bool = False,
    actor: Actor = SYSTEM,
) -> EvalRun:
    """Queue a run of the skill's suite against `version` (or the version `label` points at;
    neither: production, else latest) with `model`; its turns start after commit."""
    if version is not None and label:
        raise ApplicationError("Give a version or a label, not both.", fields={"label": "or version"})
    skill = skill_get(name=skill_name)
    chosen_model = agent_model_check(model=model)
    label = agent_turn_label_check(label=label)
    chosen = skill_version_for(skill=skill, label=label, number=version)
    # The same check a turn's pin gets: the version must be one a turn can run.
    agent_turn_pins_check(skill_versions={skill.name: chosen.number}, label=None)
    with transaction.atomic():
        run = eval_services.eval_run_create(
            skill=skill,
            version=chosen,
            label=label or "",
            model=chosen_model,
            repeat=repeat,
            baseline=baseline,
            actor=actor,
        )
        transaction.on_commit(lambda: eval_run_advance_send(run_id=str(run.pk)))
    return run


def eval_run_advance_send(*, run_id: str, task: str = ADVANCE_TASK) -> None:
    """Ask a worker to advance the run (`task`: a skill run's, or a catalog run's, advance)."""
    # Named, not imported: agents/tasks.py imports this module. A lost message costs a reaper round.
    try:
        current_app.send_task(task, args=[run_id])
    except kombu.exceptions.OperationalError:
        logger.warning("could not queue eval run %s; the reaper will advance it", run_id, exc_info=True)


def eval_run_cancel(*, run: EvalRun, actor: Actor = SYSTEM) -> EvalRun:
    """Cancel the run (a Conflict once it ended) and every turn of it that has not ended."""
    run = eval_services.eval_run_cancel(run=run, actor=actor)
    eval_turns_cancel(results=eval_results_in_flight(run=run))
    return run


def eval_turns_cancel(*, results: Sequence[Any]) -> None:
    """Cancel the turns of `results` (a run's in flight) that have not ended."""
    for turn in eval_turns_of(results).values():
        if turn.is_finished:
            continue
        try:
            agent_turn_cancel(turn=turn)
        except Conflict:
            pass  # it ended meanwhile


def eval_turns_of(results: Sequence[Any]) -> dict[Any, AgentTurn]:
    """The turns of `results` (a skill or catalog run's), by id."""
    return AgentTurn.objects.in_bulk([result.turn_id for result in results if result.turn_id is not None])


def eval_runs_advance_later() -> None:
    """The reaper's round: a message per unfinished run, so grading (a judge may be a model call)
    happens on a worker's pool, never in the reaper's own thread."""
    for run_id in eval_runs_unfinished().values_list("pk", flat=True):
        eval_run_advance_send(run_id=str(run_id))


def eval_run_advance_for_turn(*, turn_id: Any) -> None:
    """After an eval turn ended: move its run on (grade it, dispatch the next)."""
    run = eval_run_for_turn(turn_id=turn_id)
    if run is not None and not run.is_finished:
        eval_run_advance(run_id=run.pk)


def eval_run_advance(*, run_id: Any) -> bool:
    """Grade what ended, dispatch what fits, end the run when all is graded. True while it goes on."""
    run = EvalRun.objects.select_related("skill", "version", "suite_revision").filter(pk=run_id).first()
    if run is None or run.is_finished:
        return False
    cases = {case["id"]: case for case in run.suite_revision.cases}
    dispatched = eval_results_in_flight(run=run)
    turns = eval_turns_of(dispatched)
    for result in dispatched:
        turn = turns.get(result.turn_id)
        if turn is not None and turn.status in FINISHED_STATUSES:
            try:
                _grade_once(run=run, case=cases[result.case_id], result=result, turn=turn)
            except TransientLLMError:
                logger.warning("the judge failed for a moment; grading %s again later", result, exc_info=True)
    with transaction.atomic():
        run = eval_services.eval_run_lock(run_id=run_id)
        if run is None or run.is_finished:
            return False
        if run.status == EvalRunStatus.QUEUED:
            eval_services.eval_run_start(run_id=run.pk)
        in_flight = len(eval_results_in_flight(run=run))
        waiting = eval_results_waiting(run=run, limit=settings.EVAL_CONCURRENCY - in_flight)
        try:
            for result in waiting:
                user = run.created_by or AnonymousUser()
                turn = agent_turn_create(user=user, **_turn_for(run, cases[result.case_id], result))
                eval_services.eval_result_dispatch(result_id=result.pk, turn_id=turn.pk)
        except ApplicationError as error:
            # The version was disabled or the model withdrawn meanwhile: no later turn would run.
            eval_services.eval_run_finish(
                run_id=run.pk, status=EvalRunStatus.FAILED, error=f"Could not start a turn: {error.detail}"
            )
            return False
        if in_flight == 0 and not waiting:  # nothing in flight, nothing left to send: all graded
            eval_services.eval_run_finish(run_id=run.pk)
            return False
    return True


def _grade_once(*, run: EvalRun, case: dict[str, Any], result: EvalCaseResult, turn: AgentTurn) -> None:
    """Grade an ended result unless another worker graded it or is grading it now."""
    with transaction.atomic():
        if not eval_services.eval_result_lock_ungraded(result_id=result.pk):
            return
        grade = eval_case_grade(run=run, case=case, result=result, turn=turn)
        eval_services.eval_result_grade(
            result_id=result.pk,
            passed=grade.passed,
            triggered=grade.triggered,
            checks=grade.checks,
            error=grade.error,
            tokens=turn.prompt_tokens + turn.completion_tokens,
            cost=turn.cost,
        )


def _turn_for(run: EvalRun, case: dict[str, Any], result: EvalCaseResult) -> dict[str, Any]:
    """agent_turn_create's arguments for one case of the run: never forced (a trigger case asks
    whether the skill is picked; a task case whether it is followed), the skill at the run's
    version, or hidden for the baseline."""
    name = run.skill.name
    turn: dict[str, Any] = {
        "message": case["query"] if case["kind"] == "trigger" else case["prompt"],
        "model": run.model,
        "origin": TurnOrigin.EVAL,
    }
    if result.baseline:
        turn["hidden_skills"] = [name]
    else:
        turn["skill_versions"] = {name: run.version.number}
    if run.model == SCRIPTED:
        turn["script"] = case.get("script") or NO_SCRIPT
    return turn


@dataclass
class Grade:
    passed: bool
    checks: list[dict[str, Any]] = field(default_factory=list)
    triggered: bool | None = None
    error: str = ""


def eval_case_grade(*, run: EvalRun, case: dict[str, Any], result: EvalCaseResult, turn: AgentTurn) -> Grade:
    """Grade one ended turn against its case, from the stored trace and answer."""
    events = list(
        TraceEvent.objects.filter(turn=turn, type__in=("skill_activated", "tool_call")).values_list("type", "data")
    )
    activations = [data for kind, data in events if kind == "skill_activated"]
    name = run.skill.name
    if case["kind"] == "trigger":
        loads = [a.get("trigger") for a in activations if a.get("skill") == name and a.get("trigger") != "forced"]
        triggered = bool(loads)
        passed = triggered == case["should_trigger"]
        detail = f"activated by {loads[0]}" if loads else f"not activated (turn {turn.status})"
        want = "should trigger" if case["should_trigger"] else "should not trigger"
        return Grade(
            passed=passed,
            triggered=triggered,
            checks=[{"check": "triggered", "passed": passed, "detail": f"{detail}; {want}"}],
        )
    checks: list[dict[str, Any]] = []
    errors: list[str] = []
    if turn.status != TurnStatus.SUCCEEDED:
        checks.append({"check": "turn", "passed": False, "detail": f"the turn {turn.status}: {turn.error[:300]}"})
    tools = [data for kind, data in events if kind == "tool_call"]
    for check in case["expect"]:
        ((kind, value),) = check.items()
        passed, detail = _check(kind, value, turn=turn, activations=activations, tools=tools, case=case)
        if kind == "judge" and passed is None:
            errors.append(detail)
            passed = False
        checks.append({"check": kind, "passed": passed, "detail": detail})
    return Grade(passed=all(c["passed"] for c in checks) and not errors, checks=checks, error="; ".join(errors))


def _check(
    kind: str,
    value: Any,
    *,
    turn: AgentTurn,
    activations: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    case: dict[str, Any],
) -> tuple[bool | None, str]:
    if kind == "skill_loaded":
        loaded = sorted({str(a.get("skill")) for a in activations})
        found = value in loaded
        return found, f"{value} loaded" if found else f"{value} not loaded (loaded: {', '.join(loaded) or 'none'})"
    if kind == "tool_called":
        wanted = value if isinstance(value, dict) else {"name": value}
        arguments = wanted.get("arguments") or {}
        calls = [t for t in tools if t.get("tool") == wanted["name"]]
        matching = [t for t in calls if all((t.get("arguments") or {}).get(k) == v for k, v in arguments.items())]
        called = sorted({str(t.get("tool")) for t in tools})
        if matching:
            return True, f"{wanted['name']} called {len(matching)} time(s)"
        if calls:
            return False, f"{wanted['name']} called, but never with {json.dumps(arguments)[:200]}"
        return False, f"{wanted['name']} not called (called: {', '.join(called) or 'none'})"
    if kind in ("answer_matches", "answer_not_matches"):
        found = answer_pattern(value).search(turn.answer) is not None
        detail = f"the answer {'matches' if found else 'does not match'} /{value}/"
        return found == (kind == "answer_matches"), detail
    if kind == "max_steps":
        return turn.steps <= value, f"{turn.steps} step(s), at most {value}"
    return _judge(criterion=value, turn=turn, case=case)


def _judge(*, criterion: str, turn: AgentTurn, case: dict[str, Any]) -> tuple[bool | None, str]:
    """(passed, reason) from EVAL_JUDGE_MODEL; (None, why) when it cannot be graded at all."""
    model = settings.EVAL_JUDGE_MODEL
    if not model:
        return None, "EVAL_JUDGE_MODEL is not set: this judge check cannot be graded (it is not a pass)"
    script = case.get("judge_script") if model == SCRIPTED else None
    if model == SCRIPTED and not script:
        return None, "the judge is the scripted model, and this case has no judge_script for it"
    messages = [
        {"role": "system", "content": JUDGE_PROMPT},
        {
            "role": "user",
            "content": f"Task:\n{turn.message[:8000]}\n\nAnswer:\n{turn.answer[:16000]}\n\nCriterion:\n{criterion}",
        },
    ]
    try:
        reply = complete(model, messages, [], **llm_options_for(model=model, script=script))
    except TransientLLMError:
        raise  # graded again at the run's next advance
    except LLMError as error:
        return None, f"the judge model failed: {error}"[:500]
    return _verdict(reply.content or "")


def _verdict(text: str) -> tuple[bool | None, str]:
    """The judge's reply read as {"passed", "reason"} JSON, else as a leading PASS or FAIL."""
    found = re.search(r"\{.*\}", text, re.DOTALL)
    if found:
        try:
            verdict = json.loads(found.group(0))
        except json.JSONDecodeError:
            verdict = None
        if isinstance(verdict, dict) and isinstance(verdict.get("passed"), bool):
            return verdict["passed"], str(verdict.get("reason", ""))[:500] or "judged"
    word = text.strip().split(maxsplit=1)
    if word and word[0].strip(":.").upper() in ("PASS", "FAIL"):
        return word[0].strip(":.").upper() == "PASS", text.strip()[:500]
    return None, f"the judge's reply could not be read as a verdict: {text[:200]!r}"
