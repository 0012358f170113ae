"""Tags as authors write them: `tags: [csv, data]`, `tags: csv, data`, and the same under
`metadata` (the Agent Skills spec's home for extensions, a map of text) all give `csv` and
`data`; versions stored before that are read the same way where tags are shown and filtered."""

from __future__ import annotations

import pytest

from registry.models import SkillVersion
from registry.skillformat.skill_templates import KINDS, skill_template
from registry.skillformat.skillmd import parse_skill_md, tag_list, validate_skill_md
from registry.templatetags.console import tag_chips

SPELLINGS = [
    "tags: [csv, data]",
    "tags: csv, data",
    'tags: ["csv", "data"]',
    "tags: '[csv, data]'",
    "tags:\n  - csv\n  - data",
    "metadata:\n  tags: csv, data",
    "metadata:\n  tags: '[csv, data]'",
    'metadata:\n  tags: \'["csv", "data"]\'',
    "metadata:\n  tags: [csv, data]",  # a list under metadata: kept as JSON text, read as tags
    "tags: csv\nmetadata:\n  tags: [csv, data]",  # both homes: one list, no repeats
]


def _skill(fields: str) -> str:
    return f"---\nname: tagged\ndescription: Tidy CSV files.\n{fields}\n---\n# Tagged\n"


@pytest.mark.parametrize("fields", SPELLINGS)
def test_every_spelling_gives_the_tags_csv_and_data(fields):
    assert parse_skill_md(_skill(fields)).tags == ["csv", "data"]


@pytest.mark.parametrize(
    "stored, shown",
    [
        (['["csv"', '"data"]'], ["csv", "data"]),  # metadata's JSON text split on commas
        (["[csv", "data]"], ["csv", "data"]),
        (["csv", "data"], ["csv", "data"]),
        (["'quoted'", "a, b"], ["quoted", "a", "b"]),
        (["[]", " ", '""'], []),
        (["c++", "node.js"], ["c++", "node.js"]),
    ],
)
def test_stored_tags_are_shown_as_their_words(stored, shown):
    assert tag_list(stored) == shown
    assert tag_chips(stored) == shown


def test_metadata_stays_a_map_of_text():
    parsed = parse_skill_md(_skill("metadata:\n  tags: csv, data\n  version: '1.0'"))
    assert parsed.metadata == {"tags": "csv, data", "version": "1.0"}
    assert parsed.tags == ["csv", "data"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_new_skill_template_shows_where_tags_go(kind):
    text = skill_template(kind, name="my-skill").skill_md
    lines = text.split("\n")
    hint = next(n for n, line in enumerate(lines) if line.strip().startswith("# tags:"))
    metadata = lines.index("metadata:")
    assert metadata < hint and all(line.startswith("  ") for line in lines[metadata + 1 : hint + 1])
    assert "csv, data" in lines[hint]
    parsed = parse_skill_md(text)
    assert parsed.tags == [] and "tags" not in parsed.metadata  # a hint, not a placeholder tag
    assert not [issue for issue in validate_skill_md(text) if issue.level == "error"]


@pytest.mark.django_db
def test_the_api_stores_and_filters_tags_written_under_metadata(api):
    text = _skill("metadata:\n  tags: [csv, data]").replace("name: tagged", "name: meta-tagged")
    created = api.post("/api/v1/skills", {"skill_md": text}, format="json")
    assert created.status_code == 201, created.content

    assert SkillVersion.objects.get(skill__name="meta-tagged").tags == ["csv", "data"]
    item = api.get("/api/v1/skills/meta-tagged").json()
    assert item["tags"] == ["csv", "data"]
    assert [s["name"] for s in api.get("/api/v1/skills", {"tag": "data"}).json()["results"]] == ["meta-tagged"]


@pytest.mark.django_db
def test_a_version_stored_with_bracketed_tags_is_found_by_its_tag(api):
    api.post("/api/v1/skills", {"skill_md": _skill("tags: csv")}, format="json")
    SkillVersion.objects.update(tags=['["csv"', '"data"]'])  # as versions published before were stored

    assert [s["name"] for s in api.get("/api/v1/skills", {"tag": "data"}).json()["results"]] == ["tagged"]
    assert [s["name"] for s in api.get("/api/v1/skills", {"tag": "csv"}).json()["results"]] == ["tagged"]


@pytest.mark.parametrize(
    "fields, line, bracket",
    [
        ("metadata:\n  tags: [csv, data\n  author: Ada\nlicense: MIT", 5, "["),
        ("tags: [csv, data\nlicense: MIT", 4, "["),
        ("metadata: {tags: csv\nlicense: MIT", 4, "{"),
    ],
)
def test_an_unclosed_bracket_is_reported_on_the_line_it_is_on(fields, line, bracket):
    [problem] = [issue for issue in validate_skill_md(_skill(fields)) if "never closed" in issue.message]
    assert problem.line == line and problem.fallback
    assert f"the `{bracket}` on line {line} is never closed" in problem.message
