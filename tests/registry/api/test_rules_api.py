"""`/api/v1/rules...`: CRUD, validation of untrusted patterns, and the rule tester."""

from __future__ import annotations

import time

import pytest

from registry.models import AuditLog, ForceIncludeRule
from tests.factories import publish

pytestmark = pytest.mark.django_db

IMAGE_RULE = {
    "name": "images",
    "pattern": r"\b(draw|image|picture)\b",
    "skills": ["image-generation"],
    "instruction": "For this request you MUST call run_skill with image-generation first.",
    "auto_invoke": {"tool": "run_skill", "arguments": {"skill_name": "image-generation", "args": ["{{query}}"]}},
    "priority": 10,
    "enabled": True,
}


def test_create_returns_the_rule_shape_and_warns_about_unknown_skills(api):
    response = api.post("/api/v1/rules", IMAGE_RULE, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    for key in ("name", "pattern", "skills", "instruction", "auto_invoke", "priority", "enabled"):
        assert body[key] == IMAGE_RULE[key]
    assert body["warnings"] == [
        "No skill named 'image-generation' exists yet; the rule will list it once it is published."
    ]
    assert AuditLog.objects.filter(action="rule.create").count() == 1


def test_list_get_patch_delete(api):
    publish("image-generation")
    rule_id = api.post("/api/v1/rules", IMAGE_RULE, format="json").json()["id"]

    assert api.get("/api/v1/rules").json()["results"][0]["name"] == "images"
    assert api.get(f"/api/v1/rules/{rule_id}").json()["priority"] == 10
    patched = api.patch(f"/api/v1/rules/{rule_id}", {"priority": 3, "enabled": False}, format="json")
    assert patched.status_code == 200 and patched.json()["priority"] == 3 and patched.json()["enabled"] is False
    assert patched.json()["warnings"] == []
    assert api.delete(f"/api/v1/rules/{rule_id}").status_code == 204
    assert api.get(f"/api/v1/rules/{rule_id}").status_code == 404
    assert api.delete(f"/api/v1/rules/{rule_id}").status_code == 404


def test_a_backreference_is_rejected_with_a_clear_message_naming_the_pattern(api):
    response = api.post("/api/v1/rules", {**IMAGE_RULE, "pattern": r"(\w+) \1"}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_pattern"
    assert "pattern" in body["fields"]
    assert "Backreferences" in body["detail"] and "RE2" in body["detail"]
    assert not ForceIncludeRule.objects.exists()


@pytest.mark.parametrize("pattern", [r"foo(?=bar)", r"(?<!x)y", r"(unclosed", r"a{5000}"])
def test_patterns_re2_cannot_compile_are_rejected(api, pattern):
    response = api.post("/api/v1/rules", {**IMAGE_RULE, "pattern": pattern}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_pattern"


def test_a_pattern_over_the_length_limit_is_rejected(api, settings):
    settings.RULE_PATTERN_MAX_LENGTH = 20
    response = api.post("/api/v1/rules", {**IMAGE_RULE, "pattern": "a" * 21}, format="json")
    assert response.status_code == 400 and "pattern" in response.json()["fields"]


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(x+x+)+y", r"(.*a){12}"])
def test_pathological_patterns_on_a_long_query_return_promptly(api, pattern):
    publish("catastrophe")
    api.post("/api/v1/rules", {"name": "evil", "pattern": pattern, "skills": ["catastrophe"]}, format="json")
    query = "a" * 40_000 + "x" * 40_000 + "!"

    started = time.monotonic()
    response = api.post("/api/v1/rules/test", {"query": query}, format="json")
    elapsed = time.monotonic() - started

    assert response.status_code == 200
    # A backtracking engine needs longer than the universe has on this input; RE2 is linear.
    assert elapsed < 10, elapsed


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("skills", ["not a name!"]),
        ("skills", "image-generation"),
        ("auto_invoke", {"tool": "run skill"}),
        ("auto_invoke", {"tool": "run_skill", "arguments": ["not", "an", "object"]}),
        ("auto_invoke", {"tool": "run_skill", "extra": 1}),
        ("auto_invoke", "run_skill"),
        ("priority", "high"),
        ("name", ""),
    ],
)
def test_invalid_rule_fields_are_400_naming_the_field(api, field, value):
    response = api.post("/api/v1/rules", {**IMAGE_RULE, field: value}, format="json")
    assert response.status_code == 400
    assert any(key.startswith(field) for key in response.json()["fields"]), response.json()


def test_a_name_already_taken_is_409_on_create_and_on_rename(api):
    api.post("/api/v1/rules", IMAGE_RULE, format="json")
    response = api.post("/api/v1/rules", IMAGE_RULE, format="json")
    assert response.status_code == 409
    assert response.json()["error"] == "conflict" and response.json()["fields"]["name"] == "already exists"

    other = api.post("/api/v1/rules", {**IMAGE_RULE, "name": "other"}, format="json").json()
    renamed = api.patch(f"/api/v1/rules/{other['id']}", {"name": IMAGE_RULE["name"]}, format="json")
    assert renamed.status_code == 409 and renamed.json()["fields"]["name"] == "already exists"


def test_rules_test_shows_what_fires_and_why_and_what_the_agent_gets(api):
    publish("image-generation", description="Generates images from a text prompt.")
    publish("summarize", description="Summarizes documents.")
    api.post("/api/v1/rules", IMAGE_RULE, format="json")
    api.post("/api/v1/rules", {"name": "never", "pattern": "zebra", "skills": ["summarize"]}, format="json")

    body = api.post("/api/v1/rules/test", {"query": "Please draw a cat"}, format="json").json()

    assert [f["name"] for f in body["fired"]] == ["images"]
    assert '"draw"' in body["fired"][0]["why"]
    assert body["skills"][0] == "image-generation"
    assert body["instructions"] == [IMAGE_RULE["instruction"]]
    assert "<name>image-generation</name>" in body["prompt_block"]
    assert body["prompt_block"].startswith("## Skills (mandatory)")


def test_rules_match_case_insensitively(api):
    publish("image-generation")
    api.post("/api/v1/rules", IMAGE_RULE, format="json")
    body = api.post("/api/v1/rules/test", {"query": "An IMAGE of the sea"}, format="json").json()
    assert [f["name"] for f in body["fired"]] == ["images"]


def test_disabled_rules_do_not_fire(api):
    publish("image-generation")
    api.post("/api/v1/rules", {**IMAGE_RULE, "enabled": False}, format="json")
    assert api.post("/api/v1/rules/test", {"query": "draw"}, format="json").json()["fired"] == []
