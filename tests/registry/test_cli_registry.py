"""`skills create` and `skills label`, run as a person would run them."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from registry.models import Label, LabelHistory, Skill, SkillVersion
from registry.skillformat.skillmd import parse_skill_md
from tests.factories import publish

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_create_writes_a_valid_user_prompt_skill_from_the_template():
    output = run("skills", "create", "meeting-helper", "-d", "Helps run meetings. Use when planning an agenda.")

    assert "created prompt skill meeting-helper v1 (user)" in output
    version = SkillVersion.objects.get(skill__name="meeting-helper", skill__source="user")
    parsed = parse_skill_md(version.skill_md.encode())
    assert parsed.description == "Helps run meetings. Use when planning an agenda."
    assert parsed.triggers == ["task_match", "explicit_command"]
    assert "## Steps" in parsed.body
    assert not version.files.exists()


def test_create_with_code_adds_an_executable_script_that_runs(tmp_path):
    run("skills", "create", "echoer", "--code")

    version = SkillVersion.objects.get(skill__name="echoer")
    script = version.files.get(path="scripts/skill.py")
    assert script.executable
    target = tmp_path / "skill.py"
    target.write_bytes(bytes(script.blob.content))
    result = subprocess.run([sys.executable, str(target), "hello", "world"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stdout.strip() == "hello world"
    assert "run_skill" in version.tools


def test_create_refuses_an_existing_user_skill():
    run("skills", "create", "taken")
    with pytest.raises(CommandError, match="already exists"):
        run("skills", "create", "taken")
    assert SkillVersion.objects.filter(skill__name="taken").count() == 1


def test_label_moves_and_rolls_back_with_history():
    publish("labelled", description="First.")
    publish("labelled", description="Second.")

    assert "production: -> v2" in run("skills", "label", "labelled", "production", "2")
    assert "production: v2 -> v1" in run("skills", "label", "labelled", "production", "1")

    assert Label.objects.get(name="production").version.number == 1
    assert list(LabelHistory.objects.values_list("from_version", "to_version")) == [(2, 1), (None, 2)]


def test_label_errors_are_command_errors():
    publish("strict")
    with pytest.raises(CommandError, match="no version 4"):
        run("skills", "label", "strict", "production", "4")
    with pytest.raises(CommandError, match="latest"):
        run("skills", "label", "strict", "latest", "1")
    with pytest.raises(CommandError, match="No skill named"):
        run("skills", "label", "missing", "production", "1")
    assert not Label.objects.exists()
    assert Skill.objects.count() == 1
