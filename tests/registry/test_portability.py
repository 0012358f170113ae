"""Portability warnings, checked against the Agent Skills reference validator.

skills-ref (`agentskills validate`) is the strictest client we know: it refuses a UTF-8 BOM,
YAML flow style and any top-level field outside the spec. The registry keeps accepting all of
these and warns instead. The verdicts below are skills-ref's own, run on the shared corpus, the
bundled skills and variants of them: every error it reports must be explained by one of our
warnings on the same line, and a skill it accepts must get no portability warning from us.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from skills_ref.validator import validate as skills_ref_validate

from registry.skillformat.bundle import find_skill_folders
from registry.skillformat.skill_templates import KINDS, skill_template
from registry.skillformat.skillmd import STRICT_CLIENTS, Issue, parse_skill_md, validate_skill_md

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("SKILL_CORPUS") or ROOT.parent / "shared" / "corpus")
BUNDLED = ROOT / "skills"


def portability(issues) -> list[Issue]:
    return [issue for issue in issues if STRICT_CLIENTS in issue.message]


def explained(error: str, issues: list[Issue]) -> bool:
    """Whether one skills-ref error is matched by our warnings (same field or same line)."""
    if error.startswith("Unexpected fields in frontmatter: "):
        named = set(error.split(": ", 1)[1].split(". Only")[0].split(", "))
        return named == {issue.field for issue in portability(issues)}
    if error.startswith("Invalid YAML in frontmatter") and "flow" in error:
        line = int(re.search(r"line (\d+)", error).group(1))
        return any(issue.line == line for issue in portability(issues))
    if error == "SKILL.md must start with YAML frontmatter (---)":
        return any(issue.line == 1 and "BOM" in issue.message for issue in portability(issues))
    if error.startswith("Description exceeds"):
        return any(issue.field == "description" and "1,024" in issue.message for issue in issues)
    if error.startswith("Directory name"):
        return any(issue.field == "name" and "folder name" in issue.message for issue in issues)
    return False


def assert_same_verdict(folder: Path) -> None:
    errors = skills_ref_validate(folder)
    issues = validate_skill_md((folder / "SKILL.md").read_bytes(), folder_name=folder.name)
    assert all(issue.level == "warning" for issue in issues), "the registry still accepts the skill"
    if not errors:
        assert portability(issues) == [], f"skills-ref accepts {folder.name}; we warned"
    for error in errors:
        assert explained(error, issues), f"skills-ref: {error!r}; ours: {[(i.line, i.message) for i in issues]}"


def corpus_folders() -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip(f"the skill corpus is missing: {CORPUS} (set SKILL_CORPUS)")
    return find_skill_folders(CORPUS)


def test_our_warnings_agree_with_skills_ref_on_the_corpus():
    folders = corpus_folders()
    verdicts = {folder.name: skills_ref_validate(folder) for folder in folders}

    for folder in folders:
        assert_same_verdict(folder)
    # The corpus has skills on both sides, so the check above can fail both ways.
    assert sum(not errors for errors in verdicts.values()) >= 60
    assert any(errors and errors[0].startswith("Unexpected fields") for errors in verdicts.values())


def test_the_reference_validator_accepts_every_bundled_skill_and_we_warn_about_none():
    folders = find_skill_folders(BUNDLED)
    assert len(folders) >= 11
    for folder in folders:
        assert skills_ref_validate(folder) == [], folder.name
        parsed = parse_skill_md((folder / "SKILL.md").read_bytes(), folder_name=folder.name)
        assert parsed.warnings == (), (folder.name, [issue.message for issue in parsed.warnings])
        # The registry's own fields are read from `metadata`: the bundled skills still fire and match.
        assert parsed.tags and parsed.triggers and parsed.tools and parsed.version, folder.name


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_new_skill_template_passes_the_reference_validator_with_no_warning(tmp_path, kind):
    template = skill_template(kind, name="my-skill")
    folder = tmp_path / "my-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(template.skill_md)

    assert skills_ref_validate(folder) == []
    parsed = parse_skill_md(template.skill_md.encode(), folder_name="my-skill")
    assert parsed.warnings == () and parsed.triggers == ["task_match", "explicit_command"]


def test_top_level_registry_fields_keep_working_with_their_warning_and_metadata_adds_to_them():
    parsed = parse_skill_md(
        b"---\nname: a\ndescription: b\ntags: [pdf]\ntriggers: [turn_start]\ntools: [file_read]\n"
        b"metadata:\n  tags: forms, pdf\n  triggers: task_match bogus\n  tools: calculator\n---\nbody\n"
    )
    assert parsed.tags == ["pdf", "forms"]
    assert parsed.triggers == ["turn_start", "task_match", "bogus"]
    assert parsed.tools == ["file_read", "calculator"]
    assert {note.field for note in portability(parsed.warnings)} == {"tags", "triggers", "tools"}
    [unknown] = [issue for issue in parsed.warnings if "does not fire" in issue.message]
    assert unknown.line == 7 and "`metadata.triggers`" in unknown.message and "bogus" in unknown.message


def variants(skill_md: bytes) -> dict[str, bytes]:
    """The three quirks, each alone, and the portable way to keep a version, on a skill's text."""
    fence, rest = skill_md.split(b"\n", 1)
    return {
        "bom": b"\xef\xbb\xbf" + skill_md,
        "version-field": fence + b"\nversion: 1.0.0\n" + rest,
        "flow-allowed-tools": fence + b"\nallowed-tools: [Read, Grep]\n" + rest,
        "flow-metadata": fence + b"\nmetadata: {origin: corpus}\n" + rest,
        "portable-version": fence + b'\nmetadata:\n  version: "1.0.0"\n' + rest,
    }


