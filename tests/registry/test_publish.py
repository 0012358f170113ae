"""skill_version_publish: what counts as a new version, and what is refused before writing."""

from __future__ import annotations

import pytest

from registry.errors import InvalidSkill
from registry.models import Skill, SkillVersion
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.factories import make_skill_md

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
