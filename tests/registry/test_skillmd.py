"""SKILL.md parsing, validation and rendering (registry/skillformat/skillmd.py). No database, no Django."""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.errors import InvalidSkill
from registry.skillformat.bundle import Limits
from registry.skillformat.skillmd import (
    KNOWN_FIELDS,
    KNOWN_TRIGGERS,
    MAX_ISSUES,
    STRICT_CLIENTS,
    Issue,
    ParsedSkill,
    parse_skill_md,
    render_skill_md,
    validate_skill_md,
)

# Hypothesis examples may be large; tests never assert on wall-clock time (STYLE.md).
PROPERTY = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def skill(frontmatter: str, body: str = "# Body\n") -> str:
    return f"---\n{textwrap.dedent(frontmatter).strip()}\n---\n{body}"


def warnings_for(text: str | bytes, **kwargs) -> list[Issue]:
    return list(parse_skill_md(text, **kwargs).warnings)


def beyond_portability(parsed: ParsedSkill) -> list[Issue]:
    """The warnings other than the notes on what strict clients reject (tested on their own in
    test_portability.py), for tests about parsing itself."""
    return [w for w in parsed.warnings if STRICT_CLIENTS not in w.message]


def messages(issues) -> str:
    return "\n".join(issue.message for issue in issues)


def invalid(text: str | bytes, **kwargs) -> InvalidSkill:
    with pytest.raises(InvalidSkill) as caught:
        parse_skill_md(text, **kwargs)
    return caught.value


# --- the happy path ----------------------------------------------------------------------


def test_it_parses_fields_body_and_body_line():
    parsed = parse_skill_md(
        skill(
            """
        name: summarize
        description: Summarize documents extracting key points
        version: 1.0.0
        author: Adam
        tags: [text, analysis]
        tools_required: [bash]
        enabled: true
    """,
            body="# Summarize\n\nRead the file.\n",
        ),
        folder_name="summarize",
    )

    assert isinstance(parsed, ParsedSkill)
    assert parsed.name == "summarize"
    assert parsed.description == "Summarize documents extracting key points"
    assert parsed.version == "1.0.0"
    assert parsed.author == "Adam"
    assert parsed.tags == ["text", "analysis"]
    assert parsed.tools == ["bash"]
    assert parsed.enabled is True
    assert parsed.body == "# Summarize\n\nRead the file.\n"
    assert parsed.body_line == 10
    assert beyond_portability(parsed) == []
    assert parsed.field_lines["name"] == 2 and parsed.field_lines["enabled"] == 8


def test_well_known_extension_fields_give_no_warnings_beyond_portability():
    parsed = parse_skill_md(
        skill("""
        name: tool-call-error-recovery
        description: Recover from tool-call errors.
        license: MIT
        compatibility: Needs bash
        metadata: {source: "https://example.com"}
        allowed-tools: Read Grep
        version: 1.0.0
        author: Adam (Architect)
        created: 2025-12-30
        last_updated: 2025-12-31
        dependencies: []
        triggers: [tool_call_error, turn_start]
        tags: [error-handling]
        tools: [bash]
        tools_required: [bash]
        enabled: false
        disable-model-invocation: true
        user-invocable: false
    """)
    )

    assert beyond_portability(parsed) == []
    assert parsed.created == "2025-12-30" and parsed.last_updated == "2025-12-31"
    assert parsed.frontmatter["created"] == "2025-12-30"
    assert parsed.enabled is False
    assert parsed.disable_model_invocation is True
    assert parsed.user_invocable is False
    assert parsed.license == "MIT"
    assert parsed.compatibility == "Needs bash"
    assert parsed.metadata == {"source": "https://example.com"}
    assert parsed.triggers == ["tool_call_error", "turn_start"]


def test_defaults_when_optional_fields_are_absent():
    parsed = parse_skill_md(skill("name: a\ndescription: b"))

    assert (parsed.tags, parsed.triggers, parsed.tools, parsed.dependencies) == ([], [], [], [])
    assert parsed.version is None and parsed.author is None and parsed.license is None
    assert parsed.enabled is True and parsed.user_invocable is True and parsed.disable_model_invocation is False
    assert parsed.metadata == {}


