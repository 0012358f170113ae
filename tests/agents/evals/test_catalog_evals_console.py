"""The catalog runs' console pages through Django's test client: the start form refuses in place
(the field named, the limit's 429 and Retry-After as the API sends them), analysts read but may
not start, and a run's htmx poll stops with 286 once the run has ended."""

from __future__ import annotations

import pytest

from registry.models import CatalogEvalRun
from tests.agents.evals.catalog_runs import digest_takes_summaries, graded_catalog_run
from tests.factories import user_with_role
from tests.registry.routing_catalog import competing_catalog

pytestmark = pytest.mark.django_db

START = "/catalog/evals/runs/"


@pytest.fixture
def catalog(db):
    competing_catalog()


def test_a_model_not_allowed_is_refused_beside_the_model_field(client, catalog):
    client.force_login(user_with_role("author"))

    refused = client.post(START, {"label": "", "model": "gpt-nobody-allowed", "repeat": "1"})

    assert refused.status_code == 400
    assert 'data-field="model"' in refused.content.decode()
    assert not CatalogEvalRun.objects.exists()


def test_the_limit_s_refusal_is_a_429_with_retry_after(client, catalog, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 1
    client.force_login(user_with_role("author"))
    form = {"label": "", "model": "offline", "repeat": "1"}
    assert client.post(START, form).status_code == 302

    refused = client.post(START, form)

    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert 'id="run-error"' in refused.content.decode() and "EVAL_MAX_ACTIVE_RUNS_PER_USER" in refused.content.decode()
    assert CatalogEvalRun.objects.count() == 1


def test_an_analyst_reads_the_runs_but_may_not_start_one(client, catalog):
    run = graded_catalog_run(loads=digest_takes_summaries)
    client.force_login(user_with_role("analyst"))

    assert client.get("/catalog/evals/").status_code == 200
    assert "Start catalog run" not in client.get("/catalog/evals/").content.decode()
    page = client.get(f"/catalog/evals/runs/{run.pk}/")
    assert page.status_code == 200 and "Cancel run" not in page.content.decode()
    assert client.post(START, {"model": "offline"}).status_code == 403
    assert client.get("/catalog/evals/runs/not-a-uuid/").status_code == 404


def test_the_poll_of_an_ended_run_answers_286(client, catalog):
    run = graded_catalog_run(loads=digest_takes_summaries)
    client.force_login(user_with_role("analyst"))

    poll = client.get(f"/catalog/evals/runs/{run.pk}/", headers={"HX-Request": "true"})

    assert poll.status_code == 286
    assert 'id="run-live"' in poll.content.decode() and "<html" not in poll.content.decode()
