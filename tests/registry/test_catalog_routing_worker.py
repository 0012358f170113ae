"""The routing report is recomputed by a real Celery worker after publishes, label moves and suite
changes, debounced: a burst of writes queues one task, and the report the API then serves (200,
not 202) is the worker's, for the catalog as it is after the burst. A catalog too large to compute
in the request is answered 202 (`computing`, in the console too) until the worker has it."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache

from registry.selectors import skill_get
from registry.services.catalog_routing import catalog_routing_refresh_soon
from registry.services.evals import eval_suite_replace
from registry.services.labels import label_move
from tests.browser.console_helpers import user_with_role
from tests.factories import publish
from tests.worker import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URL = "/api/v1/catalog/routing"


@pytest.fixture
def background(settings):
    """Recompute after each change (off elsewhere in the tests), and never in the request: a
    report the API serves as ready can then only be the worker's."""
    settings.CATALOG_ROUTING_BACKGROUND = True
    settings.CATALOG_ROUTING_DEBOUNCE_SECONDS = 0.5
    settings.CATALOG_ROUTING_INLINE_MAX = 0
    cache.delete("catalog-routing:armed")
    yield
    cache.delete("catalog-routing:armed")


def suite(*queries: str) -> dict:
    return {
        "cases": [
            {"id": f"t-{n}", "kind": "trigger", "query": q, "should_trigger": True} for n, q in enumerate(queries)
        ]
    }


def ready(api, params=None):
    response = api.get(URL, params or {})
    return response.json() if response.status_code == 200 else None


def test_a_burst_of_writes_queues_one_recompute(background):
    assert catalog_routing_refresh_soon() is True
    assert catalog_routing_refresh_soon() is False  # armed: the queued one will read the later writes


def test_the_worker_recomputes_after_publishes_and_label_moves(api, worker, background):
    # Reports are stored by what they are computed from, and the cache outlives test runs: a word
    # of this run's makes the catalog one no earlier run has seen.
    run = f"r{uuid.uuid4().hex[:8]}"
    publish("pdf-merge", description=f"Merges PDF files into one document ({run}).", tags=["pdf"])
    publish("csv-chart", description="Draws charts from CSV files.", tags=["csv", "chart"])
    eval_suite_replace(skill=skill_get(name="pdf-merge"), document=suite("merge these pdf files"))
    eval_suite_replace(skill=skill_get(name="csv-chart"), document=suite("draw a chart from this csv"))

    report = wait_for(lambda: ready(api), message="the worker's report")
    assert report["status"] == "ready" and report["recall_at_1"] == 1.0
    assert {s["name"] for s in report["skills"]} == {"pdf-merge", "csv-chart"}

    # A label move changes what `production` serves: its report follows, recomputed by the worker.
    api.get(URL, {"label": "production"})  # asked about once: the worker keeps it current from now on
    label_move(skill=skill_get(name="pdf-merge"), label="production", version_number=1)
    production = wait_for(lambda: ready(api, {"label": "production"}), message="production's report")
    assert [s["name"] for s in production["skills"]] == ["pdf-merge"]

    publish("pdf-split", description="Splits PDF files into pages.", tags=["pdf"])
    after = wait_for(lambda: ready(api), message="the report after a publish")
    assert {s["name"] for s in after["skills"]} == {"pdf-merge", "csv-chart", "pdf-split"}
    assert next(s for s in after["skills"] if s["name"] == "pdf-split")["status"] == "no evidence"


def test_a_large_catalog_is_202_until_the_worker_has_it(api, client, worker, background, settings):
    settings.CATALOG_ROUTING_BACKGROUND = False  # the writes queue no recompute: the request's 202 does
    run = f"r{uuid.uuid4().hex[:8]}"
    publish("deploy-check", description=f"Checks a deploy's health ({run}).", tags=["deploy"])
    eval_suite_replace(skill=skill_get(name="deploy-check"), document=suite("is the deploy healthy"))
    settings.CATALOG_ROUTING_BACKGROUND = True
    # The worker holds off until both answers are read: it could otherwise finish in between.
    assert worker.consume(False)

    response = api.get(URL, {"label": "latest"})

    assert response.status_code == 202  # more than CATALOG_ROUTING_INLINE_MAX: not computed here
    assert response.json()["status"] == "computing" and response.json()["skills"] == []
    client.force_login(user_with_role("alan", "analyst"))
    assert "A worker is computing the report" in client.get("/catalog/routing/", {"label": "latest"}).content.decode()
    assert worker.consume(True)
    report = wait_for(lambda: ready(api, {"label": "latest"}), message="the worker's report at latest")
    assert [s["name"] for s in report["skills"]] == ["deploy-check"] and report["recall_at_1"] == 1.0
