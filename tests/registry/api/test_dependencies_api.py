"""Dependencies over the API: `metadata.requires` checked at publish (an unknown skill a
warning, a malformed entry a 400 with its line, a cycle through the skill a 409 naming it, on
every publish path) and `GET /skills/{name}/dependencies` resolving the closure."""

from __future__ import annotations

import io
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.models import Skill, SkillVersion
from registry.services.labels import label_move
from registry.services.skills import skills_import_tree

pytestmark = pytest.mark.django_db


def requiring(name: str, requires: str = "", description: str | None = None) -> str:
    """A SKILL.md whose `metadata.requires` (line 5) is `requires`."""
    description = description or f"Does the {name} thing when asked for {name}."
    lines = ["---", f"name: {name}", f"description: {description}", "metadata:"]
    lines += [f'  requires: "{requires}"'] if requires else ["  tags: plain"]
    return "\n".join([*lines, "---", f"# {name}", ""])


def post(api, name: str, requires: str = "", **more):
    """Publish `name` (a new version when it exists)."""
    url = f"/api/v1/skills/{name}/versions" if Skill.objects.filter(name=name).exists() else "/api/v1/skills"
    return api.post(url, {"skill_md": requiring(name, requires, **more)}, format="json")


def label(name: str, label: str, number: int) -> None:
    label_move(skill=Skill.objects.get(name=name), label=label, version_number=number)


def test_an_unknown_skill_is_a_warning_on_the_entry_line_and_the_version_publishes(api):
    response = post(api, "report", "tool:Bash, skill:pdf-tools")

    assert response.status_code == 201, response.content
    [warning] = [w for w in response.json()["warnings"] if w["field"] == "metadata.requires"]
    assert warning["line"] == 5 and "`skill:pdf-tools`: no enabled skill is named 'pdf-tools'" in warning["message"]


def test_a_missing_label_or_version_is_a_warning_too(api):
    post(api, "pdf-tools")
    response = post(api, "report", "skill:pdf-tools@stable, skill:pdf-tools@7")

    messages = [w["message"] for w in response.json()["warnings"] if w["field"] == "metadata.requires"]
    assert response.status_code == 201
    assert any("has no label 'stable'" in m for m in messages) and any("has no version 7" in m for m in messages)


def test_a_malformed_entry_is_a_400_naming_it_and_its_line(api):
    response = post(api, "report", "skill:pdf-tools, pdf-tools@2")

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_skill" and body["line"] == 5
    assert "`pdf-tools@2` is not `skill:NAME`" in body["detail"] and "metadata.requires" in body["fields"]
    assert not Skill.objects.exists()


def test_a_skill_requiring_itself_is_a_409(api):
    response = post(api, "report", "skill:report")

    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "requirement_cycle" and body["line"] == 5
    assert "report → report" in body["detail"]
    assert not Skill.objects.exists()


def test_a_cycle_through_others_is_a_409_naming_the_path_and_nothing_is_written(api):
    post(api, "a")
    assert post(api, "b", "skill:c").status_code == 201
    assert post(api, "c", "skill:a").status_code == 201

    response = post(api, "a", "skill:b", description="Second version of a, now needing b.")

    assert response.status_code == 409 and response.json()["error"] == "requirement_cycle"
    assert "a → b → c → a" in response.json()["detail"]
    assert SkillVersion.objects.filter(skill__name="a").count() == 1


def test_a_cycle_only_at_a_label_is_refused_naming_the_label(api):
    post(api, "a")
    post(api, "b", "skill:a")
    post(api, "b", description="Second version of b, which no longer needs a.")
    label("b", "staging", 1)

    response = post(api, "a", "skill:b", description="Second version of a, now needing b.")

    assert response.status_code == 409 and response.json()["error"] == "requirement_cycle"
    assert "a → b → a (at label 'staging')" in response.json()["detail"]


def test_an_entry_pinned_to_a_version_without_the_cycle_publishes(api):
    post(api, "a")
    post(api, "b")
    post(api, "b", "skill:a", description="Second version of b, which needs a.")

    assert post(api, "a", "skill:b@1", description="Second version of a, needing b 1.").status_code == 201


def test_a_zip_body_and_a_folder_import_are_held_to_the_cycle_rule(api, tmp_path: Path):
    post(api, "a", "skill:b")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("b/SKILL.md", requiring("b", "skill:a"))
    zipped = api.post("/api/v1/skills", buffer.getvalue(), content_type="application/zip")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "SKILL.md").write_text(requiring("b", "skill:a"))

    report = skills_import_tree(root=tmp_path, source="workspace")

    assert zipped.status_code == 409 and zipped.json()["error"] == "requirement_cycle"
    assert not report.published and any("b → a → b" in message for _, message in report.failed)


def test_the_dependencies_endpoint_resolves_the_closure_at_the_label(api):
    post(api, "fonts")
    post(api, "pdf-tools", "skill:fonts, tool:Bash")
    post(api, "report", "skill:pdf-tools, skill:charts@stable, mcp:github, tool:Bash")
    for name in ("fonts", "pdf-tools", "report"):
        label(name, "production", 1)

    body = api.get("/api/v1/skills/report/dependencies", {"label": "production"}).json()

    assert (body["name"], body["version"], body["label"]) == ("report", 1, "production")
    assert [(d["name"], d["version"], d["required_by"], d["why"], d["missing"]) for d in body["skills"]] == [
        ("pdf-tools", 1, "report", "required by report", False),
        ("charts", None, "report", "required by report (skill:charts@stable)", True),
        ("fonts", 1, "pdf-tools", "required by pdf-tools", False),
    ]
    assert body["tools"] == [{"name": "Bash", "required_by": ["report", "pdf-tools"]}]
    assert body["mcp_servers"] == [{"name": "github", "required_by": ["report"]}]
    assert body["requires"][1] == {"kind": "skill", "name": "charts", "label": "stable", "version": None}


def test_the_dependencies_endpoint_says_404_for_a_label_the_skill_lacks_and_400_for_a_bad_label(api):
    post(api, "report")

    missing = api.get("/api/v1/skills/report/dependencies", {"label": "staging"})
    bad = api.get("/api/v1/skills/report/dependencies", {"label": "Not A Label"})
    unknown = api.get("/api/v1/skills/nothing/dependencies")

    assert missing.status_code == 404 and "has no label 'staging'" in missing.json()["detail"]
    assert bad.status_code == 400 and "label" in bad.json()["fields"]
    assert unknown.status_code == 404
    assert api.get("/api/v1/skills/report/dependencies").json()["skills"] == []


def test_the_cli_validate_warns_of_an_unknown_skill_and_fails_on_a_malformed_entry_with_its_line(api, tmp_path):
    post(api, "pdf-tools")
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "SKILL.md").write_text(requiring("report", "skill:pdf-tools, skill:charts"))
    out = StringIO()

    call_command("skills", "validate", str(folder), stdout=out)

    assert f"{folder}:5: warning: `skill:charts`: no enabled skill is named 'charts'" in out.getvalue()
    assert "pdf-tools" not in out.getvalue()
    (folder / "SKILL.md").write_text(requiring("report", "skill:pdf-tools, skill:"))
    out = StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("skills", "validate", str(folder), stdout=out)
    assert f"{folder}:5: error: `metadata.requires`: `skill:` names no skill." in out.getvalue()
