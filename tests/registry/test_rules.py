"""Rule services and safe patterns (RE2): validation, audit, generation bumps, `{{query}}`."""

from __future__ import annotations

import time

import pytest

from registry.errors import ApplicationError, InvalidPattern
from registry.matching.fired_rule import FiredRule
from registry.matching.patterns import compile_pattern, pattern_search
from registry.models import AuditLog, ForceIncludeRule, RegistryState
from registry.services.rules import rule_create, rule_delete, rule_update
from tests.factories import publish

pytestmark = pytest.mark.django_db


def generation() -> int:
    return RegistryState.objects.get().generation


def test_patterns_match_case_insensitively_and_report_where():
    found = pattern_search(compile_pattern(r"\bimage\b"), "Make an IMAGE please")
    assert (found.start, found.end, found.text) == (8, 13, "IMAGE")


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(a)\1", "Backreferences"),
        (r"x(?=y)", "Lookahead"),
        (r"x(?!y)", "Lookahead"),
        (r"(?<=y)x", "Lookbehind"),
        (r"(?>x)", "Atomic"),
        (r"(x", "parentheses"),
        (r"[x", "character class"),
        (r"x{2000}", "1000"),
    ],
)
def test_uncompilable_patterns_get_a_message_a_person_can_act_on(pattern, words):
    with pytest.raises(InvalidPattern) as caught:
        compile_pattern(pattern)
    assert words in caught.value.detail
    assert "pattern" in caught.value.fields


def test_empty_and_overlong_patterns_are_refused(settings):
    settings.RULE_PATTERN_MAX_LENGTH = 10
    with pytest.raises(InvalidPattern, match="empty"):
        compile_pattern("  ")
    with pytest.raises(InvalidPattern, match="limit is 10"):
        compile_pattern("a" * 11)


def test_catastrophic_patterns_run_in_linear_time():
    query = "x" * 200_000
    started = time.monotonic()
    for pattern in (r"(x+x+)+y", r"(a|aa)+$", r"(x*)*y"):
        assert pattern_search(compile_pattern(pattern), query) is None
    assert time.monotonic() - started < 5


def test_the_query_is_cut_to_a_bounded_length(settings):
    settings.RULE_QUERY_MAX_CHARS = 100
    assert pattern_search(compile_pattern("needle"), "x" * 200 + "needle") is None
    assert pattern_search(compile_pattern("needle"), "x" * 50 + "needle") is not None


def test_create_update_delete_audit_and_bump_the_generation():
    publish("images")
    start = generation()
    result = rule_create(name="img", pattern="draw", skills=["images"], instruction="Do it.")
    assert result.warnings == () and generation() == start + 1

    rule_update(rule=result.rule, priority=7)
    assert ForceIncludeRule.objects.get().priority == 7 and generation() == start + 2
    rule_update(rule=ForceIncludeRule.objects.get(), priority=7)  # no change, no write
    assert generation() == start + 2

    rule_delete(rule=ForceIncludeRule.objects.get())
    assert not ForceIncludeRule.objects.exists() and generation() == start + 3
    assert list(AuditLog.objects.filter(object_type="rule").values_list("action", flat=True)) == [
        "rule.delete",
        "rule.update",
        "rule.create",
    ]


def test_unknown_but_valid_skill_names_are_allowed_with_a_warning_and_invalid_ones_refused():
    warned = rule_create(name="later", pattern="x", skills=["not-yet-published"])
    assert warned.warnings and "not-yet-published" in warned.warnings[0]
    with pytest.raises(ApplicationError) as caught:
        rule_create(name="bad", pattern="x", skills=["../etc"])
    assert "skills" in caught.value.fields


def test_a_disabled_skill_is_warned_about():
    from registry.services.skills import skill_set_enabled

    skill_set_enabled(skill=publish("dormant").skill, enabled=False)
    assert "disabled" in rule_create(name="d", pattern="x", skills=["dormant"]).warnings[0]


def test_a_rule_that_does_nothing_is_refused():
    with pytest.raises(ApplicationError, match="must do something"):
        rule_create(name="empty", pattern="x", skills=[])


def test_an_invalid_update_writes_nothing():
    rule = rule_create(name="keep", pattern="keep", skills=["a"]).rule
    with pytest.raises(InvalidPattern):
        rule_update(rule=rule, pattern=r"(\w)\1")
    assert ForceIncludeRule.objects.get().pattern == "keep"


def test_auto_invoke_call_substitutes_the_query_in_every_nested_string():
    rule = FiredRule(
        id=1,
        name="ai",
        why="pattern /x/ matched",
        auto_invoke={"tool": "run_skill", "arguments": {"args": ["{{query}}", 3], "n": {"q": "say {{query}}!"}}},
    )
    assert rule.auto_invoke_call("hi") == {"tool": "run_skill", "arguments": {"args": ["hi", 3], "n": {"q": "say hi!"}}}
    assert FiredRule(id=2, name="plain", why="w").auto_invoke_call("hi") is None


def test_auto_invoke_is_checked_and_kept_with_its_placeholder():
    arguments = {"args": ["{{query}}", 3], "n": {"q": "{{query}}"}}
    rule = rule_create(
        name="ai", pattern="x", skills=["a"], auto_invoke={"tool": "run_skill", "arguments": arguments}
    ).rule
    assert rule.auto_invoke["arguments"]["args"] == ["{{query}}", 3]
    with pytest.raises(ApplicationError):
        rule_create(name="ai2", pattern="x", skills=["a"], auto_invoke={"arguments": {}})
