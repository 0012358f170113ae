"""The Agent Skills discovery index (`/.well-known/agent-skills/`): off by default; with
DISCOVERY_LABEL, that label's enabled skills at the label's version, each with the sha256 of
exactly the bytes served, readable without a token, and nothing else readable without one."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
from urllib.parse import urljoin

import pytest
from django.core.cache import cache
from django.test import Client

from registry.selectors.resolve import registry_caches_reset
from registry.services.labels import label_move
from registry.services.skills import skill_set_enabled, skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.factories import make_skill_md, publish

INDEX = "/.well-known/agent-skills/index.json"
SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SCRIPT = b"#!/bin/sh\necho converted\n"
NOTES = b"\x00\x01binary\xff"

pytestmark = pytest.mark.django_db


@pytest.fixture
def anonymous():
    return Client()


@pytest.fixture
def published(settings):
    """`production` on v1 of a skill with files (v2 exists, unlabelled), v1 of a SKILL.md-only
    skill, and skills the index must leave out: unlabelled, disabled, `enabled: false` at the
    label, and a name the Agent Skills rule refuses."""
    settings.DISCOVERY_LABEL = "production"
    files = [
        ("scripts/convert.sh", SCRIPT, True),
        ("references/notes.bin", NOTES, False),
    ]
    with_files = _publish_with_link("pdf-tools", files)
    publish("pdf-tools", description="Converts PDFs, second edition.", files=files)
    plain = publish("commit-style", description="Writes commit messages.")
    publish("draft-only", description="Not promoted yet.")
    disabled = publish("switched-off", description="Disabled skill.")
    off_in_md = publish("off-in-frontmatter", description="Says enabled false.", enabled="false")
    odd_name = publish("odd_name", description="Underscore in the name.")
    for result in (with_files, plain, disabled, off_in_md, odd_name):
        label_move(skill=result.skill, label="production", version_number=1)
    skill_set_enabled(skill=disabled.skill, enabled=False)
    return with_files


def _publish_with_link(name: str, files):
    """`scripts/run.sh` is a link to `convert.sh` beside it."""
    bundle = bundle_from_parts(
        make_skill_md(name, description="Converts PDFs.").encode(), files, links=[("scripts/run.sh", "convert.sh")]
    )
    return skill_version_publish(bundle=bundle, source="user")


def _index(client) -> dict:
    response = client.get(INDEX)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return json.loads(response.content)


def _entry(index: dict, name: str) -> dict:
    return next(entry for entry in index["skills"] if entry["name"] == name)


def test_it_is_off_unless_a_label_is_named(anonymous, settings):
    settings.DISCOVERY_LABEL = None
    publish("commit-style")
    for path in (
        INDEX,
        "/.well-known/agent-skills/commit-style/SKILL.md",
        "/.well-known/agent-skills/commit-style.zip",
    ):
        response = anonymous.get(path)
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"


def test_it_lists_the_labels_enabled_skills_at_the_labels_version(anonymous, published):
    index = _index(anonymous)
    assert index["$schema"] == SCHEMA
    assert [entry["name"] for entry in index["skills"]] == ["commit-style", "pdf-tools"]
    tools = _entry(index, "pdf-tools")
    assert tools["version"] == "1"  # production's, not the newest (2)
    assert tools["description"] == "Converts PDFs."
    assert tools["type"] == "archive" and tools["url"] == "pdf-tools.zip"
    plain = _entry(index, "commit-style")
    assert plain["type"] == "skill-md" and plain["url"] == "commit-style/SKILL.md"


def test_each_digest_is_the_sha256_of_the_bytes_served(anonymous, published):
    for entry in _index(anonymous)["skills"]:
        response = anonymous.get(urljoin("http://testserver" + INDEX, entry["url"]))
        assert response.status_code == 200
        assert entry["digest"] == "sha256:" + hashlib.sha256(response.content).hexdigest()
        assert response["ETag"] == f'"{entry["digest"].removeprefix("sha256:")}"'
        assert response["X-Skill-Version"] == entry["version"]


def test_the_skill_md_is_the_stored_text_byte_for_byte(anonymous, published):
    served = anonymous.get("/.well-known/agent-skills/commit-style/SKILL.md")
    assert served["Content-Type"] == "text/markdown; charset=utf-8"
    assert served.content == make_skill_md("commit-style", description="Writes commit messages.").encode("utf-8")


def test_the_archive_has_skill_md_at_its_root_exec_bits_and_links_as_files(anonymous, published):
    response = anonymous.get("/.well-known/agent-skills/pdf-tools.zip")
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = archive.namelist()
    assert names[0] == "SKILL.md"
    assert sorted(names) == ["SKILL.md", "references/notes.bin", "scripts/convert.sh", "scripts/run.sh"]
    modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert stat.S_ISREG(modes["scripts/run.sh"])  # a link is served as the file it resolves to
    assert stat.S_IMODE(modes["scripts/convert.sh"]) == 0o755
    assert stat.S_IMODE(modes["scripts/run.sh"]) == 0o755
    assert stat.S_IMODE(modes["references/notes.bin"]) == 0o644
    assert archive.read("scripts/convert.sh") == SCRIPT
    assert archive.read("scripts/run.sh") == SCRIPT
    assert archive.read("references/notes.bin") == NOTES
    assert archive.read("SKILL.md") == published.version.skill_md.encode("utf-8")


def test_the_archive_and_its_digest_are_the_same_on_every_build(anonymous, published):
    first = anonymous.get("/.well-known/agent-skills/pdf-tools.zip").content
    digest = _entry(_index(anonymous), "pdf-tools")["digest"]
    cache.clear()
    registry_caches_reset()
    assert anonymous.get("/.well-known/agent-skills/pdf-tools.zip").content == first
    assert _entry(_index(anonymous), "pdf-tools")["digest"] == digest


def test_a_moved_label_or_a_disabled_skill_changes_the_index_at_once(anonymous, published):
    label_move(skill=published.skill, label="production", version_number=2)
    tools = _entry(_index(anonymous), "pdf-tools")
    assert tools["version"] == "2" and tools["description"] == "Converts PDFs, second edition."
    skill_set_enabled(skill=published.skill, enabled=False)
    assert [entry["name"] for entry in _index(anonymous)["skills"]] == ["commit-style"]
    assert anonymous.get("/.well-known/agent-skills/pdf-tools.zip").status_code == 404


def test_unpublished_skills_and_wrong_types_are_not_served(anonymous, published):
    for path in (
        "/.well-known/agent-skills/draft-only/SKILL.md",  # not labelled
        "/.well-known/agent-skills/switched-off/SKILL.md",  # disabled
        "/.well-known/agent-skills/off-in-frontmatter/SKILL.md",  # enabled: false at the label
        "/.well-known/agent-skills/odd_name/SKILL.md",  # not an Agent Skills name
        "/.well-known/agent-skills/commit-style.zip",  # listed as skill-md
        "/.well-known/agent-skills/nope/SKILL.md",
    ):
        assert anonymous.get(path).status_code == 404, path
    # The SKILL.md of a skill listed as an archive is its first file: served too.
    assert anonymous.get("/.well-known/agent-skills/pdf-tools/SKILL.md").status_code == 200


def test_it_answers_head_and_304_to_its_etag_and_says_to_revalidate(anonymous, published):
    for path in (INDEX, "/.well-known/agent-skills/pdf-tools.zip", "/.well-known/agent-skills/commit-style/SKILL.md"):
        first = anonymous.get(path)
        assert first["Cache-Control"] == "public, no-cache"
        again = anonymous.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304 and again["ETag"] == first["ETag"]
        head = anonymous.head(path)
        assert head.status_code == 200 and head.content == b""
        assert head["ETag"] == first["ETag"] and head["Content-Length"] == str(len(first.content))


def test_nothing_else_becomes_anonymous(anonymous, published):
    # A bearer header is not read here (a bad one is not refused) ...
    assert anonymous.get(INDEX, HTTP_AUTHORIZATION="Bearer not-a-token").status_code == 200
    # ... while the API still needs a token for the same skills, as before.
    for path in (
        "/api/v1/skills",
        "/api/v1/skills/pdf-tools",
        "/api/v1/skills/pdf-tools/SKILL.md",
        "/api/v1/skills/pdf-tools/bundle.zip",
        "/api/v1/skills/pdf-tools/files/scripts/convert.sh",
        "/api/v1/skills/draft-only/SKILL.md",
    ):
        assert anonymous.get(path).status_code == 401, path
    assert anonymous.get("/skills/").status_code == 302  # the console sends to the login page


def test_latest_publishes_every_effective_skill_at_its_newest_version(anonymous, published, settings):
    settings.DISCOVERY_LABEL = "latest"
    index = _index(anonymous)
    assert [entry["name"] for entry in index["skills"]] == ["commit-style", "draft-only", "pdf-tools"]
    assert _entry(index, "pdf-tools")["version"] == "2"


def test_a_skill_whose_winning_source_lacks_the_label_is_not_published(anonymous, published):
    # A workspace skill of the same name wins over the labelled user one; it carries no label,
    # so a labelled read falls back to its latest version, which nobody promoted.
    publish("commit-style", source="workspace", description="Workspace edition, never promoted.")
    assert [entry["name"] for entry in _index(anonymous)["skills"]] == ["pdf-tools"]
    assert anonymous.get("/.well-known/agent-skills/commit-style/SKILL.md").status_code == 404


def test_an_over_long_subject_is_a_400_naming_it_not_cut(anonymous, published):
    for path in (INDEX, "/.well-known/agent-skills/pdf-tools.zip", "/.well-known/agent-skills/commit-style/SKILL.md"):
        response = anonymous.get(f"{path}?subject={'s' * 201}")
        assert response.status_code == 400, path
        assert "subject" in response.json()["fields"], path
        assert anonymous.get(f"{path}?subject={'s' * 200}").status_code == 200, path
