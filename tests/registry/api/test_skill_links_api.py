"""Links inside a skill through the database and the API: stored, listed with their target,
served as the target's bytes, zipped with the link mode, exported as links by the CLI."""

from __future__ import annotations

import base64
import io
import os
import stat
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command

from registry.models import AuditLog, Skill, SkillFile, SkillVersion
from registry.skillformat.bundle import read_zip
from tests.factories import make_skill_md

pytestmark = pytest.mark.django_db

AGENTS = b"# Agents\nRun the tests first.\n"


def zip_with_links(name: str, links: dict[str, str], files: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        entries = {"SKILL.md": make_skill_md(name).encode(), "AGENTS.md": AGENTS, **(files or {})}
        for path, content in entries.items():
            info = zipfile.ZipInfo(f"{name}/{path}")
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, content)
        for path, target in links.items():
            info = zipfile.ZipInfo(f"{name}/{path}")
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def upload(api, archive: bytes):
    return api.generic("POST", "/api/v1/skills", archive, content_type="application/zip")


def test_a_zip_with_an_inside_link_is_stored_listed_served_and_zipped_as_a_link(api):
    response = upload(api, zip_with_links("linked", {"CLAUDE.md": "AGENTS.md", "docs/agents.md": "../AGENTS.md"}))
    assert response.status_code == 201, response.content

    stored = {f.path: f.link_target for f in SkillFile.objects.filter(version__skill__name="linked")}
    assert stored == {"AGENTS.md": "", "CLAUDE.md": "AGENTS.md", "docs/agents.md": "../AGENTS.md"}

    detail = api.get("/api/v1/skills/linked").json()
    listed = {f["path"]: (f["link"], f["size"]) for f in detail["files"]}
    assert listed == {
        "AGENTS.md": (None, len(AGENTS)),
        "CLAUDE.md": ("AGENTS.md", len(AGENTS)),
        "docs/agents.md": ("../AGENTS.md", len(AGENTS)),
    }
    assert api.get("/api/v1/skills/linked/versions/1").json()["files"] == detail["files"]

    served = api.get("/api/v1/skills/linked/files/docs/agents.md")
    assert served.status_code == 200 and served.content == AGENTS
    assert served["X-Skill-Link-Target"] == "../AGENTS.md"
    assert "X-Skill-Link-Target" not in api.get("/api/v1/skills/linked/files/AGENTS.md")

    zipped = api.get("/api/v1/skills/linked/bundle.zip")
    with zipfile.ZipFile(io.BytesIO(zipped.content)) as archive:
        entry = archive.getinfo("linked/CLAUDE.md")
        assert stat.S_ISLNK(entry.external_attr >> 16) and archive.read(entry) == b"AGENTS.md"
    assert read_zip(zipped.content).file("CLAUDE.md").link == "AGENTS.md"


def test_json_publish_takes_links_and_a_copy_is_a_different_version(api):
    skill_md = make_skill_md("json-linked")
    agents = {"path": "AGENTS.md", "content_base64": base64.b64encode(AGENTS).decode()}
    linked = {"skill_md": skill_md, "files": [agents, {"path": "CLAUDE.md", "link": "AGENTS.md"}]}

    versions = "/api/v1/skills/json-linked/versions"
    assert api.post("/api/v1/skills", linked, format="json").status_code == 201
    assert api.post(versions, {**linked, "base_version": 1}, format="json").status_code == 200  # identical

    copied = {"skill_md": skill_md, "files": [agents, {**agents, "path": "CLAUDE.md"}], "base_version": 1}
    response = api.post(versions, copied, format="json")
    assert response.status_code == 201 and response.json()["version"] == 2

    diff = api.get("/api/v1/skills/json-linked/diff?from=1&to=2").json()
    assert diff["files"] == [
        {
            "path": "CLAUDE.md",
            "change": "modified",
            "size_before": len(AGENTS),
            "size_after": len(AGENTS),
            "executable_before": False,
            "executable_after": False,
            "link_before": "AGENTS.md",
            "link_after": None,
            "diff": "",
        }
    ]


@pytest.mark.parametrize(
    ("links", "why"),
    [
        ({"CLAUDE.md": "../../etc/passwd"}, "leads outside the skill folder"),
        ({"CLAUDE.md": "/etc/passwd"}, "absolute target"),
        ({"a.md": "b.md", "b.md": "a.md"}, "loops"),
        ({"CLAUDE.md": "docs/x.md", "docs/x.md": "../../outside.md"}, "leads outside the skill folder"),
    ],
)
def test_a_link_that_leaves_or_loops_is_a_400_naming_the_path_and_writes_nothing(api, links, why):
    response = upload(api, zip_with_links("escaping", links))

    assert response.status_code == 400, response.content
    body = response.json()
    assert why in body["detail"] and body["fields"]["path"] == next(iter(links))
    assert not Skill.objects.filter(name="escaping").exists()
    assert not AuditLog.objects.filter(object_repr__startswith="escaping").exists()


def test_json_file_with_both_content_and_link_is_a_400(api):
    body = {
        "skill_md": make_skill_md("both"),
        "files": [{"path": "x.md", "content_base64": "eA==", "link": "SKILL.md"}],
    }

    response = api.post("/api/v1/skills", body, format="json")

    assert response.status_code == 400 and response.json()["fields"] == {"files[0]": "content_base64 or link"}


def test_cli_import_and_export_keep_links(tmp_path):
    source = tmp_path / "in" / "cli-linked"
    source.mkdir(parents=True)
    (source / "SKILL.md").write_text(make_skill_md("cli-linked"))
    (source / "AGENTS.md").write_bytes(AGENTS)
    (source / "CLAUDE.md").symlink_to("AGENTS.md")
    (source / "README.md").symlink_to("SKILL.md")  # a link to SKILL.md itself

    call_command("skills", "import", str(source), stdout=StringIO())
    call_command("skills", "export", "cli-linked", str(tmp_path / "out"), stdout=StringIO())

    out = tmp_path / "out" / "cli-linked"  # `export NAME DIR` writes DIR/NAME/
    assert os.readlink(out / "CLAUDE.md") == "AGENTS.md" and (out / "CLAUDE.md").read_bytes() == AGENTS
    assert os.readlink(out / "README.md") == "SKILL.md"
    stored = SkillVersion.objects.get(skill__name="cli-linked").files.get(path="README.md")
    assert bytes(stored.blob.content) == (source / "SKILL.md").read_bytes()
