"""Rule patterns that are linear but slow: RE2 falls back from its DFA to a
simulation costing query length x program size on large counted repetitions. Such patterns are
refused when the rule is saved, and one resolve has a total time budget for rules saved before."""

from __future__ import annotations

import pytest

from registry.matching.patterns import pattern_check
from registry.models import AuditLog, ForceIncludeRule
from tests.factories import publish

pytestmark = pytest.mark.django_db

# The issue's pattern: 297 characters, 25 alternatives of a{0,999} followed by two characters.
ISSUE_PATTERN = "(?s)(?:" + "|".join(f"a{{0,999}}b{n}" for n in range(25)) + ")"

SLOW = [
    ISSUE_PATTERN,
    "(?s)(?:a{0,999}b0)",
    "(?s)(?:.{0,999}b0|.{0,999}b1)",
    "(x[^y]{0,999}y)",
    "[ab]{0,999}c",
    r"(?:\d{0,999}x|\d{0,999}y)",
    "(?:é{0,999}q)",
]
FAST = [
    r"\b(deploy|deployment|rollback|release)\b",
    r"[A-Z]{2,}-\d+",
    r"https?://\S+",
    r"\d{3}-\d{2}-\d{4}",
    r"(?s)invoice.*(pdf|docx)",
    r"[a-z]{1,100}x",
    r"\bsql\b.*\b(select|insert|update)\b",
    r"(a+)+$",
]


def test_the_issue_s_pattern_is_297_characters():
    assert len(ISSUE_PATTERN) == 297


def test_the_issue_s_pattern_is_refused_over_the_api_naming_the_field(api):
    publish("slow")
    response = api.post("/api/v1/rules", {"name": "slow", "pattern": ISSUE_PATTERN, "skills": ["slow"]}, format="json")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["error"] == "invalid_pattern" and "pattern" in body["fields"]
    assert "too slow" in body["detail"]
    assert not ForceIncludeRule.objects.exists() and not AuditLog.objects.filter(action="rule.create").exists()


@pytest.mark.parametrize("pattern", SLOW)
def test_slow_patterns_are_refused(pattern):
    from registry.errors import InvalidPattern

    with pytest.raises(InvalidPattern, match="too slow"):
        pattern_check(pattern)


@pytest.mark.parametrize("pattern", FAST)
def test_ordinary_patterns_pass_the_probe(pattern):
    pattern_check(pattern)


def test_a_slow_pattern_is_refused_on_update_and_the_rule_is_unchanged(api):
    publish("slow")
    created = api.post("/api/v1/rules", {"name": "r", "pattern": "deploy", "skills": ["slow"]}, format="json").json()
    response = api.patch(f"/api/v1/rules/{created['id']}", {"pattern": SLOW[1]}, format="json")
    assert response.status_code == 400 and "pattern" in response.json()["fields"]
    assert ForceIncludeRule.objects.get().pattern == "deploy"


def test_a_shorter_matching_length_lets_a_costlier_pattern_through(settings):
    # The probe measures at RULE_QUERY_MAX_CHARS, the length rules are really matched against.
    settings.RULE_QUERY_MAX_CHARS = 50
    pattern_check("(?s)(?:a{0,999}b0)")


def test_resolve_stops_matching_rules_past_its_time_budget_and_says_which(api, settings):
    # Given rules saved before the probe existed (written straight to the table), a slow one first
    publish("slow")
    ForceIncludeRule.objects.create(name="legacy-slow", pattern=ISSUE_PATTERN, skills=["slow"], priority=10)
    ForceIncludeRule.objects.create(name="after-1", pattern="a", skills=["slow"], priority=5)
    ForceIncludeRule.objects.create(name="after-2", pattern="b", skills=["slow"], priority=1)
    settings.RESOLVE_MAX_SECONDS = 0.001
    # When a long query is resolved
    response = api.post("/api/v1/resolve", {"query": "a" * 10_000}, format="json")
    # Then the answer comes, saying which rules were not checked
    assert response.status_code == 200
    warnings = " ".join(response.json()["warnings"])
    assert "RESOLVE_MAX_SECONDS" in warnings and "'after-1', 'after-2'" in warnings
    # and an incomplete answer is not cached: with time to spare, the next call checks every rule
    settings.RESOLVE_MAX_SECONDS = 600
    again = api.post("/api/v1/resolve", {"query": "a" * 10_000}, format="json").json()
    assert "RESOLVE_MAX_SECONDS" not in " ".join(again["warnings"])
    assert {rule["name"] for rule in again["fired_rules"]} == {"after-1"}
