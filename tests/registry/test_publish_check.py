"""What a publish checks of a SKILL.md (`skill_md_check`): a field the fallback read as text is
refused unless the author accepts the reading; imports take it as read; names that cannot be
stored are errors, the same in the check and at publish."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from registry.errors import InvalidSkill, LenientReadingRefused
from registry.models import Skill, SkillVersion
from registry.services.skills import (
    skill_import_path,
    skill_md_check,
    skill_version_publish,
    skill_version_revise,
    skills_import_tree,
)
from registry.skillformat.bundle import bundle_from_parts
from registry.skillformat.skillmd import MAX_ISSUES, validate_skill_md

# tags is missing its `]`, so the field-by-field reading takes the triggers line into it.
UNCLOSED_TAGS = """---
name: release-checklist
description: Walk through the release checklist before tagging.
tags: [release, checklist
triggers: [task_match, explicit_command]
---
# Release checklist

1. Run the tests.
"""
AS_TEXT = "[release, checklist triggers: [task_match, explicit_command]"


def _publish(text: str, **options):
    return skill_version_publish(bundle=bundle_from_parts(text.encode(), []), **options)


def test_the_unclosed_list_is_an_error_on_its_line_that_names_the_lines_it_took():
    check = skill_md_check(skill_md=UNCLOSED_TAGS)

    [error] = check.errors
    assert (error.line, error.field, error.fallback) == (4, "tags", True)
    assert "not valid YAML" in error.message and "lines 4-5" in error.message
    assert "accept_lenient" in error.message and check.parsed is None
    assert check.needs_acceptance
    assert check.reading is not None and check.reading.frontmatter["tags"] == AS_TEXT


@pytest.mark.django_db
def test_publish_refuses_it_with_the_line_and_what_would_be_stored():
    with pytest.raises(LenientReadingRefused) as refused:
        _publish(UNCLOSED_TAGS)

    assert refused.value.status == 400 and refused.value.line == 4
    assert refused.value.detail.startswith("Line 4: `tags` is not valid YAML")
    assert refused.value.extra["read_as"]["tags"] == AS_TEXT
    assert not Skill.objects.exists()


@pytest.mark.django_db
def test_publish_with_the_reading_accepted_stores_it_with_its_warning():
    result = _publish(UNCLOSED_TAGS, accept_lenient=True)

    version = result.version
    assert result.created and version.triggers == []
    assert version.tags == ["release", "checklist triggers: [task_match", "explicit_command"]
    assert version.skill_md == UNCLOSED_TAGS
    assert any(w["line"] == 4 and "not valid YAML" in w["message"] for w in version.warnings)


@pytest.mark.django_db
def test_an_unquoted_colon_in_a_description_needs_accepting_too():
    text = "---\nname: colon-skill\ndescription: Use when: the user asks\n---\nBody\n"

    with pytest.raises(LenientReadingRefused) as refused:
        _publish(text)
    assert refused.value.line == 3 and "description" in refused.value.fields

    assert _publish(text, accept_lenient=True).version.description == "Use when: the user asks"


@pytest.mark.django_db
def test_a_real_error_beside_a_fallback_reading_is_plain_invalid_skill_and_accepting_does_not_help():
    text = "---\nname: My Skill!\ndescription: Use when: asked\n---\n"

    for accept in (False, True):
        with pytest.raises(InvalidSkill) as refused:
            _publish(text, accept_lenient=accept)
        assert type(refused.value) is InvalidSkill
        assert refused.value.line == 2 and "cannot be stored" in refused.value.fields["name"]


@pytest.mark.django_db
def test_import_and_sync_of_a_folder_take_the_reading_with_lined_warnings(tmp_path: Path):
    folder = tmp_path / "release-checklist"
    folder.mkdir()
    (folder / "SKILL.md").write_text(UNCLOSED_TAGS)

    version = skill_import_path(path=folder, source="workspace").version
    tree = skills_import_tree(root=tmp_path, source="user")

    assert version.frontmatter["tags"] == AS_TEXT
    assert any(w["line"] == 4 for w in version.warnings)
    assert tree.failed == [] and len(tree.published) == 1


@pytest.mark.django_db
def test_a_file_change_keeps_the_accepted_reading_but_a_changed_text_needs_accepting_again(tmp_path: Path):
    skill = _publish(UNCLOSED_TAGS, accept_lenient=True).skill

    with_file = skill_version_revise(skill=skill, base_version=1, add_files=[("notes.txt", b"hi\n")])
    assert with_file.created and with_file.version.number == 2

    with pytest.raises(LenientReadingRefused):
        skill_version_revise(skill=skill, base_version=2, skill_md=UNCLOSED_TAGS + "\n2. Tag.\n")
    assert SkillVersion.objects.filter(skill=skill).count() == 2


@pytest.mark.parametrize("name", ["My Skill!", "café", "../etc/passwd", "-lead-dash"])
def test_a_name_that_cannot_be_stored_is_an_error_in_the_check(name):
    check = skill_md_check(skill_md=f"---\nname: {name}\ndescription: d\n---\n")

    assert [(e.line, e.field) for e in check.errors] == [(2, "name")]
    assert "cannot be stored" in check.errors[0].message


def test_another_name_than_the_skill_being_edited_is_an_error_in_the_check():
    check = skill_md_check(skill_md="---\nname: other\ndescription: d\n---\n", expected_name="mine")

    assert [(e.line, e.field) for e in check.errors] == [(2, "name")]
    assert "being published to 'mine'" in check.errors[0].message


def test_a_fallback_reading_past_the_warning_limit_still_counts():
    # Many warnings first (unknown fields), then a field the fallback reads as text.
    fields = "".join(f"x{n}: 1\n" for n in range(MAX_ISSUES + 5))
    text = f"---\nname: many\ndescription: d\n{fields}late: [unclosed\n---\n"

    issues = validate_skill_md(text)

    assert sum(issue.fallback for issue in issues) == 1 and issues[-1].fallback
    assert skill_md_check(skill_md=text).needs_acceptance


def test_skills_validate_says_which_warnings_a_publish_asks_to_accept(tmp_path: Path):
    folder = tmp_path / "release-checklist"
    folder.mkdir()
    (folder / "SKILL.md").write_text(UNCLOSED_TAGS)
    out = StringIO()

    call_command("skills", "validate", str(folder), stdout=out)

    [line] = [row for row in out.getvalue().splitlines() if "accept_lenient" in row]
    assert line.startswith(f"{folder}:4: warning: `tags` is not valid YAML")
