"""Publishing over the API: a frontmatter field that is not valid YAML (read as text) is refused
with 400 `lenient_reading` naming its line, unless the body says `"accept_lenient": true`."""

from __future__ import annotations

import io
import zipfile

import pytest

from registry.models import Skill, SkillVersion
from tests.factories import publish
from tests.registry.test_publish_check import AS_TEXT, UNCLOSED_TAGS

pytestmark = pytest.mark.django_db


def _zip(skill_md: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("release-checklist/SKILL.md", skill_md)
    return buffer.getvalue()


def test_the_unclosed_list_is_refused_with_its_line_and_what_would_be_stored(api):
    response = api.post("/api/v1/skills", {"skill_md": UNCLOSED_TAGS}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "lenient_reading" and body["line"] == 4
    assert body["detail"].startswith("Line 4: `tags` is not valid YAML") and "accept_lenient" in body["detail"]
    assert "tags" in body["fields"] and body["read_as"]["tags"] == AS_TEXT
    assert [issue["line"] for issue in body["issues"] if issue["level"] == "error"] == [4]
    assert not Skill.objects.exists()


def test_accept_lenient_publishes_the_reading_and_says_which_warnings_were_fallbacks(api):
    response = api.post("/api/v1/skills", {"skill_md": UNCLOSED_TAGS, "accept_lenient": True}, format="json")

    assert response.status_code == 201, response.content
    fallbacks = [w for w in response.json()["warnings"] if w["fallback"]]
    assert [(w["line"], w["field"]) for w in fallbacks] == [(4, "tags")]
    served = api.get("/api/v1/skills/release-checklist").json()
    assert served["triggers"] == []
    assert served["tags"] == ["release", "checklist triggers: [task_match", "explicit_command"]


def test_a_new_version_over_the_api_is_held_to_the_same_rule(api):
    publish("release-checklist")

    refused = api.post("/api/v1/skills/release-checklist/versions", {"skill_md": UNCLOSED_TAGS}, format="json")
    accepted = api.post(
        "/api/v1/skills/release-checklist/versions", {"skill_md": UNCLOSED_TAGS, "accept_lenient": True}, format="json"
    )

    assert refused.status_code == 400 and refused.json()["error"] == "lenient_reading"
    assert accepted.status_code == 201 and accepted.json()["version"] == 2


def test_a_zip_body_takes_accept_lenient_from_the_query_string(api):
    archive = _zip(UNCLOSED_TAGS)

    refused = api.generic("POST", "/api/v1/skills", archive, content_type="application/zip")
    accepted = api.generic("POST", "/api/v1/skills?accept_lenient=true", archive, content_type="application/zip")

    assert refused.status_code == 400 and refused.json()["line"] == 4
    assert accepted.status_code == 201, accepted.content


def test_a_multipart_upload_takes_accept_lenient_as_a_form_field(api):
    def upload():
        handle = io.BytesIO(_zip(UNCLOSED_TAGS))
        handle.name = "release-checklist.zip"
        return handle

    refused = api.post("/api/v1/skills", {"bundle": upload()}, format="multipart")
    accepted = api.post("/api/v1/skills", {"bundle": upload(), "accept_lenient": "true"}, format="multipart")

    assert refused.status_code == 400 and refused.json()["error"] == "lenient_reading"
    assert accepted.status_code == 201, accepted.content
    assert SkillVersion.objects.get(skill__name="release-checklist").frontmatter["tags"] == AS_TEXT


def test_accept_lenient_must_be_a_boolean(api):
    response = api.post("/api/v1/skills", {"skill_md": UNCLOSED_TAGS, "accept_lenient": "yes"}, format="json")

    assert response.status_code == 400 and "accept_lenient" in response.json()["fields"]


@pytest.mark.parametrize("name", ["My Skill!", "café", "../etc/passwd", "-lead-dash"])
def test_a_name_that_cannot_be_stored_is_refused_naming_its_line(api, name):
    response = api.post("/api/v1/skills", {"skill_md": f"---\nname: {name}\ndescription: d\n---\n"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_skill" and response.json()["line"] == 2


def test_the_schema_documents_accept_lenient(api):
    schema = api.get("/api/schema/?format=json").json()

    publish_body = schema["components"]["schemas"]["SkillPublishInput"]["properties"]
    assert publish_body["accept_lenient"]["type"] == "boolean"
    assert "lenient_reading" in publish_body["accept_lenient"]["description"]
    query = {p["name"] for p in schema["paths"]["/api/v1/skills"]["post"]["parameters"]}
    assert "accept_lenient" in query
    assert "read_as" in schema["components"]["schemas"]["Error"]["properties"]
