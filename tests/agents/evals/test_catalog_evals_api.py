"""`POST /api/v1/catalog/evals/runs` and `GET .../{id}`: what a catalog run is started with and
refused for (a model outside AGENT_MODELS, a label nobody carries, a catalog without trigger
cases, the eval quotas counting its turns), and how it reads while it has not run (its turns
run on a worker: tests/agents/evals/test_catalog_evals_integration.py)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from registry.models import AuditLog, CatalogEvalCaseResult, CatalogEvalRun, EvalRun
from registry.selectors.skills import skill_get
from registry.services.evals import eval_suite_replace
from registry.services.labels import label_move
from tests.factories import publish, user_with_role
from tests.registry.routing_catalog import competing_catalog

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/catalog/evals/runs"


@pytest.fixture
def catalog(db):
    competing_catalog()  # 3 skills with 2 trigger cases that should load them, one with none


def client_with(make_token, scopes: list[str], user=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes, user=user)}")
    return client


def start(client: APIClient, **body):
    return client.post(RUNS, {"model": "offline", **body}, format="json")


def test_a_run_queues_every_served_skills_trigger_cases_times_repeat(api, catalog):
    answer = start(api, repeat=2)

    assert answer.status_code == 202, answer.json()
    assert answer.json()["status"] == "queued" and answer.json()["turns"] == 12
    run = CatalogEvalRun.objects.get(pk=answer.json()["id"])
    rows = CatalogEvalCaseResult.objects.filter(run=run)
    assert {row.skill for row in rows} == {"invoice-summary", "invoice-digest", "haiku-poems"}
    assert "t-no" not in {row.case_id for row in rows}  # a case that should not trigger is no one's query
    assert AuditLog.objects.filter(action="catalog_eval_run.create").count() == 1

    body = api.get(f"{RUNS}/{run.pk}").json()
    assert {key: body[key] for key in ("id", "status", "label", "model", "repeat")} == {
        "id": str(run.pk),
        "status": "queued",
        "label": None,
        "model": "offline",
        "repeat": 2,
    }
    assert body["progress"] == {"done": 0, "total": 12}
    skills = {entry["name"]: entry for entry in body["skills"]}
    assert skills["no-cases"]["status"] == "no evidence" and skills["no-cases"]["loaded_self"] is None
    assert skills["haiku-poems"]["cases"] == 2 and body["collisions"] == []


def test_a_model_outside_agent_models_is_a_400_naming_model(api, catalog):
    refused = start(api, model="gpt-nobody-allowed")

    assert refused.status_code == 400
    assert "model" in refused.json()["fields"]
    assert "allowed_models" in refused.json()
    assert not CatalogEvalRun.objects.exists()


def test_a_label_nobody_carries_is_a_404_naming_label_and_a_bad_one_a_400(api, catalog):
    unknown = start(api, label="nobody-uses-this")
    assert unknown.status_code == 404
    assert unknown.json()["fields"] == {"label": "unknown label"}
    malformed = start(api, label="Not A Label!")
    assert malformed.status_code == 400 and "label" in malformed.json()["fields"]
    assert start(api, repeat=0).status_code == 400
    assert not CatalogEvalRun.objects.exists()


def test_it_runs_the_catalog_served_at_the_label(api, catalog):
    label_move(skill=skill_get(name="haiku-poems"), label="production", version_number=1)

    answer = start(api, label="production")

    assert answer.status_code == 202 and answer.json()["turns"] == 2
    body = api.get(f"{RUNS}/{answer.json()['id']}").json()
    assert body["label"] == "production"
    assert [entry["name"] for entry in body["skills"]] == ["haiku-poems"]


def test_a_catalog_without_trigger_cases_is_a_409(api, db):
    publish("lonely", description="A skill without any eval suite.")
    refused = start(api)
    assert refused.status_code == 409
    assert "trigger case" in refused.json()["detail"]


def test_scopes_are_the_eval_runs_ones(make_token, catalog):
    reader = client_with(make_token, ["skills:read"])
    assert start(reader).status_code == 403
    runner = client_with(make_token, ["skills:read", "agent:run"])
    run_id = start(runner).json()["id"]
    assert reader.get(f"{RUNS}/{run_id}").status_code == 200
    assert client_with(make_token, ["agent:run"]).get(f"{RUNS}/{run_id}").status_code == 403
    assert reader.get(f"{RUNS}/00000000-0000-0000-0000-000000000000").status_code == 404


def test_a_catalog_run_counts_toward_the_users_active_runs(make_token, catalog, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 2
    author = user_with_role("author")
    client = client_with(make_token, ["skills:read", "agent:run"], user=author)
    eval_suite_replace(
        skill=skill_get(name="haiku-poems"),
        document={"cases": [{"id": "t-1", "kind": "trigger", "query": "haiku please", "should_trigger": True}]},
    )
    assert start(client).status_code == 202
    assert client.post("/api/v1/skills/haiku-poems/evals/runs", {"model": "offline"}, format="json").status_code == 202

    refused = start(client)
    assert refused.status_code == 429
    assert refused.json()["setting"] == "EVAL_MAX_ACTIVE_RUNS_PER_USER"
    assert int(refused["Retry-After"]) > 0
    assert CatalogEvalRun.objects.count() == 1 and EvalRun.objects.count() == 1


def test_a_catalog_runs_turns_count_toward_the_queued_eval_turns(make_token, catalog, settings):
    settings.EVAL_MAX_QUEUED_TURNS = 10
    assert start(client_with(make_token, ["skills:read", "agent:run"])).status_code == 202  # 6 turns queued

    refused = start(client_with(make_token, ["skills:read", "agent:run"]))  # 6 more would make 12
    assert refused.status_code == 429
    assert refused.json()["setting"] == "EVAL_MAX_QUEUED_TURNS"
    assert "12 eval turns" in refused.json()["detail"]

    # A skill run is held back by the catalog run's turns too (5 would make 11).
    publish("pr-review", description="Review a pull request.")
    cases = [{"id": f"t-{n}", "kind": "trigger", "query": f"q {n}", "should_trigger": True} for n in range(5)]
    eval_suite_replace(skill=skill_get(name="pr-review"), document={"cases": cases})
    skill_run = client_with(make_token, ["skills:read", "agent:run"]).post(
        "/api/v1/skills/pr-review/evals/runs", {"model": "offline"}, format="json"
    )
    assert skill_run.status_code == 429

    # A run that could never fit is a 400 naming repeat.
    too_big = start(client_with(make_token, ["skills:read", "agent:run"]), repeat=2)
    assert too_big.status_code == 400 and "repeat" in too_big.json()["fields"]
    assert CatalogEvalRun.objects.count() == 1


def test_cancelling_a_run_ends_it_once(api, catalog):
    run_id = start(api).json()["id"]

    cancelled = api.post(f"{RUNS}/{run_id}/cancel")

    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["progress"] == {"done": 0, "total": 6}
    again = api.post(f"{RUNS}/{run_id}/cancel")
    assert again.status_code == 409
    assert AuditLog.objects.filter(action="catalog_eval_run.cancel").count() == 1
