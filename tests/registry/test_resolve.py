"""resolve(): the prompt block and its budgets, force-include rules, labels and caching by
registry generation (tests/agents/turns/test_store.py: its conversion to the runtime's shapes)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import ForceIncludeRule, Skill
from registry.selectors.resolve import SKILLS_INSTRUCTION, render_prompt_block, resolve
from registry.services.labels import label_move
from registry.services.rules import rule_create, rule_update
from registry.services.skills import skill_set_enabled
from tests.factories import publish

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Entry:
    name: str
    description: str


def entries(count: int, description: str = "A skill that does one particular thing well.") -> list[Entry]:
    return [Entry(f"skill-{i:03d}", description) for i in range(count)]


# --- the prompt block ---------------------------------------------------------------------------


def test_the_block_is_seed_003s_instruction_then_escaped_xml():
    block = render_prompt_block([Entry("pdf", "Reads <PDF> & forms")], max_skills=10, max_chars=10_000)

    assert block.text.startswith(SKILLS_INSTRUCTION)
    assert "read its SKILL.md with `read_skill`, then follow it." in block.text
    assert (
        "<available_skills>\n<skill>\n  <name>pdf</name>\n  <description>Reads &lt;PDF&gt; &amp; forms"
        "</description>\n</skill>\n</available_skills>"
    ) in block.text
    assert "truncated" not in block.text


def test_no_skills_no_block():
    assert render_prompt_block([], max_skills=10, max_chars=100).text == ""


def test_over_max_skills_keeps_the_most_relevant_and_says_so():
    block = render_prompt_block(entries(5), max_skills=2, max_chars=100_000)
    assert block.included == ("skill-000", "skill-001")
    assert block.text.endswith("Skills truncated: included 2 of 5.")


def test_over_max_chars_descriptions_go_before_skills():
    skills = entries(10)
    full = render_prompt_block(skills, max_skills=100, max_chars=100_000).text
    budget = len(full) - 100  # a little too small: some descriptions must go, no skill should

    block = render_prompt_block(skills, max_skills=100, max_chars=budget)

    assert len(block.text) <= budget
    assert len(block.included) == 10
    assert 0 < len(block.described) < 10
    # the most relevant (first) keep their descriptions
    assert set(block.described) == {f"skill-{i:03d}" for i in range(len(block.described))}
    assert "Skills truncated: included 10 of 10" in block.text and "descriptions omitted for" in block.text


def test_skills_are_dropped_only_when_names_alone_do_not_fit():
    block = render_prompt_block(entries(200), max_skills=500, max_chars=3000)
    assert len(block.text) <= 3000
    assert 0 < len(block.included) < 200
    assert f"Skills truncated: included {len(block.included)} of 200" in block.text


def test_forced_skills_are_kept_even_over_budget():
    skills = entries(50)
    block = render_prompt_block(skills, max_skills=1, max_chars=10, forced=["skill-040", "skill-041"])
    assert block.included == ("skill-040", "skill-041")
    assert "Skills truncated: included 2 of 50" in block.text


# --- resolve against the registry -------------------------------------------------------------


def test_resolve_lists_effective_enabled_skills_by_relevance():
    publish("summarize", description="Summarizes documents.", source="bundled")
    publish("summarize", description="Team summarizer for documents.", source="workspace")
    publish("sql-query", description="Writes SQL queries.")
    off = publish("retired", description="Old.").skill
    skill_set_enabled(skill=off, enabled=False)

    result = resolve(query="write a sql query")

    assert [s.skill.name for s in result.skills] == ["sql-query", "summarize"]
    summarize = result.skills[1]
    assert summarize.skill.source == "workspace" and summarize.skill.description == "Team summarizer for documents."
    assert "retired" not in result.prompt_block
    assert result.skills[0].reasons


def test_fired_rules_force_include_their_skills_first_with_instructions_and_why():
    publish("image-generation", description="Generates images.")
    publish("summarize", description="Summarizes documents.")
    rule_create(
        name="images",
        pattern=r"\b(draw|picture)\b",
        skills=["image-generation", "ghost"],
        instruction="Call run_skill first.",
        auto_invoke={"tool": "run_skill", "arguments": {"q": "{{query}}"}},
        priority=5,
    )
    rule_create(name="other", pattern="nothing-matches-this", skills=["summarize"])

    result = resolve(query="summarize then DRAW a picture", max_skills=1, max_chars=50)

    assert [r.name for r in result.fired_rules] == ["images"]
    assert '"DRAW"' in result.fired_rules[0].why
    assert [s.skill.name for s in result.skills] == ["image-generation"]  # kept although over budget
    assert result.skills[0].forced_by == ("images",)
    assert result.instructions == ("Call run_skill first.",)
    assert result.fired_rules[0].auto_invoke == {"tool": "run_skill", "arguments": {"q": "{{query}}"}}
    assert any("ghost" in w for w in result.warnings)


def test_resolve_at_a_label_offers_only_the_skills_that_carry_it():
    first = publish("pdf", description="PDF v1.").skill
    publish("pdf", description="PDF v2.")
    publish("csv", description="CSV v1.")
    label_move(skill=first, label="staging", version_number=1)

    at_staging = {s.skill.name: s.skill.version for s in resolve(label="staging").skills}
    default = {s.skill.name: s.skill.version for s in resolve().skills}
    label_move(skill=first, label="production", version_number=1)
    production = {s.skill.name: s.skill.version for s in resolve().skills}

    assert at_staging == {"pdf": 1}  # csv carries no staging: left out, not read at its latest
    assert default == {"pdf": 2, "csv": 1}
    assert production == {"pdf": 1, "csv": 1}  # no label given: production where it exists


def test_a_skill_md_with_disable_model_invocation_is_listed_only_when_forced():
    publish("manual-only", description="Only when asked.", **{"disable-model-invocation": "true"})
    assert resolve(query="only when asked").skills == ()
    assert [s.skill.name for s in resolve(query="x", forced_skill="manual-only").skills] == ["manual-only"]


def test_an_unknown_forced_skill_is_a_warning_not_an_error():
    publish("real")
    result = resolve(forced_skill="imaginary")
    assert result.forced_skill is None and any("imaginary" in w for w in result.warnings)


def test_a_forced_skill_without_the_label_is_left_out_with_a_warning_naming_the_label():
    publish("unlabelled", description="Never promoted.")
    rule_create(name="always", pattern="go", skills=["unlabelled"])

    result = resolve(query="go", label="staging", forced_skill="unlabelled")

    assert result.skills == () and result.forced_skill is None
    assert "The forced skill 'unlabelled' does not carry the label 'staging'." in result.warnings
    assert "Rule 'always' names the skill 'unlabelled', which does not carry the label 'staging'." in result.warnings


# --- caching ------------------------------------------------------------------------------------


def test_a_repeated_resolve_is_served_from_the_cache():
    publish("cached", description="Cached skill.")
    resolve(query="cached")
    with CaptureQueriesContext(connection) as queries:
        again = resolve(query="cached")
    assert len(queries) == 1  # the generation, nothing else
    assert again.skills[0].skill.name == "cached"


@pytest.mark.parametrize("change", ["publish", "label", "enable", "rule_create", "rule_update"])
def test_every_write_invalidates_the_cached_result(change):
    skill = publish("alpha", description="Alpha does alpha things.").skill
    publish("alpha", description="Alpha, second version.")
    rule = rule_create(name="r", pattern="zzz", skills=["alpha"]).rule
    before = resolve(query="alpha zzz-not")

    if change == "publish":
        publish("beta", description="Beta appears.")
    elif change == "label":
        label_move(skill=skill, label="production", version_number=1)
    elif change == "enable":
        skill_set_enabled(skill=Skill.objects.get(pk=skill.pk), enabled=False)
    elif change == "rule_create":
        rule_create(name="r2", pattern="alpha", skills=["alpha"], instruction="New instruction.")
    else:
        rule_update(rule=ForceIncludeRule.objects.get(pk=rule.pk), pattern="alpha", instruction="Now fires.")

    after = resolve(query="alpha zzz-not")
    assert after.etag != before.etag
    assert after.generation > before.generation


def test_the_etag_is_stable_for_the_same_state_and_inputs():
    publish("stable")
    assert resolve(query="x").etag == resolve(query="x", use_cache=False).etag
    assert resolve(query="x").etag != resolve(query="x", max_skills=0).etag


# --- the agent runtime's shapes -----------------------------------------------------------------