def test_frontmatter_is_json_serialisable_with_dates_as_iso_strings():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: b
        created: 2025-12-30
        stamp: 2025-12-30 10:20:30
        binary: !!binary aGVsbG8=
        huge: 123456789012345678901234567890
        odd: .inf
        set: !!set {x, y}
        1: one
        true: yes
    """)
    )

    assert json.loads(json.dumps(parsed.frontmatter, allow_nan=False)) == parsed.frontmatter
    assert parsed.frontmatter["created"] == "2025-12-30"
    assert parsed.frontmatter["stamp"] == "2025-12-30T10:20:30"
    assert parsed.frontmatter["huge"] == "123456789012345678901234567890"
    assert parsed.frontmatter["set"] == ["x", "y"]
    assert parsed.frontmatter["1"] == "one" and parsed.frontmatter["true"] is True


def test_version_keeps_its_spelling_when_yaml_reads_a_number():
    assert parse_skill_md(skill("name: a\ndescription: b\nversion: 1.10")).version == "1.10"
    assert parse_skill_md(skill("name: a\ndescription: b\nversion: 2")).version == "2"
    assert parse_skill_md(skill("name: a\ndescription: b\nversion: '1.0.0'")).version == "1.0.0"


def test_tools_are_the_union_of_tools_tools_required_and_allowed_tools():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: b
        tools: [bash, read_file]
        tools_required: bash, grep
        allowed-tools: Read, Bash(git add:*) Grep
    """)
    )

    assert parsed.tools == ["bash", "read_file", "grep", "Read", "Bash(git add:*)", "Grep"]
    assert parsed.allowed_tools == ["Read", "Bash(git add:*)", "Grep"]


def test_tags_and_dependencies_accept_a_comma_separated_string():
    parsed = parse_skill_md(skill("name: a\ndescription: b\ntags: sql, query , sql\ndependencies: requests>=2, pyyaml"))

    assert parsed.tags == ["sql", "query"]
    assert parsed.dependencies == ["requests>=2", "pyyaml"]


def test_unknown_trigger_values_are_warnings_naming_them():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: b
        triggers:
          - tool_call_error
          - missing_parameter
    """)
    )

    assert parsed.triggers == ["tool_call_error", "missing_parameter"]
    [warning] = beyond_portability(parsed)
    assert warning.field == "triggers" and warning.line == 4
    assert "missing_parameter" in warning.message and "tool_call_error" not in warning.message.split("(")[0]
    assert all(name in warning.message for name in KNOWN_TRIGGERS)


def test_unknown_keys_are_kept_with_a_warning_naming_the_key():
    parsed = parse_skill_md(skill("name: a\ndescription: b\ncategory: workflow\nparent: sentry-workflow"))

    assert parsed.frontmatter["category"] == "workflow"
    assert [(w.field, w.line) for w in parsed.warnings] == [("category", 4), ("parent", 5)]
    assert "`category`" in parsed.warnings[0].message


def test_booleans_written_as_text_are_read_with_a_warning():
    parsed = parse_skill_md(skill('name: a\ndescription: b\nenabled: "false"\nuser-invocable: maybe'))

    assert parsed.enabled is False
    assert parsed.user_invocable is True  # unreadable: the default
    assert [w.field for w in beyond_portability(parsed)] == ["enabled", "user-invocable"]


# --- the name and description rules ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("My_Skill", "lowercase letters, digits and hyphens"),
        ("tool_call_error_recovery", "lowercase letters, digits and hyphens"),
        ("-lead", "start or end with a hyphen"),
        ("trail-", "start or end with a hyphen"),
        ("dou--ble", "two hyphens in a row"),
        ("a" * 65, "at most 64"),
    ],
)
def test_name_deviations_are_warnings_and_the_skill_is_accepted(name, expected):
    parsed = parse_skill_md(skill(f"name: {name}\ndescription: b"))

    assert parsed.name == name
    assert expected in messages(parsed.warnings)
    assert all(w.level == "warning" and w.field == "name" and w.line == 2 for w in parsed.warnings)


def test_a_valid_name_of_64_chars_has_no_warning():
    assert warnings_for(skill(f"name: {'a' * 64}\ndescription: b")) == []


def test_name_differing_from_its_folder_is_a_warning():
    [warning] = warnings_for(skill("name: template-skill\ndescription: b"), folder_name="template")

    assert warning.field == "name"
    assert "'template'" in warning.message and "'template-skill'" in warning.message


def test_long_description_is_a_warning_not_an_error():
    description = "x" * 1068
    parsed = parse_skill_md(skill(f"name: a\ndescription: {description}"))

    assert parsed.description == description
    [warning] = parsed.warnings
    assert warning.field == "description" and "1,068" in warning.message


def test_long_compatibility_and_non_map_metadata_are_warnings():
    parsed = parse_skill_md(skill(f"name: a\ndescription: b\ncompatibility: {'c' * 501}\nmetadata: [x, y]"))

    assert {w.field for w in parsed.warnings} == {"compatibility", "metadata"}
    assert parsed.metadata == {}


def test_metadata_values_that_are_not_text_are_kept_as_json_text_with_a_warning():
    parsed = parse_skill_md(skill('name: a\ndescription: b\nmetadata: {"openclaw": {"emoji": "x"}, "n": 1}'))

    assert parsed.metadata == {"openclaw": '{"emoji": "x"}', "n": "1"}
    assert parsed.frontmatter["metadata"] == {"openclaw": {"emoji": "x"}, "n": 1}
    assert [w.field for w in beyond_portability(parsed)] == ["metadata"]


@pytest.mark.parametrize(
    ("frontmatter", "field", "line"),
    [
        ("description: b", "name", 1),
        ("name: a", "description", 1),
        ("name:\ndescription: b", "name", 2),
        ("name: '  '\ndescription: b", "name", 2),
        ("name: a\ndescription: ''", "description", 3),
        ("name: [a, b]\ndescription: b", "name", 2),
        ("name: a\ndescription: {x: 1}", "description", 3),
    ],
)
def test_missing_empty_or_non_text_name_and_description_are_errors(frontmatter, field, line):
    error = invalid(skill(frontmatter))

    assert field in error.fields
    assert error.line == line
    assert f"`{field}`" in error.detail
    assert error.status == 400 and error.code == "invalid_skill"


def test_an_error_reports_every_problem_with_lines():
    error = invalid(skill("license: MIT\nmetadata: [x]"))

    assert set(error.fields) == {"name", "description"}
    issues = error.extra["issues"]
    assert {issue["level"] for issue in issues} == {"error", "warning"}
    assert any(issue["field"] == "metadata" and issue["line"] == 3 for issue in issues)
    assert "Line 1:" in error.detail
    assert error.as_dict()["error"] == "invalid_skill"


# --- leniency: what real skills contain --------------------------------------------------


def test_flow_style_frontmatter():
    parsed = parse_skill_md("---\n{name: flow, description: 'All in one line', tags: [a, b]}\n---\nbody")

    assert (parsed.name, parsed.description, parsed.tags) == ("flow", "All in one line", ["a", "b"])


def test_json_like_metadata_with_trailing_commas():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: b
        metadata: {
          "source": "https://github.com/x/y",
          "emoji": "🦞",
        }
    """)
    )

    assert parsed.metadata == {"source": "https://github.com/x/y", "emoji": "🦞"}
    assert beyond_portability(parsed) == []


