"""Hostile inputs over the real HTTP layer: each is a clear 4xx, never a 500, and
nothing is written. (docs/reliability.md lists them, each line backed by a test here.)"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError

from agents.models import AgentTurn
from registry.api.base import _check_strings, _plainly_storable
from registry.models import ForceIncludeRule, Skill, UsageEvent
from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db

JSON_ENDPOINTS = [
    "/api/v1/skills",
    "/api/v1/skills/deep/versions",
    "/api/v1/rules",
    "/api/v1/rules/test",
    "/api/v1/resolve",
    "/api/v1/usage",
    "/api/v1/agent/turns",
]


def nested(depth: int, *, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


@pytest.mark.parametrize("path", JSON_ENDPOINTS)
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_json_is_a_400_on_every_json_endpoint(api, path, depth):
    response = api.generic("POST", path, nested(depth), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize("path", JSON_ENDPOINTS)
def test_nesting_just_past_the_limit_inside_an_object_is_refused_and_names_where(api, path):
    body = '{"context": {"a": ' + nested(70) + "}}"
    response = api.generic("POST", path, body, content_type="application/json")
    assert response.status_code == 400
    assert "body.context.a" in response.json()["detail"]


def test_nesting_within_the_limit_is_accepted(api):
    publish("deep")
    arguments = json.loads('{"x": ' + nested(40) + "}")
    body = {
        "name": "deep-args",
        "pattern": "deploy",
        "skills": ["deep"],
        "auto_invoke": {"tool": "search", "arguments": arguments},
    }
    response = api.post("/api/v1/rules", body, format="json")
    assert response.status_code == 201, response.content[:300]


def full_walk_refuses(data) -> bool:
    try:
        _check_strings(data)
    except ParseError:
        return False
    return True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, ascii_only=st.booleans())
def test_a_body_the_quick_check_passes_is_one_the_full_walk_passes(value, ascii_only):
    # st.text() draws NUL and lone surrogates: written as \u escapes, or (ensure_ascii off) as
    # the characters themselves.
    text = json.dumps(value, ensure_ascii=ascii_only)
    data = json.loads(text)
    if _plainly_storable(text, data):
        assert full_walk_refuses(data) is True


@pytest.mark.parametrize("depth", [63, 64, 65, 66])
def test_the_quick_check_and_the_full_walk_agree_on_the_depth_limit(depth):
    text = '{"a": ' + nested(depth) + "}"
    data = json.loads(text)
    assert _plainly_storable(text, data) == full_walk_refuses(data) == (depth < 64)


def test_a_plain_usage_batch_takes_the_quick_check_and_an_escaped_nul_does_not():
    batch = {"events": [{"event_id": f"e{i}", "kind": "loaded", "skill": "pdf", "version": 1} for i in range(3)]}
    text = json.dumps(batch)
    assert _plainly_storable(text, batch)
    nul = json.dumps({"events": [{"event_id": "a\x00b"}]})
    assert not _plainly_storable(nul, json.loads(nul)) and not full_walk_refuses(json.loads(nul))


def test_nothing_is_written_by_a_refused_deep_body(api):
    body = '{"skill_md": ' + json.dumps(make_skill_md("deep")) + ', "files": ' + nested(5_000) + "}"
    assert api.generic("POST", "/api/v1/skills", body, content_type="application/json").status_code == 400
    assert not Skill.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        {"from": "9999-12-31"},
        {"to": "9999-12-31"},
        {"from": "0001-01-01"},
        {"from": "1969-12-31", "to": "2026-01-01"},
        {"from": "2026-01-01", "to": "3000-01-01"},
    ],
)
def test_analytics_dates_out_of_range_are_a_400_naming_the_field(api, query):
    response = api.get("/api/v1/analytics/skills", query)
    assert response.status_code == 400, response.content[:300]
    field = next(iter(query)) if "1969" in str(query) or len(query) == 1 else "to"
    assert field in response.json()["fields"]
    assert "between 1970-01-01 and 2999-12-31" in response.json()["detail"]


def test_analytics_dates_at_the_edges_of_the_range_are_answered(api):
    response = api.get("/api/v1/analytics/skills", {"from": "1970-01-01", "to": "2999-12-31"})
    assert response.status_code == 200


@pytest.mark.parametrize("at", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "3000-01-01T00:00:00Z"])
def test_usage_event_times_out_of_range_are_a_400(api, at):
    event = {"event_id": "e1", "kind": "loaded", "skill": "x", "at": at}
    response = api.post("/api/v1/usage", {"events": [event]}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert not UsageEvent.objects.exists()


def test_a_huge_invalid_value_is_not_echoed_back_whole(api):
    huge = "x" * 900_000  # under the 1 MB body cap, so it reaches validation
    response = api.post("/api/v1/skills", {"skill_md": make_skill_md("echo"), "source": huge}, format="json")
    assert response.status_code in (400, 413)
    assert len(response.content) < 5_000


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/usage", {"events": [{"event_id": "e", "kind": "z" * 900_000, "skill": "x"}]}),
        ("/api/v1/rules", {"name": "r", "pattern": "deploy", "skills": ["y" * 900_000]}),
        ("/api/v1/resolve", {"query": "q", "label": "L" * 900_000}),
    ],
)
def test_errors_quoting_the_input_are_cut_short(api, path, body):
    response = api.post(path, body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert len(response.content) < 5_000
    assert "more characters" in response.content.decode() or len(response.content) < 2_000


def test_a_long_agent_message_is_accepted(make_token):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['agent:run'])}")
    message = "log line: something happened\n" * 6_500  # ~190,000 characters, a pasted log
    response = client.post("/api/v1/agent/turns", {"message": message, "model": "offline"}, format="json")
    assert response.status_code == 202, response.content[:300]
    assert len(AgentTurn.objects.get().message) == len(message)


def test_an_agent_message_over_the_cap_is_a_400_naming_message(make_token, settings):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['agent:run'])}")
    message = "é" * (settings.AGENT_MAX_MESSAGE_CHARS + 1)
    response = client.post("/api/v1/agent/turns", {"message": message}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "message" in response.json()["fields"]
    assert not AgentTurn.objects.exists()
    assert ForceIncludeRule.objects.count() == 0
