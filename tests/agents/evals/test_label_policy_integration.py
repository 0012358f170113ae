"""An eval-gated label end to end: a policy set through the API refuses `production` until a real
eval run (queued through the API, run as agent turns by a real Celery worker with the scripted
model) meets its thresholds; the run's own figures are what the 409 and the move rest on. A run
on a suite an author outside the policy's roles rewrote counts only once an admin accepts it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from registry.models import Label, LabelHistory
from tests.agents.evals.test_evals_integration import SUITE, pr_review_skill, put_suite, run_ended, start_run
from tests.worker import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WORKER_ENV = {"EVAL_JUDGE_MODEL": "scripted", "AGENT_TURN_REAPER_SECONDS": "0.5", "EVAL_CONCURRENCY": "3"}
# k-sql passes, k-lazy fails (its judge says so): a task pass rate of 0.5; t-pr and t-poem give F1 1.0.
CASES = [case for case in SUITE if case["id"] in ("t-pr", "t-poem", "k-sql", "k-lazy")]


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(concurrency=2, extra_env=WORKER_ENV).start()
    yield process
    worker_exits(process)


def test_production_moves_only_once_a_real_eval_run_meets_the_policy(api, make_token, worker):
    pr_review_skill()
    put_suite(api, "pr-review", CASES)
    gate = {"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8, "not_worse": True}
    policy = {"roles": ["admin", "author"], "require_eval": gate}
    assert api.put("/api/v1/label-policies/production", policy, format="json").status_code == 200
    author = APIClient()
    author.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'skills:write'])}")

    refused = author.put("/api/v1/skills/pr-review/labels/production", {"version": 1}, format="json")
    assert refused.status_code == 409
    assert [check["check"] for check in refused.json()["unmet"]] == ["eval_run"]

    run_id = start_run(api, "pr-review", model="scripted", version=1)
    body = run_ended(api, run_id, worker)
    assert body["status"] == "succeeded", body
    assert (body["summary"]["task"]["rate"], body["summary"]["trigger"]["f1"]) == (0.5, 1.0)

    refused = author.put("/api/v1/skills/pr-review/labels/production", {"version": 1}, format="json")
    assert refused.status_code == 409
    assert refused.json()["unmet"] == [{"check": "min_task_rate", "wanted": 0.8, "got": 0.5, "run": run_id}]
    assert not Label.objects.exists()

    policy["require_eval"] = gate | {"min_task_rate": 0.5}
    assert api.put("/api/v1/label-policies/production", policy, format="json").status_code == 200
    moved = author.put("/api/v1/skills/pr-review/labels/production", {"version": 1}, format="json")
    assert moved.status_code == 200, moved.content
    assert Label.objects.get(name="production").version.number == 1
    assert list(LabelHistory.objects.values_list("kind", "to_version")) == [("move", 1)]


def test_an_author_s_easier_suite_counts_for_production_only_once_an_admin_accepts_it(api, make_token, worker):
    pr_review_skill()
    put_suite(api, "pr-review", CASES)  # the strict suite, by an admin: accepted as made
    gate = {"model": "scripted", "min_task_rate": 0.8}
    policy = {"roles": ["admin"], "require_eval": gate}
    assert api.put("/api/v1/label-policies/production", policy, format="json").status_code == 200
    author = APIClient()
    author.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read', 'skills:write', 'agent:run'])}")

    strict = run_ended(api, start_run(author, "pr-review", model="scripted", version=1), worker)
    assert (strict["suite_revision"], strict["summary"]["task"]["rate"]) == (1, 0.5)

    # The author keeps only the task case v1 passes, and runs it: the run passes.
    proposed = author.put("/api/v1/skills/pr-review/evals", {"cases": [CASES[2]]}, format="json").json()
    assert (proposed["revision"], proposed["accepted"], proposed["counted_revision"]) == (2, False, 1)
    easy_id = start_run(author, "pr-review", model="scripted", version=1)
    easy = run_ended(api, easy_id, worker)
    assert easy["status"] == "succeeded", easy
    assert (easy["suite_revision"], easy["suite_revision_accepted"], easy["summary"]["task"]["rate"]) == (2, False, 1.0)

    refused = api.put("/api/v1/skills/pr-review/labels/production", {"version": 1}, format="json")
    assert refused.status_code == 409
    assert "suite revision 2 was not accepted" in refused.json()["detail"]
    assert [(check["check"], check["run"]) for check in refused.json()["unmet"]] == [
        ("min_task_rate", strict["id"]),
        ("suite_accepted", easy_id),
    ]

    assert author.post("/api/v1/skills/pr-review/evals/revisions/2/accept").status_code == 403
    assert api.post("/api/v1/skills/pr-review/evals/revisions/2/accept").status_code == 200
    # The run made before the acceptance counts: no new run is needed.
    moved = api.put("/api/v1/skills/pr-review/labels/production", {"version": 1}, format="json")
    assert moved.status_code == 200, moved.content
    history = api.get("/api/v1/skills/pr-review/labels").json()["history"]
    assert [(row["kind"], row["suite_revision"]) for row in history] == [
        ("move", None),
        ("suite_accept", 2),
        ("suite_proposal", 2),
    ]
