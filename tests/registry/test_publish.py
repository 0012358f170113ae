"""skill_version_publish: what counts as a new version, and what is refused before writing."""

from __future__ import annotations

import pytest

from registry.errors import InvalidSkill, NameTaken
from registry.models import Skill, SkillSource, SkillVersion
from registry.services.skills import skill_md_publish, skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from registry.skillformat.skill_templates import SCRIPT
from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db


def publish_bundle(skill_md: str, files=()):
    return skill_version_publish(bundle=bundle_from_parts(skill_md.encode(), files))


def test_a_chmod_alone_is_a_new_version():
    text = make_skill_md("modes")
    publish_bundle(text, [("scripts/run.sh", b"echo hi\n", False)])

    result = publish_bundle(text, [("scripts/run.sh", b"echo hi\n", True)])

    assert result.created and result.version.number == 2
    assert result.version.files.get().executable


def test_identical_content_including_modes_is_not_a_new_version():
    text = make_skill_md("same-modes")
    publish_bundle(text, [("scripts/run.sh", b"echo hi\n", True)])
    result = publish_bundle(text, [("scripts/run.sh", b"echo hi\n", True)])
    assert not result.created and result.version.number == 1


@pytest.mark.parametrize("name", ["../escape", "a/b", "x" * 129, ".hidden", "sp ace"])
def test_a_name_that_cannot_be_stored_or_used_as_a_folder_is_refused(name):
    text = f"---\nname: '{name}'\ndescription: Tries to be stored.\n---\nbody\n"
    with pytest.raises(InvalidSkill) as error:
        publish_bundle(text)
    assert error.value.line == 2
    assert not Skill.objects.exists() and not SkillVersion.objects.exists()


def test_a_name_that_only_deviates_from_the_spec_is_stored_with_a_warning():
    result = publish_bundle("---\nname: My_Skill\ndescription: Uppercase and underscores.\n---\nbody\n")
    assert result.created
    assert any(w.field == "name" for w in result.warnings)


# --- skill_md_publish: the editors' publish of a SKILL.md text ------------------------------


def test_a_text_from_the_new_page_creates_a_user_skill_with_its_templates_files():
    result = skill_md_publish(skill=None, skill_md=make_skill_md("fresh"), base_version=0, template=SCRIPT)

    assert result.created and result.skill.source == SkillSource.USER and result.version.number == 1
    assert [(f.path, f.executable) for f in result.version.files.all()] == [("scripts/check.sh", True)]


def test_creating_from_the_new_page_a_user_skill_that_exists_is_refused_as_taken_whatever_its_base():
    publish("taken", files=[("scripts/run.sh", b"echo hi\n", True)])

    for base_version in (0, 1):
        with pytest.raises(NameTaken) as refused:
            skill_md_publish(skill=None, skill_md=make_skill_md("taken", body="# Mine\n"), base_version=base_version)
        assert refused.value.status == 409 and refused.value.code == "name_taken"
        assert refused.value.extra == {"name": "taken", "source": "user", "latest_version": 1}
        assert "'taken' exists (v1 by system" in refused.value.detail

    assert SkillVersion.objects.filter(skill__name="taken").count() == 1


def test_creating_a_user_skill_beside_a_workspace_one_of_that_name_is_shadowing_not_taken():
    publish("shared-name", source=SkillSource.WORKSPACE)

    result = skill_md_publish(skill=None, skill_md=make_skill_md("shared-name"))

    assert result.created and result.skill.source == SkillSource.USER and result.version.number == 1


def test_a_create_of_a_name_its_source_has_is_refused_even_with_identical_content():
    publish_bundle(make_skill_md("raced"))

    with pytest.raises(NameTaken):
        skill_version_publish(bundle=bundle_from_parts(make_skill_md("raced").encode(), ()), create=True)

    assert Skill.objects.get(name="raced").latest_version == 1
