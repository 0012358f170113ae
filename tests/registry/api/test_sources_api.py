"""Only `skills sync` writes the bundled source: the API refuses `source: bundled`,
an edit to a bundled skill becomes a user skill, and a bundled skill changed around the sync is
restored by the next sync."""

from __future__ import annotations

import base64
import io
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command

from registry.models import Skill
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.factories import make_skill_md

pytestmark = pytest.mark.django_db


def _sync() -> str:
    out = StringIO()
    call_command("skills", "sync", stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def bundled(settings, tmp_path):
    settings.BUNDLED_SKILLS_DIR = tmp_path
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "SKILL.md").write_text(make_skill_md("shipped", description="As shipped."))
    _sync()
    return Skill.objects.get(name="shipped", source="bundled")


def test_creating_a_bundled_skill_over_json_is_a_400_naming_source(api):
    response = api.post("/api/v1/skills", {"skill_md": make_skill_md("sneaky"), "source": "bundled"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert "source" in body["fields"] and "skills sync" in body["detail"]
    assert not Skill.objects.exists()


def test_publishing_a_bundled_version_over_json_is_a_400(api, bundled):
    body = {"skill_md": make_skill_md("shipped", description="Overwritten."), "source": "bundled"}
    response = api.post("/api/v1/skills/shipped/versions", body, format="json")
    assert response.status_code == 400 and "source" in response.json()["fields"]
    bundled.refresh_from_db()
    assert bundled.latest_version == 1


def test_a_zip_upload_cannot_name_the_bundled_source(api):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("SKILL.md", make_skill_md("zipped"))
    response = api.post("/api/v1/skills?source=bundled", buffer.getvalue(), content_type="application/zip")
    assert response.status_code == 400 and "source" in response.json()["fields"]
    multipart = api.post(
        "/api/v1/skills",
        {"bundle": io.BytesIO(buffer.getvalue()), "source": "bundled"},
        format="multipart",
    )
    assert multipart.status_code == 400 and "source" in multipart.json()["fields"]
    assert not Skill.objects.exists()


@pytest.mark.parametrize("source", ["user", "workspace"])
def test_user_and_workspace_sources_are_accepted(api, source):
    response = api.post("/api/v1/skills", {"skill_md": make_skill_md("fine"), "source": source}, format="json")
    assert response.status_code == 201 and response.json()["source"] == source


def test_the_schema_offers_only_user_and_workspace_for_publishing(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    publish = schema["components"]["schemas"]["SkillPublishInput"]["properties"]["source"]
    text = str(publish) + str(schema["components"]["schemas"])
    assert "bundled" not in str(publish.get("enum", [])) and "user" in text


def test_an_edit_to_a_bundled_skill_becomes_a_user_skill_that_shadows_it(api, bundled):
    body = {"skill_md": make_skill_md("shipped", description="My local edit.")}
    response = api.post("/api/v1/skills/shipped/versions", body, format="json")
    assert response.status_code == 201 and response.json()["source"] == "user"
    bundled.refresh_from_db()
    assert bundled.latest_version == 1
    assert api.get("/api/v1/skills/shipped").json()["source"] == "user"


def test_sync_restores_a_bundled_skill_changed_elsewhere(bundled):
    # Given a version written to the bundled source around the API (an old client, a raw write)
    tampered = bundle_from_parts(make_skill_md("shipped", description="Tampered.").encode(), ())
    skill_version_publish(bundle=tampered, source="bundled")
    # When the bundled folder is synced, unchanged on disk
    output = _sync()
    # Then the folder's content is the newest bundled version again
    bundled.refresh_from_db()
    assert bundled.latest_version == 3, output
    assert "As shipped." in bundled.versions.get(number=3).skill_md
    # and a further sync has nothing to do
    assert "1 skipped" in _sync()


def test_sync_of_an_untouched_folder_still_skips_it(bundled):
    assert "0 published, 0 unchanged, 0 failed, 1 skipped" in _sync()


def test_files_posted_as_base64_still_publish_to_user(api):
    body = {
        "skill_md": make_skill_md("with-file"),
        "files": [{"path": "notes.txt", "content_base64": base64.b64encode(b"hi").decode()}],
    }
    assert api.post("/api/v1/skills", body, format="json").json()["source"] == "user"
