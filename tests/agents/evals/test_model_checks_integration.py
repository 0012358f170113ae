"""Model checks on a real Celery worker: the bundled skills checked with `scripted` as the current
model (it replays each case's script, so their task cases pass) and `offline` as the candidate
(it does not follow tasks), through the API and through the CLI a CI runs; and the drift watch's
beat task, whose run on AGENT_MODEL is worse than the skill's last accepted run."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from agents.tasks import catalog_watch_task
from registry.models import ModelCheck, ModelCheckRun, WebhookDelivery
from registry.selectors.model_checks import catalog_drift_current
from registry.selectors.skills import skill_get
from registry.services.evals import eval_suite_replace
from registry.services.labels import label_move
from registry.services.model_checks import catalog_drift_dismiss
from registry.services.skills import skills_sync_bundled
from registry.services.webhooks import webhook_create
from tests.agents.evals.model_check_runs import accepted_run
from tests.agents.evals.test_bundled_evals import BUNDLED
from tests.agents.evals.test_evals_integration import WORKER_ENV
from tests.factories import publish
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(concurrency=2, extra_env={**WORKER_ENV, "EVAL_CONCURRENCY": "8"}).start()
    yield process
    worker_exits(process)


def check_ended(api, check_id: str, worker: WorkerProcess) -> dict:
    def ended():
        body = api.get(f"/api/v1/catalog/evals/model-checks/{check_id}").json()
        return body if body["status"] != "running" else None

    try:
        return wait_for(ended, message=f"model check {check_id} to end")
    except AssertionError:
        raise AssertionError("the check did not end; worker output:\n" + worker.output()[-6000:]) from None


def test_offline_against_scripted_lists_every_bundled_skill_with_task_cases_as_regressed(api, worker):
    assert not skills_sync_bundled().failed
    silent = publish("no-cases", description="A skill nobody wrote eval cases for.").version.skill
    label_move(skill=silent, label="production", version_number=1)

    answer = api.post(
        "/api/v1/catalog/evals/model-check",
        {"label": "production", "current_model": "scripted", "candidate_model": "offline", "repeat": 1},
        format="json",
    )
    assert answer.status_code == 202, answer.json()
    assert answer.json()["runs"] == 2 * len(BUNDLED)
    body = check_ended(api, answer.json()["id"], worker)

    assert body["status"] == "succeeded"
    assert body["threshold"]["source"] == "default"
    skills = body["skills"]
    assert [s["name"] for s in skills if s["regressed"]] == [s["name"] for s in skills[: len(BUNDLED)]]
    assert sorted(s["name"] for s in skills if s["regressed"]) == BUNDLED  # every one ships task cases
    for skill in skills[: len(BUNDLED)]:
        assert "task_rate" in skill["worse_in"], skill
        assert (skill["task_rate"]["current"], skill["task_rate"]["candidate"]) == (1.0, 0.0), skill
        # 2 of 2 against 0 of 2: P(worse) 0.95, the least that counts (repeat 2 makes it 0.996)
        assert skill["task_rate"]["interval"][1] < 0 and skill["probability_worse"] >= 0.95
        assert skill["trigger_f1"]["current"] == skill["trigger_f1"]["candidate"] == 1.0, skill
    assert skills[-1] | {"runs": None} == skills[-1] | {
        "name": "no-cases",
        "evidence": "no evidence",
        "regressed": False,
        "reason": "no eval cases",
        "runs": None,
    }
    run = api.get(f"/api/v1/evals/runs/{skills[0]['runs']['candidate']}").json()
    assert run["model"] == "offline" and run["repeat"] == 1


def test_the_cli_prints_a_table_and_exits_1_on_a_regression(worker):
    assert not skills_sync_bundled().failed
    for name in BUNDLED[:2]:
        label_move(skill=skill_get(name=name), label="ci", version_number=1)
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="2 skill\\(s\\) regressed on offline"):
        call_command(
            "catalog",
            "model-check",
            "--label=ci",
            "--current=scripted",
            "--candidate=offline",
            "--repeat=2",
            "--fail-on-regression",
            "--timeout=600",
            stdout=out,
            stderr=err,
        )
    table = out.getvalue()
    assert table.splitlines()[0].split()[:3] == ["skill", "version", "verdict"]
    assert all(f"{name}" in table for name in BUNDLED[:2]) and table.count("REGRESSED") == 2
    assert "P(worse) >= 0.95" in table

    with pytest.raises(CommandError, match="candidate_model"):
        call_command("catalog", "model-check", "--label=ci", "--candidate=gpt-nope", stdout=out, stderr=err)


def test_the_drift_watch_raises_catalog_drift_when_a_skill_got_worse_than_its_accepted_run(worker, settings):
    skill = publish("pr-review", description="Review a pull request for security problems.").version.skill
    label_move(skill=skill, label="production", version_number=1)
    cases = [{"id": "t-yes", "kind": "trigger", "query": "review this pull request", "should_trigger": True}]
    cases += [
        {"id": f"k-{n}", "kind": "task", "prompt": f"Review file {n}.py", "expect": [{"answer_matches": "OK"}]}
        for n in range(3)
    ]
    eval_suite_replace(skill=skill, document={"cases": cases})
    baseline = accepted_run(skill, model=settings.AGENT_MODEL)  # the model used to follow these tasks
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url="http://127.0.0.1:9/drift", events=["catalog.drift"])

    check = ModelCheck.objects.get(pk=catalog_watch_task())
    assert (check.kind, check.label, check.current_model) == ("watch", "production", settings.AGENT_MODEL)
    try:  # the worker's reaper stores the report once the run ended
        wait_for(lambda: ModelCheck.objects.filter(pk=check.pk, finished_at__isnull=False).exists(), message="watch")
    except AssertionError:
        raise AssertionError("the watch did not end; worker output:\n" + worker.output()[-6000:]) from None

    delivery = WebhookDelivery.objects.get(event="catalog.drift")
    payload = json.loads(bytes(delivery.payload))
    assert (payload["skill"], payload["version"], payload["label"]) == ("pr-review", 1, "production")
    assert payload["baseline_run"] == str(baseline.pk) and payload["check"] == str(check.pk)
    assert payload["worse_in"] == ["task_rate"] and payload["probability_worse"] >= 0.95
    assert payload["task_rate"]["current"] == 1.0 and payload["task_rate"]["candidate"] == 0.0
    assert catalog_drift_current() == check
    assert not ModelCheckRun.objects.get(model_check=check).accepted  # not a baseline while it stands

    catalog_drift_dismiss(check=check)
    assert catalog_drift_current() is None
    assert ModelCheckRun.objects.get(model_check=check).accepted
