"""`GET /api/v1/catalog/routing`: the model-free routing report names the two skills whose
descriptions compete (as an overlap and as a confusion) and not the distinct third; a skill
without trigger cases is "no evidence"; a label nobody uses is an empty report; a bad label is a
400 naming `label` (the 202 of a large catalog: tests/registry/test_catalog_routing_worker.py)."""

from __future__ import annotations

import pytest

from registry.selectors import skill_get
from registry.services.evals import eval_suite_replace
from registry.services.labels import label_move
from tests.factories import publish
from tests.registry.routing_catalog import competing_catalog, trigger_suite

pytestmark = pytest.mark.django_db

URL = "/api/v1/catalog/routing"


@pytest.fixture
def catalog(db):
    competing_catalog()


def by_name(report: dict) -> dict:
    return {entry["name"]: entry for entry in report["skills"]}


def test_the_report_names_the_competing_pair_and_not_the_third(api, catalog):
    response = api.get(URL)

    assert response.status_code == 200
    report = response.json()
    assert report["status"] == "ready"
    assert {"recall_at_1", "recall_at_5", "skills", "confusions", "overlaps"} <= set(report)
    overlaps = {(o["a"], o["b"]) for o in report["overlaps"]}
    assert overlaps == {("invoice-digest", "invoice-summary")}
    pair = report["overlaps"][0]
    assert pair["score"] >= report["overlap_threshold"]
    assert {"invoices", "billing"} <= set(pair["shared_terms"]) or {"invoice", "billing"} <= set(pair["shared_terms"])
    confused = {(c["skill"], c["with"]) for c in report["confusions"]}
    assert confused and confused <= {("invoice-summary", "invoice-digest"), ("invoice-digest", "invoice-summary")}
    assert all("haiku-poems" not in (c["skill"], c["with"]) for c in report["confusions"])
    assert all(c["shared_terms"] for c in report["confusions"])

    skills = by_name(report)
    assert skills["haiku-poems"]["status"] == "measured"
    assert skills["haiku-poems"]["recall_at_1"] == 1.0
    assert [r["rank"] for r in skills["haiku-poems"]["results"]] == [1, 1]
    assert skills["invoice-summary"]["cases"] == 2  # the negative case is not counted
    assert skills["no-cases"]["status"] == "no evidence"
    assert skills["no-cases"]["recall_at_1"] is None
    assert report["cases"] == 6
    measured = [r for entry in report["skills"] for r in entry["results"]]
    assert report["recall_at_1"] == round(sum(r["rank"] == 1 for r in measured) / 6, 4)
    assert report["recall_at_1"] < 1.0 and report["recall_at_5"] == 1.0


def test_a_confused_case_says_who_ranked_above_it(api, catalog):
    report = api.get(URL).json()
    for entry in report["skills"]:
        for result in entry["results"]:
            if result["rank"] and result["rank"] > 1:
                assert len(result["above"]) == result["rank"] - 1
                assert entry["name"] not in result["above"]


def test_it_reads_the_catalog_at_the_label(api, catalog):
    label_move(skill=skill_get(name="haiku-poems"), label="production", version_number=1)

    report = api.get(URL, {"label": "production"}).json()

    assert [entry["name"] for entry in report["skills"]] == ["haiku-poems"]
    assert report["overlaps"] == [] and report["recall_at_1"] == 1.0


def test_a_label_the_catalog_does_not_use_is_an_empty_report(api, catalog):
    response = api.get(URL, {"label": "nobody-uses-this"})

    assert response.status_code == 200
    report = response.json()
    assert report["skills"] == [] and report["confusions"] == [] and report["overlaps"] == []
    assert report["recall_at_1"] is None and report["cases"] == 0


@pytest.mark.parametrize("label", ["Not A Label", "x" * 37, "bad/label"])
def test_a_bad_label_is_a_400_naming_label(api, catalog, label):
    response = api.get(URL, {"label": label})

    assert response.status_code == 400
    assert "label" in response.json()["fields"]


def test_a_change_gives_a_new_report(api, catalog):
    first = api.get(URL).json()
    eval_suite_replace(
        skill=skill_get(name="no-cases"), document=trigger_suite("translate this email into formal japanese")
    )

    second = api.get(URL).json()

    assert second["digest"] != first["digest"]
    assert by_name(second)["no-cases"]["status"] == "measured"


def test_it_needs_the_skills_read_scope(client, catalog, make_token):
    assert client.get(URL).status_code == 401
    token = make_token(["usage:write"])
    assert client.get(URL, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 403
    token = make_token(["skills:read"])
    assert client.get(URL, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_without_background_recomputes_a_large_catalog_is_computed_when_asked(api, catalog, settings):
    settings.CATALOG_ROUTING_INLINE_MAX = 2  # four skills, six cases: more than that
    settings.CATALOG_ROUTING_BACKGROUND = False  # no worker will: so the request does

    response = api.get(URL, {"label": "latest"})

    assert response.status_code == 200 and response.json()["cases"] == 6


def test_a_fresh_install_s_report_measures_every_bundled_skill(api):
    from django.conf import settings

    from registry.services.skills import skills_sync_bundled

    assert not skills_sync_bundled().failed
    bundled = {path.parent.name for path in settings.BUNDLED_SKILLS_DIR.glob("*/SKILL.md")}

    report = api.get(URL).json()

    assert {entry["name"] for entry in report["skills"]} == bundled
    assert all(entry["status"] == "measured" and entry["cases"] >= 3 for entry in report["skills"])
    assert report["cases"] >= 3 * len(bundled) and report["recall_at_1"] is not None


def test_a_skill_the_model_may_not_invoke_is_not_offered_not_a_miss(api, catalog):
    publish("manual-only", description="Runs the release checklist.", disable__model__invocation="true")
    eval_suite_replace(skill=skill_get(name="manual-only"), document=trigger_suite("run the release checklist"))

    report = api.get(URL).json()

    entry = by_name(report)["manual-only"]
    assert entry["status"] == "not offered" and entry["recall_at_1"] is None
    assert report["cases"] == 6  # its case is not counted as a miss
