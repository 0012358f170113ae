"""`metadata.requires` (registry/skillformat/requires.py): entries read into requirements, a
malformed one an error naming it and its SKILL.md line, as part of reading the SKILL.md."""

from __future__ import annotations

import pytest

from registry.skillformat.requires import Requirement, parse_entry, parse_requires, stored_requirements
from registry.skillformat.skillmd import read_skill_md

FOLDED = """---
name: pdf-report
description: Writes a PDF report from a table.
metadata:
  tags: pdf
  requires: "skill:pdf-tools, skill:forms@production,
    skill:units@3, tool:Bash(git add:*), mcp:github, bogus"
license: MIT
---
# Report
"""


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("skill:pdf-tools", Requirement("skill", "pdf-tools")),
        ("skill:forms@production", Requirement("skill", "forms", label="production")),
        ("skill:units@3", Requirement("skill", "units", version=3)),
        ("SKILL: units @ 12", Requirement("skill", "units", version=12)),
        ("tool:Bash", Requirement("tool", "Bash")),
        ("tool:Bash(git add:*)", Requirement("tool", "Bash(git add:*)")),
        ("mcp:github", Requirement("mcp", "github")),
    ],
)
def test_each_form_of_entry_reads_as_a_requirement(entry, expected):
    assert parse_entry(entry) == (expected, "")


@pytest.mark.parametrize(
    "entry, says",
    [
        ("pdf-tools", "is not `skill:NAME`"),
        ("plugin:x", "is not `skill:NAME`"),
        ("skill:", "names no skill"),
        ("mcp:", "names no server"),
        ("skill:a b", "is not a skill name"),
        ("skill:../etc", "is not a skill name"),
        ("skill:a@", "neither a version number nor a label"),
        ("skill:a@Prod!", "neither a version number nor a label"),
        ("skill:a@0", "pins version 0"),
        ("tool:Bash(", "is not a tool name"),
        ("mcp:git hub", "is not an MCP server name"),
    ],
)
def test_a_malformed_entry_says_what_is_wrong(entry, says):
    requirement, problem = parse_entry(entry)
    assert requirement is None and says in problem


def test_requirements_keep_their_order_and_a_repeat_is_a_warning():
    requirements, problems = parse_requires("skill:a, tool:Read, , skill:a, mcp:x", line=7)
    assert [str(r) for r in requirements] == ["skill:a", "tool:Read", "mcp:x"]
    [repeat] = problems
    assert (repeat.level, repeat.line, repeat.entry) == ("warning", 7, "skill:a")


def test_a_list_kept_as_json_text_reads_like_the_comma_string():
    assert stored_requirements({"metadata": {"requires": ["skill:a", "tool:Read"]}}) == (
        Requirement("skill", "a"),
        Requirement("tool", "Read"),
    )
    assert stored_requirements({"metadata": {"requires": "skill:a, nonsense"}}) == (Requirement("skill", "a"),)
    assert stored_requirements({"metadata": "x"}) == () == stored_requirements(None)


def test_reading_the_skill_md_reports_a_malformed_entry_on_the_line_it_is_written_on():
    reading, issues = read_skill_md(FOLDED)

    assert reading is None  # an error: the SKILL.md does not publish
    [error] = [issue for issue in issues if issue.level == "error"]
    assert (error.line, error.field) == (7, "metadata.requires")
    assert "`bogus`" in error.message


def test_a_well_formed_requires_is_on_the_reading():
    reading, issues = read_skill_md(FOLDED.replace(", bogus", ""))

    assert reading is not None and not [issue for issue in issues if issue.level == "error"]
    assert [str(r) for r in reading.requires] == [
        "skill:pdf-tools",
        "skill:forms@production",
        "skill:units@3",
        "tool:Bash(git add:*)",
        "mcp:github",
    ]


def test_the_requires_line_is_found_under_metadata_even_after_other_keys():
    start = FOLDED.index("  requires:")
    text = FOLDED[:start] + "  requires: skill:x@\n" + FOLDED[FOLDED.index("license:") :]
    _, issues = read_skill_md(text)
    [error] = [issue for issue in issues if issue.level == "error"]
    assert error.line == 6 and "`skill:x@`" in error.message
