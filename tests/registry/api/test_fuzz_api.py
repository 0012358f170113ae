"""Hostile input never gets a 500: hypothesis throws arbitrary JSON, text and query strings at
the write and read endpoints (a schemathesis-style check without the extra dependency)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80) | st.sampled_from(
    ["\x00", "\ud800", "../../etc/passwd", "latest", "-1", "1e309", "NaN", "🙂", "a" * 2000, "(a+)+$", "\\1"]
)
scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | text
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)


def body_like(keys: list[str]):
    """Objects that mostly use the endpoint's own keys, with arbitrary values."""
    return st.dictionaries(st.sampled_from(keys) | text, json_values, max_size=len(keys) + 1)


ENDPOINTS = {
    "/api/v1/skills": ["skill_md", "files", "message", "base_version", "source"],
    "/api/v1/skills/fuzzed/versions": ["skill_md", "files", "message", "base_version", "source"],
    "/api/v1/rules": ["name", "pattern", "skills", "tools", "instruction", "auto_invoke", "priority", "enabled"],
    "/api/v1/rules/test": ["query", "label"],
    "/api/v1/resolve": ["query", "label", "forced_skill", "context", "max_skills", "max_chars"],
    "/api/v1/usage": ["events", "client_id"],
}


@pytest.fixture
def seeded(db):
    publish("fuzzed")


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_arbitrary_json_bodies_never_500(api, seeded, path):
    @FUZZ
    @given(body=body_like(ENDPOINTS[path]) | json_values)
    def check(body):
        response = api.generic("POST", path, json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (body, response.content[:300])
        assert "error" in response.json() or response.status_code in (200, 201)

    check()


def test_skill_md_text_never_500s(api, seeded):
    @FUZZ
    @given(frontmatter=st.dictionaries(text, json_values, max_size=5), body=text)
    def check(frontmatter, body):
        lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in frontmatter.items()), "---", body]
        payload = json.dumps({"skill_md": "\n".join(lines)})  # ASCII-escaped: lone surrogates survive the trip
        response = api.generic("POST", "/api/v1/skills", payload, content_type="application/json")
        assert response.status_code < 500, response.content[:300]

    check()


def test_events_with_wrong_types_never_500(api):
    event = st.fixed_dictionaries(
        {"event_id": text, "kind": st.sampled_from(["loaded", "feedback", "bogus"]) | text, "skill": text},
        optional={"version": json_values, "rating": json_values, "at": json_values, "cost": json_values},
    )

    @FUZZ
    @given(events=st.lists(event, max_size=5))
    def check(events):
        response = api.generic("POST", "/api/v1/usage", json.dumps({"events": events}), content_type="application/json")
        assert response.status_code < 500, (events, response.content[:300])

    check()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/skills",
        "/api/v1/match",
        "/api/v1/analytics/skills",
        "/api/v1/skills/fuzzed",
        "/api/v1/skills/fuzzed/SKILL.md",
        "/api/v1/skills/fuzzed/diff",
        "/api/v1/skills/fuzzed/versions",
    ],
)
def test_arbitrary_query_strings_never_500(api, seeded, path):
    keys = [
        "q",
        "tag",
        "trigger",
        "source",
        "enabled",
        "label",
        "version",
        "limit",
        "offset",
        "from",
        "to",
        "by_version",
        "shadowed",
        "skill",
    ]

    url_text = text.filter(lambda value: "\ud800" not in value)  # a URL cannot carry a lone surrogate

    @FUZZ
    @given(params=st.dictionaries(st.sampled_from(keys), url_text, max_size=4))
    def check(params):
        response = api.get(path, params)
        assert response.status_code < 500, (params, response.content[:300])

    check()


@pytest.mark.parametrize("segment", ["%00", "a%00b", "%ff%fe", "..", "x" * 300, "%F0%9F%99%82", "a%0Ab"])
def test_odd_path_segments_never_500(api, seeded, segment):
    for template in (
        "/api/v1/skills/{}",
        "/api/v1/skills/{}/SKILL.md",
        "/api/v1/skills/fuzzed/labels/{}",
        "/api/v1/skills/fuzzed/files/{}",
    ):
        response = api.get(template.format(segment))
        assert response.status_code < 500, (template, segment, response.content[:200])
    assert api.put(f"/api/v1/skills/fuzzed/labels/{segment}", {"version": 1}, format="json").status_code < 500


def test_a_multipart_body_with_junk_never_500s(api, seeded):
    response = api.generic(
        "POST",
        "/api/v1/skills",
        b'--x\r\nContent-Disposition: form-data; name="bundle"\r\n\r\n',
        content_type="multipart/form-data; boundary=x",
    )
    assert response.status_code < 500
    response = api.generic("POST", "/api/v1/skills", b"junk", content_type="multipart/form-data")
    assert response.status_code < 500
    assert api.post("/api/v1/skills", {"skill_md": make_skill_md("fuzzed")}, format="multipart").status_code < 500
