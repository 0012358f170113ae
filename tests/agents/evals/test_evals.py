"""Evals without a worker: grading a stored turn, the API's refusals, the suite formats."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from agents.evals.cases import case_from_turn
from agents.evals.runner import eval_case_grade, eval_run_queue
from agents.models import AgentTurn, TraceEvent, TurnStatus
from registry.errors import ApplicationError, Conflict
from registry.models import AuditLog, EvalCaseResult, EvalRun, SkillFile, SkillVersion
from registry.selectors.analytics import newcombe_difference, probability_b_better
from registry.selectors.evals import eval_latest_per_version, eval_runs_compare, eval_suite_cases, trigger_figures
from registry.selectors.skills import skill_get
from registry.services.evals import eval_suite_case_delete, eval_suite_case_save, eval_suite_replace
from registry.skillformat.evals import InvalidSuite, suite_cases_read
from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db

JUDGED = {"id": "k", "kind": "task", "prompt": "Review app.py", "expect": [{"judge": "It names a fix."}]}


def queued_run(**kwargs):
    published = publish("pr-review", description="Review a pull request.")
    eval_suite_replace(skill=published.version.skill, document={"cases": [JUDGED]})
    return eval_run_queue(skill_name="pr-review", model="scripted", **kwargs)


def test_a_judge_case_without_a_judge_model_is_an_error_not_a_pass(settings):
    settings.EVAL_JUDGE_MODEL = ""
    run = queued_run()
    result = EvalCaseResult.objects.get(run=run)
    turn = AgentTurn.objects.create(message="Review app.py", model="scripted", status=TurnStatus.SUCCEEDED, answer="ok")

    grade = eval_case_grade(run=run, case=JUDGED, result=result, turn=turn)

    assert grade.passed is False
    assert grade.checks == [
        {
            "check": "judge",
            "passed": False,
            "detail": "EVAL_JUDGE_MODEL is not set: this judge check cannot be graded (it is not a pass)",
        }
    ]
    assert "EVAL_JUDGE_MODEL is not set" in grade.error


def test_a_run_is_queued_against_the_production_version_and_audited():
    run = queued_run()
    assert (run.status, run.version.number, run.repeat, run.model) == ("queued", 1, 1, "scripted")
    assert EvalCaseResult.objects.filter(run=run).count() == 1
    assert AuditLog.objects.filter(action="eval_run.create").count() == 1
    assert AuditLog.objects.filter(action="eval_suite.replace").count() == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"version": 1, "label": "production"}, "label"), ({"version": 9}, None), ({"repeat": 0}, "repeat")],
)
def test_a_run_names_what_is_wrong_with_its_request(kwargs, field):
    with pytest.raises(ApplicationError) as raised:
        queued_run(**kwargs)
    assert field is None or field in raised.value.fields


def test_a_skill_without_cases_cannot_be_run():
    publish("empty-skill")
    with pytest.raises(Conflict):
        eval_run_queue(skill_name="empty-skill", model="scripted")


def test_the_api_needs_the_scopes_the_issue_names(client_with_scopes):
    published = publish("pr-review", description="Review a pull request.")
    eval_suite_replace(skill=published.version.skill, document={"cases": [JUDGED]})
    reader = client_with_scopes(["skills:read"])
    assert reader.get("/api/v1/skills/pr-review/evals").status_code == 200
    assert reader.put("/api/v1/skills/pr-review/evals", {"cases": []}, format="json").status_code == 403
    assert reader.post("/api/v1/skills/pr-review/evals/runs", {"model": "scripted"}, format="json").status_code == 403
    runner = client_with_scopes(["skills:read", "agent:run"])
    assert runner.post("/api/v1/skills/pr-review/evals/runs", {"model": "scripted"}, format="json").status_code == 202
    assert SkillVersion.objects.count() == 1


@pytest.fixture
def client_with_scopes(make_token):
    def make(scopes: list[str]) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes)}")
        return client

    return make


def test_skill_creator_files_read_into_cases():
    cases = suite_cases_read(
        {"skill_name": "x", "evals": [{"id": 3, "prompt": "Do it", "expected_output": "done", "expectations": ["A"]}]}
    )
    assert cases == [
        {"id": "eval-3", "kind": "task", "prompt": "Do it", "expect": [{"judge": "A"}], "expected_output": "done"}
    ]
    triggers = suite_cases_read([{"query": "q", "should_trigger": True}, {"query": "r", "should_trigger": False}])
    assert [(c["id"], c["should_trigger"]) for c in triggers] == [("trigger-1", True), ("trigger-2", False)]


@pytest.mark.parametrize(
    ("cases", "field"),
    [
        ([{"id": "a", "kind": "poem"}], "cases[0].kind"),
        ([{"id": "a", "kind": "trigger", "query": "q"}], "cases[0].should_trigger"),
        ([{"id": "a", "kind": "task", "prompt": "p", "expect": [{"answer_has": "x"}]}], "cases[0].expect[0]"),
        ([{"id": "a", "kind": "task", "prompt": "p", "expect": [{"max_steps": 0}]}], "cases[0].expect[0].max_steps"),
        ([JUDGED, JUDGED], "cases[1].id"),
    ],
)
def test_a_bad_case_is_refused_naming_its_field(cases, field):
    with pytest.raises(InvalidSuite) as raised:
        suite_cases_read({"cases": cases})
    assert list(raised.value.fields) == [field]


def test_trigger_figures_tell_false_negatives_from_true_negatives():
    def graded(passed: bool, triggered: bool) -> EvalCaseResult:
        return EvalCaseResult(kind="trigger", passed=passed, triggered=triggered, graded_at="2026-01-01T00:00Z")

    figures = trigger_figures([graded(True, True), graded(False, True), graded(True, False), graded(False, False)])
    assert (figures.tp, figures.fp, figures.tn, figures.fn) == (1, 1, 1, 1)
    figures = trigger_figures([graded(False, False), graded(False, False), graded(True, True)])
    assert (figures.tp, figures.fn, figures.tn, figures.recall) == (1, 2, 0, 1 / 3)


def test_a_case_is_added_replaced_and_deleted_each_as_a_new_revision():
    skill = publish("pr-review", description="Review a pull request.").version.skill
    trigger = {"id": "t", "kind": "trigger", "query": "review my PR", "should_trigger": True}
    assert eval_suite_case_save(skill=skill, case=JUDGED).number == 1
    assert eval_suite_case_save(skill=skill, case=trigger).cases == [JUDGED, trigger]
    changed = eval_suite_case_save(skill=skill, case=trigger | {"should_trigger": False})
    assert (changed.number, changed.cases[1]["should_trigger"]) == (3, False)
    assert eval_suite_case_delete(skill=skill, case_id="k").cases == [trigger | {"should_trigger": False}]
    with pytest.raises(InvalidSuite):
        eval_suite_case_save(skill=skill, case={"id": "bad", "kind": "task", "prompt": "p"})


def finished_run(skill, version, outcomes: dict[str, list[bool]], **fields) -> EvalRun:
    """A succeeded run whose task cases passed as `outcomes` says ({case id: [repeat 1, ...]})."""
    revision = eval_suite_replace(
        skill=skill,
        document={"cases": [JUDGED | {"id": case_id} for case_id in outcomes]},
    )
    run = EvalRun.objects.create(
        skill=skill, version=version, model="scripted", suite_revision=revision, status="succeeded", **fields
    )
    position = 0
    for case_id, passes in outcomes.items():
        for repeat, passed in enumerate(passes, start=1):
            EvalCaseResult.objects.create(
                run=run,
                case_id=case_id,
                kind="task",
                repeat=repeat,
                position=position,
                passed=passed,
                graded_at=timezone.now(),
            )
            position += 1
    return run


def test_compare_gives_the_task_rate_difference_as_analytics_computes_it_and_the_flipped_cases():
    first = publish("pr-review", description="Review a pull request.")
    second = publish("pr-review", description="Review a pull request, carefully.")
    skill = first.version.skill
    a = finished_run(skill, first.version, {"x": [True, True], "y": [False, False], "z": [True, False]})
    b = finished_run(skill, second.version, {"x": [True, True], "y": [True, True], "z": [False, False]})

    compared = eval_runs_compare(a=a, b=b)

    estimate, low, high = newcombe_difference(3, 6, 4, 6)
    assert compared["task"]["difference"] == {
        "estimate": round(estimate, 4),
        "ci_low": round(low, 4),
        "ci_high": round(high, 4),
    }
    assert compared["task"]["probability_b_better"] == round(probability_b_better(3, 3, 4, 2), 4)
    # z passed once in two (not most of its repeats) and then never: no flip; y flipped.
    assert [(flip["id"], flip["now"]) for flip in compared["flipped"]] == [("y", "passes")]
    assert (compared["a"]["version"], compared["b"]["version"]) == (1, 2)


def test_each_version_s_latest_succeeded_run_is_its_eval_result():
    first = publish("pr-review", description="Review a pull request.")
    second = publish("pr-review", description="Review a pull request, carefully.")
    skill = first.version.skill
    older = finished_run(skill, first.version, {"x": [True]})
    newer = finished_run(skill, first.version, {"x": [False]})
    EvalRun.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(hours=1))
    failed = finished_run(skill, second.version, {"x": [True]})
    EvalRun.objects.filter(pk=failed.pk).update(status="failed")

    latest = eval_latest_per_version(skill=skill)

    assert latest == {1: newer}


def test_the_latest_run_per_version_reads_one_run_per_version_in_one_query():
    first = publish("pr-review", description="Review a pull request.")
    second = publish("pr-review", description="Review a pull request, carefully.")
    skill = first.version.skill
    versions = (first.version, second.version)
    runs = {version.number: [finished_run(skill, version, {"x": [True]}) for _ in range(4)] for version in versions}
    for of_version in runs.values():
        for age, run in enumerate(of_version):  # the first of each version's four is its newest
            EvalRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=age))
    built: list[EvalRun] = []

    def count(sender, instance, **kwargs):
        built.append(instance)

    post_init.connect(count, sender=EvalRun)
    try:
        with CaptureQueriesContext(connection) as queries:
            latest = eval_latest_per_version(skill=skill)
    finally:
        post_init.disconnect(count, sender=EvalRun)

    assert latest == {1: runs[1][0], 2: runs[2][0]}
    assert len(queries) == 1 and len(built) == 2  # not the eight runs the skill has


def test_a_folder_s_evals_json_becomes_its_suite_and_stays_out_of_the_version(tmp_path):
    folder = tmp_path / "invoice-check"
    (folder / "evals").mkdir(parents=True)
    (folder / "SKILL.md").write_text(make_skill_md("invoice-check", description="Checks invoices for VAT errors."))
    (folder / "notes.md").write_text("kept")
    trigger = {"id": "t", "kind": "trigger", "query": "check this invoice", "should_trigger": True}
    (folder / "evals" / "evals.json").write_text(json.dumps({"cases": [trigger]}))

    call_command("skills", "import", str(folder), stdout=io.StringIO())

    skill = skill_get(name="invoice-check")
    assert eval_suite_cases(skill=skill) == [trigger]
    assert list(SkillFile.objects.filter(version__skill=skill).values_list("path", flat=True)) == ["notes.md"]

    (folder / "evals" / "evals.json").write_text(json.dumps({"cases": [trigger | {"kind": "poem"}]}))
    with pytest.raises(CommandError, match="imported, but not its eval suite: evals/evals.json: Case 't': kind"):
        call_command("skills", "import", str(folder), stdout=io.StringIO())


def test_a_turn_becomes_a_case_expecting_what_it_did():
    skill = publish("pr-review", description="Review a pull request.").version.skill
    script = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "pr-review"}}]}]
    turn = AgentTurn.objects.create(
        message="review my PR", model="scripted", script=script, status=TurnStatus.SUCCEEDED, steps=2
    )
    now = timezone.now()
    TraceEvent.objects.create(turn=turn, seq=1, type="tool_call", at=now, data={"tool": "read_skill"})
    activated = {"skill": "pr-review", "version": 1, "trigger": "read_skill"}
    TraceEvent.objects.create(turn=turn, seq=2, type="skill_activated", at=now, data=activated)

    events = list(TraceEvent.objects.filter(turn=turn).order_by("seq"))
    trigger = case_from_turn(turn=turn, skill="pr-review", kind="trigger", events=events, taken=set())
    task = case_from_turn(turn=turn, skill="pr-review", kind="task", events=events, taken=set())

    assert trigger == {"id": "t-review-my-pr", "kind": "trigger", "query": "review my PR", "should_trigger": True} | {
        "script": script
    }
    assert task["expect"] == [{"skill_loaded": "pr-review"}] and task["script"] == script
    assert eval_suite_case_save(skill=skill, case=task).cases[0]["prompt"] == "review my PR"