def test_each_quirk_alone_is_a_warning_where_skills_ref_rejects_and_the_portable_form_passes_both(tmp_path):
    checked = 0
    for folder in corpus_folders():
        text = (folder / "SKILL.md").read_bytes()
        if skills_ref_validate(folder) or b"\nmetadata:" in text or b"\nallowed-tools:" in text:
            continue  # variants need a skill that passes and has neither field yet
        for kind, variant in variants(text).items():
            target = tmp_path / kind / folder.name
            target.mkdir(parents=True)
            (target / "SKILL.md").write_bytes(variant)
            rejected = skills_ref_validate(target)
            assert bool(rejected) == (kind != "portable-version"), (kind, folder.name, rejected)
            assert_same_verdict(target)
        checked += 1
    assert checked >= 30


# --- the warnings themselves --------------------------------------------------------------


def test_one_warning_per_field_with_its_line_and_what_to_do():
    parsed = parse_skill_md(
        b"---\nname: api-design\ndescription: Design APIs.\nlicense: MIT\nversion: 1.0.0\nauthor: Ada\n"
        b"tags: [api, rest]\ntriggers: [task_match]\ntools: [file_read]\n---\nbody\n",
        folder_name="api-design",
    )

    notes = portability(parsed.warnings)
    # `tags: [...]` is both flow style and outside the spec: one warning, not two.
    assert [(note.field, note.line) for note in notes] == [
        ("version", 5),
        ("author", 6),
        ("tags", 7),
        ("triggers", 8),
        ("tools", 9),
    ]
    assert all("`agentskills validate`" in note.message for note in notes)
    assert 'under `metadata:` as text (`version: "1.2.0"`), read here too' in notes[0].message
    assert "`metadata:` `tools: a b`" in notes[-1].message and "`allowed-tools`" in notes[-1].message
    assert "This registry fires the skill by its triggers" in notes[3].message


def test_a_bom_is_accepted_with_a_warning_on_line_1():
    parsed = parse_skill_md(b"\xef\xbb\xbf---\nname: a\ndescription: b\n---\nbody\n")

    assert parsed.name == "a"
    [note] = portability(parsed.warnings)
    assert note.line == 1 and "byte order mark" in note.message and "without a BOM" in note.message


def test_flow_style_in_a_spec_field_names_the_line_where_it_starts():
    parsed = parse_skill_md(b"---\nname: a\ndescription: b\nmetadata:\n  origin: x\n  owners: [ann, bob]\n---\n")

    [note] = portability(parsed.warnings)
    assert (note.field, note.line) == ("metadata", 6)
    assert "flow style" in note.message
    assert parsed.metadata["owners"] == '["ann", "bob"]'  # still read (as JSON text)


def test_a_frontmatter_in_one_flow_mapping_is_one_warning_not_one_per_field():
    parsed = parse_skill_md("---\n{name: flow, description: 'All in one line', license: MIT}\n---\nbody")

    [note] = portability(parsed.warnings)
    assert note.line == 2 and note.field is None and "one `key: value` per line" in note.message


def test_an_unknown_field_gets_one_warning_that_says_both_things():
    parsed = parse_skill_md("---\nname: a\ndescription: b\ncategory: workflow\n---\n")

    [warning] = parsed.warnings
    assert warning.field == "category" and warning.line == 4
    assert "not a field this registry uses" in warning.message and STRICT_CLIENTS in warning.message


def test_flow_style_in_a_field_read_by_the_fallback_parser_is_noticed():
    # `description` has an unquoted colon, so the frontmatter is read field by field.
    parsed = parse_skill_md("---\nname: a\ndescription: Use when: asked\nallowed-tools: [Read, Grep]\n---\n")

    assert [(n.field, n.line) for n in portability(parsed.warnings)] == [("allowed-tools", 4)]
    assert parsed.allowed_tools == ["Read", "Grep"]


def test_a_portable_skill_has_no_portability_warnings():
    parsed = parse_skill_md(
        "---\nname: a\ndescription: b\nlicense: MIT\ncompatibility: Needs git\n"
        'metadata:\n  version: "1.0"\nallowed-tools: Read Grep\n---\nbody\n'
    )
    assert parsed.warnings == ()


@pytest.mark.django_db
@pytest.mark.parametrize("code", [False, True])
def test_skills_create_writes_a_skill_with_no_portability_warning(code):
    from django.core.management import call_command

    from registry.models import SkillVersion

    call_command("skills", "create", "fresh", *(["--code"] if code else []), stdout=open(os.devnull, "w"))

    version = SkillVersion.objects.get(skill__name="fresh")
    parsed = parse_skill_md(version.skill_md)
    assert portability(parsed.warnings) == []
    assert parsed.metadata == {"version": "0.1.0", "triggers": "task_match explicit_command"}
    assert parsed.triggers == ["task_match", "explicit_command"]
    assert ("run_skill" in parsed.tools) is code
