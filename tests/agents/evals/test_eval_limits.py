"""What starting eval runs may queue: runs per user (EVAL_MAX_ACTIVE_RUNS_PER_USER), eval turns
across everyone (EVAL_MAX_QUEUED_TURNS), each refused with 429 naming the setting and Retry-After;
and the turns a run costs, shown before it starts."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from registry.models import EvalRun
from registry.selectors.skills import skill_get
from registry.services.evals import eval_run_cancel, eval_suite_replace
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db

CASES = [{"id": f"t-{n}", "kind": "trigger", "query": f"question {n}", "should_trigger": True} for n in range(5)]
RUNS = "/api/v1/skills/pr-review/evals/runs"


@pytest.fixture
def suite():
    published = publish("pr-review", description="Review a pull request.")
    eval_suite_replace(skill=published.version.skill, document={"cases": CASES})
    return published.version.skill


def runner(make_token, user=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'agent:run'], user=user)}")
    return client


def start(client: APIClient, **body):
    return client.post(RUNS, {"model": "scripted", **body}, format="json")


def test_the_run_answer_says_how_many_turns_it_costs(suite, make_token):
    client = runner(make_token)
    answer = start(client, repeat=3, baseline=True)
    assert answer.status_code == 202, answer.json()
    assert answer.json()["turns"] == len(CASES) * 3 * 2
    listed = client.get(RUNS).json()["results"]
    assert [run["turns"] for run in listed] == [30]
    assert client.get(f"/api/v1/evals/runs/{answer.json()['id']}").json()["turns"] == 30


def test_a_user_past_their_active_runs_gets_429_naming_the_setting(suite, make_token, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 2
    author = user_with_role("author")
    client = runner(make_token, user=author)
    first, second = start(client), start(client)
    assert (first.status_code, second.status_code) == (202, 202)

    refused = start(client)
    assert refused.status_code == 429, refused.json()
    assert refused.json()["setting"] == "EVAL_MAX_ACTIVE_RUNS_PER_USER"
    assert "EVAL_MAX_ACTIVE_RUNS_PER_USER" in refused.json()["detail"]
    assert int(refused["Retry-After"]) > 0
    assert EvalRun.objects.filter(created_by=author).count() == 2

    # Someone else is not held back by this user's runs.
    assert start(runner(make_token)).status_code == 202
    # Once one of the user's runs ends, there is room again.
    eval_run_cancel(run=EvalRun.objects.get(pk=first.json()["id"]))
    assert start(client).status_code == 202


def test_eval_turns_queued_across_everyone_are_capped(suite, make_token, settings):
    settings.EVAL_MAX_QUEUED_TURNS = 12
    assert start(runner(make_token), repeat=2).status_code == 202  # 10 turns queued

    refused = start(runner(make_token))  # 5 more would make 15
    assert refused.status_code == 429, refused.json()
    assert refused.json()["setting"] == "EVAL_MAX_QUEUED_TURNS"
    assert "15 eval turns" in refused.json()["detail"]
    assert int(refused["Retry-After"]) > 0
    assert EvalRun.objects.count() == 1

    # A run that could never fit is not worth waiting for: a 400 naming repeat, not a 429.
    too_big = start(runner(make_token), repeat=3)
    assert too_big.status_code == 400
    assert "repeat" in too_big.json()["fields"]
    assert "EVAL_MAX_QUEUED_TURNS" in too_big.json()["detail"]


def test_the_run_form_shows_the_cost_and_a_refusal_in_place(suite, client, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 1
    author = user_with_role("author")
    client.force_login(author)
    page = client.get(f"/skills/{suite.name}/evals/")
    assert "This run costs <strong data-run-turns>5 agent turns</strong>" in page.content.decode()

    form = {"target": "label", "label": "", "model": "scripted", "repeat": "2", "baseline": "on"}
    started = client.post(f"/skills/{suite.name}/evals/runs/", form)
    assert started.status_code == 302

    refused = client.post(f"/skills/{suite.name}/evals/runs/", form)
    html = refused.content.decode()
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert 'id="run-error"' in html and "EVAL_MAX_ACTIVE_RUNS_PER_USER" in html
    # The form keeps what was asked, with its cost.
    assert "This run costs <strong data-run-turns>20 agent turns</strong>" in html
    assert EvalRun.objects.filter(skill=skill_get(name=suite.name)).count() == 1
