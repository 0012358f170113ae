"""System prompt assembly: canonical order (seeds 000, 004) and lazy skill listing (seed 003)."""

from __future__ import annotations

from agents.runtime.types import Resolution, SkillSummary
from registry.matching.fired_rule import FiredRule

from .conftest import FakeModel, answer

LAZY_BLOCK = """## Skills (mandatory)

Before replying: scan available skills below.

<available_skills>
<skill>
  <name>code-review</name>
  <description>Reviews code changes.</description>
</skill>
</available_skills>"""


def resolution_with_rule() -> Resolution:
    return Resolution(
        skills=(SkillSummary("code-review", "Reviews code changes.", 1),),
        prompt_block=LAZY_BLOCK,
        instructions=("For this request, you MUST call read_skill first.",),
        fired_rules=(FiredRule(id=1, name="review", why="pattern 'review' matched", skills=("code-review",)),),
    )


def test_sections_follow_the_canonical_order(harness, store):
    store.add("code-review", "SECRET BODY TEXT", tools=("file_read",))
    model = FakeModel([answer("A complete and helpful answer that is long enough to stand on its own.")])

    harness.run("please review", model, resolution=resolution_with_rule(), memory_summary="We talked about app.py.")

    event = harness.trace.of("llm_call")[0]
    assert event["sections"] == [
        "base",
        "memory",
        "tools",
        "skills",
        "environment",
        "response_format",
        "instructions",
    ]
    prompt = event["system_prompt"]
    positions = [
        prompt.index(marker)
        for marker in (
            "Skill Registry assistant",
            "## Conversation memory",
            "## Tools",
            "## Skills (mandatory)",
            "## Environment",
            "## Response language and format",
            "## Instruction for this request",
        )
    ]
    assert positions == sorted(positions)
    assert prompt.rstrip().endswith("you MUST call read_skill first.")


def test_forced_prompt_puts_mandatory_block_after_memory_and_reminder_last(harness, store):
    store.add("code-review", "Step one: read the diff.", tools=("file_read",))
    model = FakeModel([answer("Reviewed everything carefully and found nothing worth reporting here.")])

    harness.run("/code-review app.py", model, resolution=resolution_with_rule(), memory_summary="earlier")

    event = harness.trace.of("llm_call")[0]
    assert event["sections"] == [
        "base",
        "memory",
        "mandatory_skill",
        "tools",
        "environment",
        "response_format",
        "instructions",
        "skill_reminder",
    ]
    prompt = event["system_prompt"]
    assert "<available_skills>" not in prompt, "the skills listing is omitted when a skill is forced"
    assert '<mandatory-skill name="code-review" version="1">' in prompt
    assert "Step one: read the diff." in prompt
    assert prompt.endswith(
        '<skill-reminder priority="highest">\nRemember: You are executing forced skill "/code-review". '
        "Follow the <mandatory-skill> instructions above precisely. "
        "Use ONLY the declared tools: abort, todowrite, todoread, file_read.\n</skill-reminder>"
    )


def test_skills_are_listed_lazily_without_their_bodies(harness, store):
    store.add("code-review", "SECRET BODY TEXT")
    model = FakeModel([answer("A complete and helpful answer that is long enough to stand on its own.")])

    result = harness.run("hello there", model, resolution=resolution_with_rule())

    prompt = harness.trace.of("llm_call")[0]["system_prompt"]
    assert "<available_skills>" in prompt
    assert "SECRET BODY TEXT" not in prompt
    assert result.offered == ["code-review"]


def test_tools_section_lists_the_offered_tools(harness):
    model = FakeModel([answer("A complete and helpful answer that is long enough to stand on its own.")])

    harness.run("hi", model)

    prompt = harness.trace.of("llm_call")[0]["system_prompt"]
    assert "- read_skill: Read a skill's full SKILL.md" in prompt
    assert "- calculator: " in prompt
