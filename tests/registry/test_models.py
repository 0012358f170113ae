"""Database constraints hold the registry's invariants even when services are bypassed."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from registry.models import Label, Skill, SkillVersion
from tests.factories import publish

pytestmark = pytest.mark.django_db


def test_version_numbers_are_unique_per_skill():
    version = publish("uniq").version
    with pytest.raises(IntegrityError), transaction.atomic():
        SkillVersion.objects.create(
            skill=version.skill, number=1, skill_md="x", fingerprint="f", name="uniq", description="d"
        )


def test_one_label_name_per_skill_and_latest_is_never_stored():
    version = publish("labelled").version
    Label.objects.create(skill=version.skill, name="production", version=version)
    with pytest.raises(IntegrityError), transaction.atomic():
        Label.objects.create(skill=version.skill, name="production", version=version)
    with pytest.raises(IntegrityError), transaction.atomic():
        Label.objects.create(skill=version.skill, name="latest", version=version)


def test_a_name_exists_once_per_source():
    publish("twice", source="user")
    with pytest.raises(IntegrityError), transaction.atomic():
        Skill.objects.create(name="twice", source="user")


def test_a_version_stores_parsed_fields_token_counts_and_files():
    result = publish(
        "rich",
        tags=["a", "b"],
        triggers=["task_match"],
        tools=["file_read"],
        files=[("scripts/go.py", b"print(1)\n", True)],
    )
    version = result.version

    assert (version.tags, version.triggers, version.tools) == (["a", "b"], ["task_match"], ["file_read"])
    assert version.description_tokens > 0 and version.body_tokens > 0
    file = version.files.get()
    assert (file.path, file.executable, file.size, file.mode) == ("scripts/go.py", True, 9, 0o755)
    assert len(file.sha256) == 64
    assert len(version.fingerprint) == 64
