"""`GET /match` and `POST /resolve`: the shapes agents rely on, ETags and 304s, and that any
write invalidates a cached answer at once."""

from __future__ import annotations

import pytest

from tests.factories import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def skills(db):
    publish("summarize", description="Summarizes documents and files into key points.", tags=["summary", "text"])
    publish("sql-query", description="Writes and fixes SQL queries.", tags=["sql", "database"])
    publish("image-generation", description="Generates pictures.", tags=["images"])


def test_match_ranks_with_reasons(api, skills):
    body = api.get("/api/v1/match", {"q": "summarise this document"}).json()
    assert body["matches"][0]["name"] == "summarize"
    assert body["matches"][0]["score"] > 0 and body["matches"][0]["reasons"]
    assert api.get("/api/v1/match").status_code == 400


def test_resolve_returns_the_contract_shape_with_an_etag(api, skills):
    response = api.post("/api/v1/resolve", {"query": "fix my slow sql query"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"skills", "prompt_block", "instructions", "fired_rules", "etag"}
    assert {"name", "version", "fingerprint"} <= set(body["skills"][0])
    assert body["skills"][0]["name"] == "sql-query"
    assert response["ETag"] == body["etag"] and body["etag"].startswith('"')
    assert "<available_skills>" in body["prompt_block"]


def test_resolve_304_on_a_matching_etag(api, skills):
    first = api.post("/api/v1/resolve", {"query": "summarize"}, format="json")
    again = api.post("/api/v1/resolve", {"query": "summarize"}, format="json", HTTP_IF_NONE_MATCH=first["ETag"])
    other = api.post("/api/v1/resolve", {"query": "sql"}, format="json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]
    assert other.status_code == 200


@pytest.mark.parametrize("change", ["publish", "label", "disable", "rule"])
def test_any_write_invalidates_a_cached_resolve_at_once(api, skills, change):
    first = api.post("/api/v1/resolve", {"query": "summarize documents"}, format="json")

    if change == "publish":
        publish("summarize", description="Summarizes documents, now better.", tags=["summary", "text"])
    elif change == "label":
        publish("summarize", description="A second version.", tags=["summary", "text"])
        api.put("/api/v1/skills/summarize/labels/production", {"version": 1}, format="json")
        first = api.post("/api/v1/resolve", {"query": "summarize documents"}, format="json")
        api.put("/api/v1/skills/summarize/labels/production", {"version": 2}, format="json")
    elif change == "disable":
        api.patch("/api/v1/skills/sql-query", {"enabled": False}, format="json")
    else:
        api.post(
            "/api/v1/rules",
            {"name": "docs", "pattern": "documents", "skills": ["image-generation"], "instruction": "Draw it."},
            format="json",
        )

    second = api.post(
        "/api/v1/resolve", {"query": "summarize documents"}, format="json", HTTP_IF_NONE_MATCH=first["ETag"]
    )

    assert second.status_code == 200
    assert second["ETag"] != first["ETag"]


def test_resolve_with_label_uses_labelled_versions_and_leaves_out_skills_without_it(api, skills):
    publish("summarize", description="Summarizes v2.", tags=["summary"])
    api.put("/api/v1/skills/summarize/labels/staging", {"version": 1}, format="json")

    body = api.post("/api/v1/resolve", {"query": "", "label": "staging"}, format="json").json()

    assert {s["name"]: s["version"] for s in body["skills"]} == {"summarize": 1}
    assert {s["name"]: s["version"] for s in api.post("/api/v1/resolve", {}, format="json").json()["skills"]}[
        "summarize"
    ] == 2


def test_resolve_forced_skill_and_budgets(api, skills):
    body = api.post(
        "/api/v1/resolve", {"query": "sql", "forced_skill": "image-generation", "max_skills": 1}, format="json"
    ).json()
    names = [s["name"] for s in body["skills"]]
    assert names[0] == "image-generation" and body["skills"][0]["forced_by"] == ["forced_skill"]
    assert "Skills truncated: included 1 of 3" in body["prompt_block"]


@pytest.mark.parametrize(
    "body",
    [
        {"max_skills": -1},
        {"max_chars": "lots"},
        {"context": "nope"},
        {"label": "Not A Label"},
        {"context": {"k": {"nested": 1}}},
        {"query": ["x"]},
    ],
)
def test_resolve_rejects_bad_input_with_400(api, skills, body):
    assert api.post("/api/v1/resolve", body, format="json").status_code == 400


def test_an_over_long_subject_is_a_400_naming_it_not_cut(api, skills):
    # Cut at 200, two subjects sharing their first 200 characters would read one side of a rollout.
    response = api.post("/api/v1/resolve", {"query": "x", "context": {"subject": "s" * 201}}, format="json")

    assert response.status_code == 400
    assert "subject" in response.json()["fields"]["context"]
    assert "context.subject" in response.json()["detail"]
    assert api.post("/api/v1/resolve", {"context": {"subject": "s" * 200}}, format="json").status_code == 200
