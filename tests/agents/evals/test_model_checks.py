"""Model checks without a worker: the comparison's figures, what a check queues (two runs per
served skill with cases, no evidence for the rest), its bad input (400 naming the field), the eval
quotas (429, nothing written), and the regression threshold a label asks for. Runs end here
through the registry's grading services, as a runner leaves them; test_model_checks_integration.py
runs them on a real worker."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.evals.model_check import model_check_start, model_checks_advance
from registry.models import AuditLog, EvalCaseResult, EvalRun, LabelPolicy, ModelCheck
from registry.selectors.evals import TaskFigures, TriggerFigures
from registry.selectors.model_checks import f1_comparison, model_check_threshold, task_comparison
from registry.services.audit import Actor
from tests.agents.evals.model_check_runs import CASES, grade_all, served
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

CHECKS = "/api/v1/catalog/evals/model-check"


@pytest.fixture
def catalog():
    return [served("pr-review", cases=CASES), served("notes")]


def runner(make_token, user=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'agent:run'], user=user)}")
    return client


def test_a_task_rate_that_falls_from_all_to_none_is_worse_beyond_chance():
    worse = task_comparison(TaskFigures(passed=4, failed=0), TaskFigures(passed=0, failed=4))
    assert worse["delta"] == -1.0 and worse["interval"][1] < 0
    assert worse["probability_worse"] > 0.99
    same = task_comparison(TaskFigures(passed=3, failed=1), TaskFigures(passed=3, failed=1))
    assert same["delta"] == 0 and same["probability_worse"] == pytest.approx(0.5, abs=0.01)
    assert task_comparison(TaskFigures(), TaskFigures(passed=1)) is None  # no evidence on one side


def test_trigger_f1_is_compared_through_its_posterior():
    perfect, missed = TriggerFigures(tp=6, tn=6), TriggerFigures(tp=1, fn=5, tn=6)
    worse = f1_comparison(perfect, missed)
    assert worse["current"] == 1.0 and worse["candidate"] == pytest.approx(2 / 7, abs=1e-4)
    assert worse["probability_worse"] > 0.95 and worse["interval"][1] < 0
    assert f1_comparison(perfect, perfect)["probability_worse"] == pytest.approx(0.5, abs=0.05)
    assert f1_comparison(TriggerFigures(tn=3), perfect) is None  # nothing that should trigger: no F1


def test_a_check_queues_two_runs_per_skill_with_cases_and_lists_the_rest_as_no_evidence(catalog, make_token):
    author = user_with_role("author")
    answer = runner(make_token, user=author).post(
        CHECKS, {"label": "production", "candidate_model": "offline", "current_model": "scripted"}, format="json"
    )
    assert answer.status_code == 202, answer.json()
    assert answer.json()["runs"] == 2
    check = ModelCheck.objects.get(pk=answer.json()["id"])
    assert [s["name"] for s in check.skills] == ["notes", "pr-review"]
    runs = {link.side: link.run for link in check.runs.select_related("run")}
    assert (runs["current"].model, runs["candidate"].model) == ("scripted", "offline")
    assert {run.created_by for run in runs.values()} == {author}  # the check's runs count as its author's
    assert AuditLog.objects.filter(action="model_check.check").exists()

    grade_all(runs["current"], tasks_pass=True)
    assert model_checks_advance() == 0  # one side still going
    grade_all(runs["candidate"], tasks_pass=False)
    assert model_checks_advance() == 1

    body = runner(make_token).get(f"/api/v1/catalog/evals/model-checks/{check.pk}").json()
    assert body["status"] == "succeeded" and body["regressed"] == 1
    first, last = body["skills"]
    assert (first["name"], first["regressed"], first["worse_in"]) == ("pr-review", True, ["task_rate"])
    assert first["task_rate"]["current"] == 1.0 and first["task_rate"]["candidate"] == 0.0
    assert first["trigger_f1"]["delta"] == 0.0
    assert (last["name"], last["evidence"], last["regressed"], last["reason"]) == (
        "notes",
        "no evidence",
        False,
        "no eval cases",
    )
    assert body["threshold"]["source"] == "default"


def test_a_model_outside_agent_models_is_a_400_naming_the_field(catalog, make_token):
    client = runner(make_token)
    for field, body in (
        ("candidate_model", {"label": "production", "candidate_model": "gpt-nope"}),
        ("current_model", {"label": "production", "candidate_model": "offline", "current_model": "gpt-nope"}),
    ):
        answer = client.post(CHECKS, body, format="json")
        assert answer.status_code == 400, answer.json()
        assert list(answer.json()["fields"]) == [field]
        assert "gpt-nope" in answer.json()["detail"]
    missing = client.post(CHECKS, {"candidate_model": "offline"}, format="json")
    assert missing.status_code == 400 and "label" in missing.json()["fields"]
    repeat = client.post(CHECKS, {"label": "production", "candidate_model": "offline", "repeat": 0}, format="json")
    assert repeat.status_code == 400 and "repeat" in repeat.json()["fields"]
    assert not ModelCheck.objects.exists() and not EvalRun.objects.exists()


def test_the_eval_quotas_refuse_the_whole_check(catalog, make_token, settings):
    settings.EVAL_MAX_QUEUED_TURNS = 6  # the check would queue 2 x 4 turns
    answer = runner(make_token).post(CHECKS, {"label": "production", "candidate_model": "offline"}, format="json")
    assert answer.status_code == 429, answer.json()
    assert answer.json()["setting"] == "EVAL_MAX_QUEUED_TURNS"
    assert not ModelCheck.objects.exists() and not EvalRun.objects.exists() and not EvalCaseResult.objects.exists()

    settings.EVAL_MAX_QUEUED_TURNS, settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 5000, 2
    author = user_with_role("author")
    model_check_start(
        label="production", candidate_model="offline", current_model="scripted", actor=Actor(user=author, via="test")
    )
    again = runner(make_token, user=author).post(
        CHECKS, {"label": "production", "candidate_model": "offline"}, format="json"
    )
    assert again.status_code == 429 and again.json()["setting"] == "EVAL_MAX_ACTIVE_RUNS_PER_USER"
    assert ModelCheck.objects.count() == 1


def test_the_threshold_is_the_label_policy_s_when_it_asks_not_worse(db):
    assert model_check_threshold(label="production")["source"] == "default"
    LabelPolicy.objects.create(
        label="production",
        roles=["admin"],
        require_eval={"model": "scripted", "min_task_rate": None, "min_trigger_f1": None, "not_worse": True},
    )
    threshold = model_check_threshold(label="production")
    assert threshold == {"p_worse": 0.95, "source": "policy", "detail": "label policy 'production' (not_worse)"}


def test_a_label_that_serves_nothing_gives_an_empty_finished_check(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        check = model_check_start(label="staging", candidate_model="offline")
    check.refresh_from_db()
    assert (check.status, check.report["skills"]) == ("succeeded", [])