def test_an_unquoted_colon_in_a_value_is_read_by_the_fallback_with_a_warning_naming_the_line():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: Use when: the user asks for a: thing
        tags: [x]
    """)
    )

    assert parsed.description == "Use when: the user asks for a: thing"
    assert parsed.tags == ["x"]
    [warning] = beyond_portability(parsed)
    assert (warning.line, warning.field) == (3, "description")
    assert "quotes" in warning.message


def test_fallback_keeps_yaml_meaning_of_the_fields_that_are_valid():
    parsed = parse_skill_md(
        skill("""
        name: a
        description: `code` first
        enabled: false
        metadata:
          k: v
        tags:
        - one
        - two
    """)
    )

    assert parsed.description == "`code` first"
    assert parsed.enabled is False
    assert parsed.metadata == {"k": "v"}
    assert parsed.tags == ["one", "two"]


def test_crlf_line_endings_and_a_bom():
    data = "\ufeff---\r\nname: a\r\ndescription: b\r\n---\r\n# Title\r\ntext\r\n".encode()

    parsed = parse_skill_md(data)

    assert (parsed.name, parsed.description) == ("a", "b")
    assert parsed.body == "# Title\ntext\n"
    assert parsed.body_line == 5
    assert parsed.raw.encode("utf-8") == data  # raw keeps the BOM and CRLF: it is the source of truth


def test_a_tab_used_for_indentation_is_a_warning_naming_its_line():
    parsed = parse_skill_md(skill("name: a\ndescription: b\nmetadata:\n\tsource: x"))

    assert parsed.metadata == {"source": "x"}
    [warning] = parsed.warnings
    assert warning.field == "metadata"
    assert "tab" in warning.message and "line 5" in warning.message


def test_a_tab_after_the_colon_is_accepted():
    assert parse_skill_md(skill("name:\ta\ndescription: b")).name == "a"


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("name: first\ndescription: b\nname: second", "second"),  # valid YAML
        ("name: first\ndescription: b: c\nname: second", "second"),  # read field by field
    ],
)
def test_duplicate_keys_warn_and_the_last_one_wins(frontmatter, expected):
    parsed = parse_skill_md(skill(frontmatter))

    assert parsed.name == expected
    duplicate = [w for w in parsed.warnings if "more than once" in w.message]
    assert [(w.field, w.line) for w in duplicate] == [("name", 4)]
    assert "first on line 2" in duplicate[0].message


def test_blank_lines_before_the_frontmatter_are_a_warning():
    parsed = parse_skill_md("\n\n---\nname: a\ndescription: b\n---\nbody")

    assert parsed.field_lines["name"] == 4
    assert parsed.body_line == 7
    assert "blank line" in messages(parsed.warnings)


def test_a_document_end_marker_closes_the_frontmatter():
    assert parse_skill_md("---\nname: a\ndescription: b\n...\nbody").body == "body"


def test_plain_scalar_name_that_yaml_reads_as_a_number_is_text_with_a_warning():
    parsed = parse_skill_md(skill("name: 2024\ndescription: b"))

    assert parsed.name == "2024"
    assert any(w.field == "name" and "Quote it" in w.message for w in parsed.warnings)


def test_yaml_aliases_within_bounds_are_fine():
    parsed = parse_skill_md(
        skill("name: a\ndescription: b\nbase: &base {x: 1}\nother: *base\nmerged: {<<: *base, y: 2}")
    )

    assert parsed.frontmatter["other"] == {"x": 1}
    assert parsed.frontmatter["merged"] == {"x": 1, "y": 2}


# --- errors ------------------------------------------------------------------------------


def test_no_frontmatter_is_an_error_on_line_1():
    error = invalid("# Just markdown\n\nname: a\n")

    assert error.line == 1
    assert "---" in error.detail


def test_a_missing_closing_fence_is_an_error_naming_the_opening_line():
    error = invalid("\n---\nname: a\ndescription: b\n# body\n")

    assert error.line == 2
    assert "never closed" in error.detail


def test_frontmatter_that_is_not_a_mapping_is_an_error():
    error = invalid("---\n- name\n- description\n---\n")

    assert "key: value" in error.detail


def test_empty_frontmatter_is_an_error_for_name_and_description():
    assert set(invalid("---\n---\nbody").fields) == {"name", "description"}


def test_over_the_size_limit_is_an_error():
    text = skill("name: a\ndescription: b", body="x" * 2000)

    error = invalid(text, limits=Limits(skill_md_bytes=1000))

    assert error.line == 1 and "limit" in error.detail
    assert parse_skill_md(text, limits=Limits(skill_md_bytes=len(text))).name == "a"


def test_default_size_limit_is_256_kb():
    text = skill("name: a\ndescription: b", body="x" * (256 * 1024))

    assert "262,144" in invalid(text).detail


def test_bytes_that_are_not_utf8_are_an_error_naming_the_line():
    error = invalid(b"---\nname: a\ndescription: caf\xe9\n---\n")

    assert error.line == 3
    assert "UTF-8" in error.detail


def test_a_nul_character_is_an_error():
    error = invalid(b"---\nname: a\ndescription: b\n---\n\x00\x01binary")

    assert error.line == 5
    assert "NUL" in error.detail


def test_lone_surrogates_in_text_are_an_error():
    assert "Unicode" in invalid("---\nname: a\ndescription: \udc80\n---\n").detail


# --- hostile input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system ['echo pwned']",
        "!!python/name:os.system",
        "!!python/object:__main__.Evil {}",
        "!custom thing",
    ],
)
def test_python_and_unknown_tags_are_never_constructed(tagged):
    parsed = parse_skill_md(skill(f"name: a\ndescription: b\nevil: {tagged}"))

    assert parsed.frontmatter["evil"] is None
    tag_warnings = [w for w in parsed.warnings if "tag" in w.message]
    assert tag_warnings and tag_warnings[0].line == 4


def test_a_python_tag_on_description_is_an_error_not_an_exception():
    error = invalid(skill("name: a\ndescription: !!python/object/apply:os.system ['ls']"))

    assert "description" in error.fields
    assert any("not allowed" in issue["message"] for issue in error.extra["issues"])


def billion_laughs(levels: int = 10, width: int = 10) -> str:
    lines = ["name: a", "description: b", f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return skill("\n".join(lines))


def test_an_alias_bomb_is_rejected():
    # 10**10 values if expanded: this test finishing at all is the time and memory bound.
    error = invalid(billion_laughs())

    assert "alias" in error.detail
    assert error.line >= 4


def test_an_alias_bomb_inside_one_field_read_by_the_fallback_is_rejected_too():
    bomb = "\n".join(f"  {line}" for line in billion_laughs().split("\n")[3:-3])
    text = skill(f"name: a\ndescription: b: c\nbomb:\n{bomb}")

    assert "alias" in invalid(text).detail


def test_aliases_across_fields_read_by_the_fallback_stay_plain_text():
    # Field by field, an alias to another field's anchor is undefined: its value is read as
    # text, so a bomb spread over fields cannot expand there either.
    parsed = parse_skill_md(billion_laughs().replace("description: b", "description: b: c"))

    assert parsed.frontmatter["l9"].startswith("&l9 [*l8, *l8")


def test_an_alias_bomb_is_reported_by_validate_without_raising():
    [issue] = validate_skill_md(billion_laughs())

    assert issue.level == "error"


def test_a_recursive_alias_is_rejected():
    assert "itself" in invalid(skill("name: a\ndescription: b\nloop: &loop [*loop]")).detail


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting_is_rejected(opener):
    closer = "]" if opener == "[" else "}"
    deep = opener * 10_000 + closer * 10_000

    error = invalid(skill(f"name: a\ndescription: b\ndeep: {deep}"))

    assert "nested" in error.detail
    assert error.line == 4


def test_deep_nesting_through_aliases_is_rejected():
    lines = ["name: a", "description: b", "l0: &l0 [x]"]
    lines += [f"l{n}: &l{n} [*l{n - 1}]" for n in range(1, 80)]

    assert "nested" in invalid(skill("\n".join(lines))).detail


def test_block_nesting_within_the_limit_is_fine():
    nested = "".join(f"{'  ' * depth}k{depth}:\n" for depth in range(20)) + "  " * 20 + "leaf: 1"

    assert parse_skill_md(skill(f"name: a\ndescription: b\n{nested}")).frontmatter["k0"]["k1"]


def test_an_integer_with_thousands_of_digits_does_not_crash():
    parsed = parse_skill_md(skill(f"name: a\ndescription: b\nversion: {'9' * 5000}"))

    assert parsed.version == "9" * 5000


def test_thousands_of_warnings_are_capped():
    fields = "\n".join(f"unknown{n}: x" for n in range(MAX_ISSUES + 50))

    issues = validate_skill_md(skill(f"name: a\ndescription: b\n{fields}"))

    assert len(issues) == MAX_ISSUES + 1
    assert "50 more warnings" in issues[-1].message


def test_control_characters_in_the_frontmatter_are_read_by_the_fallback():
    parsed = parse_skill_md(skill("name: a\ndescription: bell \x07 here"))

    assert parsed.description == "bell \x07 here"
    assert "U+0007" in messages(parsed.warnings)


# --- validate_skill_md -------------------------------------------------------------------


def test_validate_returns_errors_and_warnings_sorted_by_line():
    issues = validate_skill_md(skill("name: My_Skill\ncategory: x"), folder_name="my-skill")

    assert [(i.level, i.field) for i in issues] == [
        ("error", "description"),
        ("warning", "name"),
        ("warning", "name"),
        ("warning", "category"),
    ]
    assert [i.line for i in issues] == sorted(i.line for i in issues)


def test_validate_of_a_good_skill_is_empty():
    assert validate_skill_md(skill("name: a\ndescription: b")) == []


# --- render_skill_md ---------------------------------------------------------------------


def test_render_writes_a_skill_that_parses_back():
    frontmatter = {
        "name": "demo",
        "description": "Line one.\nLine two: with a colon.",
        "version": "1.0",
        "created": "2025-12-30",
        "tags": ["a", "b"],
        "enabled": True,
        "metadata": {"emoji": "🦞", "yes": "no", "empty": "null"},
    }
    body = "# Demo\n\n---\n\nMore.\n"

    text = render_skill_md(frontmatter, body)
    parsed = parse_skill_md(text)

    assert text.startswith("---\nname: demo\ndescription: |-\n  Line one.\n")
    assert "🦞" in text  # readable, not escaped
    assert parsed.frontmatter == frontmatter
    assert list(parsed.frontmatter) == list(frontmatter)
    assert parsed.body == body
    assert beyond_portability(parsed) == []


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@PROPERTY
@given(
    name=st.text(min_size=1).filter(lambda s: s.strip() == s and s.strip()),
    description=st.text(min_size=1).filter(lambda s: s.strip() == s and s.strip()),
    # Known fields have types of their own (license is text, tags a list, ...): a value of another
    # type rightly gets a warning there. Extension keys take any JSON value without one.
    extra=st.dictionaries(st.text().filter(lambda k: k not in KNOWN_FIELDS), json_values, max_size=5),
    body=st.text().map(lambda s: s.replace("\r", "").replace("\x00", "")),
)
def test_render_then_parse_gives_back_frontmatter_and_body(name, description, extra, body):
    frontmatter = {"name": name, "description": description, **extra}

    parsed = parse_skill_md(render_skill_md(frontmatter, body), limits=Limits(skill_md_bytes=10**7))

    assert parsed.frontmatter == frontmatter
    assert parsed.body == body
    # No complaint about the YAML itself. A warning may quote the name ("`name` ':tab' should
    # use only lowercase ..."), so the name and description are taken out before looking.
    quoted = [w.message.replace(name, "").replace(description, "") for w in parsed.warnings]
    assert not [message for message in quoted if "YAML" in message or "tab" in message]


# --- properties: never anything but ParsedSkill or InvalidSkill --------------------------

YAMLISH = st.sampled_from(
    [
        "name",
        "description",
        "metadata",
        "tags",
        "triggers",
        "enabled",
        "version",
        "allowed-tools",
        ":",
        ": ",
        "-",
        "- ",
        "---",
        "...",
        "{",
        "}",
        "[",
        "]",
        ",",
        "&a",
        "*a",
        "&b ",
        "*b",
        "!!python/object:x",
        "!!binary",
        "!tag",
        "'",
        '"',
        "|",
        ">",
        "#",
        "\t",
        " ",
        "  ",
        "\n",
        "\r\n",
        "\r",
        "\ufeff",
        "\x85",
        "\u2028",
        "1.10",
        "2025-12-30",
        "yes",
        "~",
        "null",
        "=",
        "<<",
        "%YAML 1.1",
        "\\",
        "é",
        "😀",
        "\x07",
        "9" * 30,
    ]
)
yamlish_text = st.lists(YAMLISH, max_size=60).map("".join)
frontmatter_documents = st.builds(
    lambda pre, fm, body: f"{pre}---\n{fm}\n---\n{body}",
    st.sampled_from(["", "\ufeff", "\n"]),
    yamlish_text,
    st.text(max_size=20),
)


def parses_or_raises_invalid_skill(data) -> None:
    try:
        parsed = parse_skill_md(data, folder_name="x")
    except InvalidSkill as exc:
        assert exc.detail and exc.line is not None and exc.line >= 1
    else:
        assert parsed.name.strip() and parsed.description.strip()
        json.dumps(parsed.frontmatter, allow_nan=False)
        assert all(w.level == "warning" and w.line >= 1 for w in parsed.warnings)


@PROPERTY
@given(st.binary(max_size=2000))
def test_any_bytes_parse_or_raise_invalid_skill(data):
    parses_or_raises_invalid_skill(data)


@PROPERTY
@given(st.text(max_size=2000))
def test_any_text_parses_or_raises_invalid_skill(data):
    parses_or_raises_invalid_skill(data)


@PROPERTY
@given(frontmatter_documents)
def test_any_yaml_looking_frontmatter_parses_or_raises_invalid_skill(data):
    parses_or_raises_invalid_skill(data)


@PROPERTY
@given(st.lists(st.tuples(st.sampled_from(["name", "description", "tags", "metadata", "x"]), yamlish_text), max_size=6))
def test_any_key_value_lines_parse_or_raise_invalid_skill(pairs):
    parses_or_raises_invalid_skill("---\n" + "\n".join(f"{k}: {v}" for k, v in pairs) + "\n---\n")


@PROPERTY
@given(st.one_of(st.binary(max_size=500), st.text(max_size=500), frontmatter_documents))
def test_validate_never_raises(data):
    issues = validate_skill_md(data)

    assert all(issue.level in ("error", "warning") and issue.line >= 1 and issue.message for issue in issues)
    errors = [issue for issue in issues if issue.level == "error"]
    if errors:
        with pytest.raises(InvalidSkill):
            parse_skill_md(data)
    else:
        assert parse_skill_md(data).warnings == tuple(issues)
