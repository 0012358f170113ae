"""`/api/v1/skills...` through the real HTTP layer: create, read, raw SKILL.md, files, zips,
versions, diff, labels, enable/disable — and what bad input gets."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

import pytest
from django.test import override_settings

from registry.models import AuditLog, Label, LabelHistory, Skill, SkillVersion
from registry.skillformat.bundle import read_zip
from tests.factories import make_skill_md, publish

pytestmark = pytest.mark.django_db


def create(api, name="demo-skill", *, files=(), **fields):
    body = {"skill_md": make_skill_md(name, **fields)}
    if files:
        body["files"] = [
            {"path": p, "content_base64": base64.b64encode(c).decode(), "executable": x} for p, c, x in files
        ]
    return api.post("/api/v1/skills", body, format="json")


def zip_of(entries: dict[str, bytes], modes: dict[str, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, content in entries.items():
            info = zipfile.ZipInfo(path)
            info.external_attr = (0o100000 | (modes or {}).get(path, 0o644)) << 16
            archive.writestr(info, content)
    return buffer.getvalue()


# --- create and publish --------------------------------------------------------------------


def test_create_from_json_answers_201_with_the_contract_shape(api):
    response = create(api, "pdf-tools", files=[("scripts/run.py", b"print('hi')\n", True)])

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "pdf-tools" and body["version"] == 1 and body["created"] is True
    assert len(body["fingerprint"]) == 64
    assert isinstance(body["warnings"], list) and body["labels"] == []
    stored = SkillVersion.objects.get(skill__name="pdf-tools")
    assert stored.files.get().executable is True


def test_create_from_a_multipart_zip_upload_keeps_files_and_modes(api):
    archive = zip_of(
        {"zipped/SKILL.md": make_skill_md("zipped").encode(), "zipped/scripts/go.sh": b"#!/bin/sh\n"},
        modes={"zipped/scripts/go.sh": 0o755},
    )
    upload = io.BytesIO(archive)
    upload.name = "zipped.zip"

    response = api.post("/api/v1/skills", {"bundle": upload, "message": "from a zip"}, format="multipart")

    assert response.status_code == 201, response.content
    version = SkillVersion.objects.get(skill__name="zipped")
    assert version.message == "from a zip"
    assert [(f.path, f.executable) for f in version.files.all()] == [("scripts/go.sh", True)]


def test_create_from_a_raw_zip_body(api):
    archive = zip_of({"SKILL.md": make_skill_md("raw-zip").encode()})
    response = api.generic("POST", "/api/v1/skills?source=workspace", archive, content_type="application/zip")
    assert response.status_code == 201, response.content
    assert Skill.objects.get(name="raw-zip").source == "workspace"


def test_publishing_identical_content_answers_200_and_creates_nothing(api):
    create(api, "same")
    response = api.post(
        "/api/v1/skills/same/versions", {"skill_md": make_skill_md("same"), "base_version": 1}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["created"] is False and response.json()["version"] == 1
    assert SkillVersion.objects.filter(skill__name="same").count() == 1


def test_creating_a_skill_whose_name_is_taken_answers_409_name_taken_and_publishes_nothing(api):
    assert create(api, "csv-cleaner").status_code == 201
    assert create(api, "csv-cleaner").status_code == 409  # even identical: a create never answers "nothing new"

    for body in (
        {"skill_md": make_skill_md("csv-cleaner", description="Someone else's csv-cleaner.")},
        {"skill_md": make_skill_md("csv-cleaner", description="On top, I said."), "base_version": 1},
    ):
        response = api.post("/api/v1/skills", body, format="json")
        assert response.status_code == 409, response.content
        refused = response.json()
        assert refused["error"] == "name_taken" and refused["name"] == "csv-cleaner"
        assert refused["source"] == "user" and refused["latest_version"] == 1
        assert "'csv-cleaner' exists (v1 by " in refused["detail"]
        assert "/api/v1/skills/csv-cleaner/versions" in refused["detail"]

    archive = io.BytesIO(zip_of({"SKILL.md": make_skill_md("csv-cleaner", description="Zipped.").encode()}))
    archive.name = "csv-cleaner.zip"
    zipped = api.post("/api/v1/skills", {"bundle": archive}, format="multipart")
    assert zipped.status_code == 409 and zipped.json()["error"] == "name_taken"
    assert SkillVersion.objects.filter(skill__name="csv-cleaner").count() == 1

    # A new version goes through the versions endpoint, from the version its author read.
    response = api.post(
        "/api/v1/skills/csv-cleaner/versions",
        {"skill_md": make_skill_md("csv-cleaner", description="Version two."), "base_version": 1},
        format="json",
    )
    assert response.status_code == 201 and response.json()["version"] == 2
    # Another source may still have a skill of that name: it shadows, it does not overwrite.
    elsewhere = {"skill_md": make_skill_md("csv-cleaner"), "source": "workspace"}
    assert api.post("/api/v1/skills", elsewhere, format="json").status_code == 201


def test_the_schema_documents_409_name_taken_on_create(api):
    schema = api.get("/api/schema/?format=json").json()
    create_op = schema["paths"]["/api/v1/skills"]["post"]
    assert "name_taken" in create_op["responses"]["409"]["description"]
    assert "200" not in create_op["responses"]  # a create never answers "identical, nothing created"


def test_publish_to_versions_creates_the_next_version(api):
    create(api, "versioned")
    response = api.post(
        "/api/v1/skills/versioned/versions",
        {
            "skill_md": make_skill_md("versioned", description="Second take on the thing."),
            "message": "better description",
            "base_version": 1,
        },
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["version"] == 2


def test_a_stale_base_version_is_a_409_naming_the_latest_version(api):
    create(api, "contested")
    api.post(
        "/api/v1/skills/contested/versions",
        {"skill_md": make_skill_md("contested", description="Alice's edit."), "base_version": 1},
        format="json",
    )

    response = api.post(
        "/api/v1/skills/contested/versions",
        {"skill_md": make_skill_md("contested", description="Bob's edit."), "base_version": 1},
        format="json",
    )

    assert response.status_code == 409
    assert response.json()["error"] == "version_conflict"
    assert response.json()["latest_version"] == 2
    assert SkillVersion.objects.filter(skill__name="contested").count() == 2


@pytest.mark.parametrize("body", ["json", "multipart", "zip"])
def test_a_zip_replace_answers_base_version_as_json_does(api, body):
    """One rule whatever the body: a stale base_version is a 409; none is no claim, published on
    top of the newest (as `"base_version": null` in JSON)."""
    publish("contested")
    publish("contested", description="Their edit.")

    def send(description: str, base_version: int | None):
        skill_md = make_skill_md("contested", description=description)
        fields = {} if base_version is None else {"base_version": base_version}
        url = "/api/v1/skills/contested/versions"
        if body == "json":
            return api.post(url, {"skill_md": skill_md, **fields}, format="json")
        archive = zip_of({"SKILL.md": skill_md.encode()})
        if body == "zip":  # a raw zip body takes its options from the query string
            query = f"?base_version={base_version}" if fields else ""
            return api.generic("POST", url + query, archive, content_type="application/zip")
        upload = io.BytesIO(archive)
        upload.name = "contested.zip"
        return api.post(url, {"bundle": upload, **fields}, format="multipart")

    assert send("Mine, on a stale copy.", 1).status_code == 409
    assert send("Mine, on no claimed base.", None).status_code == 201
    assert Skill.objects.get(name="contested").latest_version == 3


def test_publishing_a_skill_md_for_another_name_is_refused(api):
    create(api, "target")
    response = api.post("/api/v1/skills/target/versions", {"skill_md": make_skill_md("intruder")}, format="json")
    assert response.status_code == 400
    assert response.json()["fields"]["name"]
    assert not Skill.objects.filter(name="intruder").exists()


def test_a_bad_skill_md_is_a_400_with_the_line_number(api):
    text = "---\nname: broken\nlicense: MIT\n---\n\nNo description.\n"
    response = api.post("/api/v1/skills", {"skill_md": text}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_skill"
    assert isinstance(body["line"], int) and body["line"] >= 1
    assert "description" in body["detail"]
    assert not Skill.objects.exists()


def test_a_skill_md_without_frontmatter_reports_line_1(api):
    response = api.post("/api/v1/skills", {"skill_md": "# Just markdown\n"}, format="json")
    assert response.status_code == 400
    assert response.json()["line"] == 1


def test_a_rejected_zip_import_writes_nothing(api):
    archive = zip_of({"SKILL.md": make_skill_md("evil").encode(), "../escape.txt": b"x"})
    upload = io.BytesIO(archive)
    upload.name = "evil.zip"
    audit_before = AuditLog.objects.count()

    response = api.post("/api/v1/skills", {"bundle": upload}, format="multipart")

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_bundle"
    assert not Skill.objects.exists() and not SkillVersion.objects.exists()
    assert AuditLog.objects.count() == audit_before


def test_a_garbage_zip_is_a_400_not_a_500(api):
    upload = io.BytesIO(b"PK\x03\x04 definitely not a zip")
    upload.name = "x.zip"
    response = api.post("/api/v1/skills", {"bundle": upload}, format="multipart")
    assert response.status_code == 400


@override_settings(SKILL_BUNDLE_MAX_BYTES=4096)
def test_an_oversize_bundle_is_a_413_and_writes_nothing(api):
    response = create(api, "huge", files=[("assets/big.bin", b"x" * 5000, False)])
    assert response.status_code == 413
    assert response.json()["error"] == "bundle_too_large"
    assert not Skill.objects.exists()


@override_settings(SKILL_MD_MAX_BYTES=1024)
def test_an_oversize_skill_md_is_a_413(api):
    response = create(api, "wordy", body="word " * 400)
    assert response.status_code == 413
    assert not Skill.objects.exists()


@override_settings(SKILL_BUNDLE_MAX_BYTES=1024)
def test_a_body_over_the_upload_limit_is_a_413_before_it_is_read(api):
    response = api.post("/api/v1/skills", {"skill_md": "x" * (3 * 1024 * 1024)}, format="json")
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"  # refused by Content-Length, not by the bundle check


def test_django_request_data_too_big_becomes_a_413_json(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    upload = io.BytesIO(zip_of({"SKILL.md": make_skill_md("formy").encode()}))
    upload.name = "f.zip"
    response = api.post("/api/v1/skills", {"bundle": upload, "message": "m" * 500}, format="multipart")
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"


def test_an_unsupported_content_type_is_a_415(api):
    response = api.generic("POST", "/api/v1/skills", b"name: x", content_type="application/yaml")
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_malformed_json_is_a_400(api):
    response = api.generic("POST", "/api/v1/skills", b'{"skill_md": ', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_invalid_base64_names_the_file(api):
    response = api.post(
        "/api/v1/skills",
        {"skill_md": make_skill_md("b64"), "files": [{"path": "a.txt", "content_base64": "***"}]},
        format="json",
    )
    assert response.status_code == 400
    assert "files[0].content_base64" in response.json()["fields"]


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../b", "C:/x", "a\\b"])
def test_unsafe_file_paths_are_refused(api, path):
    response = create(api, "paths", files=[(path, b"x", False)])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_bundle"
    assert not Skill.objects.exists()


def test_an_unknown_source_is_a_400(api):
    response = api.post("/api/v1/skills", {"skill_md": make_skill_md("src"), "source": "elsewhere"}, format="json")
    assert response.status_code == 400
    assert "source" in response.json()["fields"]


# --- list and detail -------------------------------------------------------------------------


def test_list_is_paginated_metadata_without_skill_md(api):
    for i in range(3):
        publish(f"skill-{i}", tags=["pdf"] if i == 1 else ["text"], triggers=["task_match"])

    response = api.get("/api/v1/skills", {"limit": 2})

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    item = body["results"][0]
    assert {"name", "source", "enabled", "version", "description", "tags", "triggers", "labels"} <= set(item)
    assert "skill_md" not in item


def test_list_filters_by_tag_trigger_source_enabled_and_q(api):
    publish("pdf-fill", tags=["pdf", "forms"], triggers=["task_match"], description="Fill PDF forms.")
    publish("csv-clean", tags=["csv"], triggers=["turn_start"], source="workspace", description="Tidy CSV files.")
    disabled = publish("old-thing", description="Something retired.").skill
    Skill.objects.filter(pk=disabled.pk).update(enabled=False)

    def names(**params):
        return [item["name"] for item in api.get("/api/v1/skills", params).json()["results"]]

    assert names(tag="pdf") == ["pdf-fill"]
    assert names(trigger="turn_start") == ["csv-clean"]
    assert names(source="workspace") == ["csv-clean"]
    assert names(enabled="false") == ["old-thing"]
    assert "old-thing" not in names(enabled="true")
    assert names(q="pdf form") == ["pdf-fill"]
    assert names(q="csv") == ["csv-clean"]


def test_list_shows_precedence_and_shadowed_skills_when_asked(api):
    publish("shared", source="bundled", description="Bundled copy.")
    publish("shared", source="workspace", description="Workspace copy.")

    default = api.get("/api/v1/skills").json()["results"]
    everything = api.get("/api/v1/skills", {"shadowed": "true"}).json()["results"]

    assert [(i["name"], i["source"], i["effective"]) for i in default] == [("shared", "workspace", True)]
    shadowed = next(i for i in everything if i["source"] == "bundled")
    assert shadowed["effective"] is False and shadowed["shadowed_by"] == "workspace"


def test_list_by_label_shows_the_labelled_version(api):
    publish("labelled", description="First.")
    publish("labelled", description="Second.")
    publish("unlabelled")
    api.put("/api/v1/skills/labelled/labels/production", {"version": 1}, format="json")

    results = api.get("/api/v1/skills", {"label": "production"}).json()["results"]

    assert [(i["name"], i["version"], i["description"]) for i in results] == [("labelled", 1, "First.")]


def test_detail_defaults_to_production_then_latest_and_takes_label_or_version(api):
    publish("detailed", description="One.")
    publish("detailed", description="Two.")

    assert api.get("/api/v1/skills/detailed").json()["version"] == 2
    api.put("/api/v1/skills/detailed/labels/production", {"version": 1}, format="json")
    assert api.get("/api/v1/skills/detailed").json()["version"] == 1
    assert api.get("/api/v1/skills/detailed", {"label": "latest"}).json()["version"] == 2
    assert api.get("/api/v1/skills/detailed", {"version": 2}).json()["description"] == "Two."
    body = api.get("/api/v1/skills/detailed", {"label": "production"}).json()
    assert body["skill_md"].startswith("---\nname: detailed") and body["version_labels"] == ["production"]


def test_detail_404s(api):
    publish("exists")
    assert api.get("/api/v1/skills/nope").status_code == 404
    assert api.get("/api/v1/skills/exists", {"version": 9}).status_code == 404
    assert api.get("/api/v1/skills/exists", {"label": "staging"}).status_code == 404
    assert api.get("/api/v1/skills/exists", {"label": "staging", "version": 1}).status_code == 400
    assert api.get("/api/v1/skills/nope").json()["error"] == "not_found"


def test_detail_of_a_shadowed_skill_by_source(api):
    publish("twin", source="bundled", description="Bundled twin.")
    publish("twin", source="user", description="User twin.")
    body = api.get("/api/v1/skills/twin", {"source": "bundled"}).json()
    assert body["description"] == "Bundled twin." and body["shadowed_by"] == "user"
    assert api.get("/api/v1/skills/twin").json()["others"][0]["source"] == "bundled"


def test_patch_disables_and_enables(api):
    publish("toggle", source="bundled")
    publish("toggle", source="workspace")

    response = api.patch("/api/v1/skills/toggle", {"enabled": False}, format="json")

    assert response.status_code == 200
    assert response.json()["source"] == "workspace" and response.json()["enabled"] is False
    # precedence: the bundled copy is the effective one now
    assert api.get("/api/v1/skills/toggle").json()["source"] == "bundled"
    assert (
        api.patch("/api/v1/skills/toggle", {"enabled": True, "source": "workspace"}, format="json").json()["enabled"]
        is True
    )
    assert api.patch("/api/v1/skills/toggle", {"enabled": "maybe"}, format="json").status_code == 400


# --- raw SKILL.md ------------------------------------------------------------------------------


def test_skill_md_is_the_exact_bytes_with_a_strong_etag(api):
    text = "\ufeff---\r\nname: crlf\r\ndescription: Windows line endings and a BOM.\r\n---\r\n\r\nBody.\r\n"
    api.post("/api/v1/skills", {"skill_md": text}, format="json")

    response = api.get("/api/v1/skills/crlf/SKILL.md")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content == text.encode("utf-8")
    assert response["ETag"] == f'"{hashlib.sha256(text.encode()).hexdigest()}"'


def test_skill_md_answers_304_on_if_none_match_for_get_and_head(api):
    publish("cached")
    etag = api.get("/api/v1/skills/cached/SKILL.md")["ETag"]

    assert api.get("/api/v1/skills/cached/SKILL.md", HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert api.head("/api/v1/skills/cached/SKILL.md", HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert api.get("/api/v1/skills/cached/SKILL.md", HTTP_IF_NONE_MATCH='"other", ' + etag).status_code == 304
    head = api.head("/api/v1/skills/cached/SKILL.md")
    assert head.status_code == 200 and head.content == b"" and int(head["Content-Length"]) > 0
    assert api.get("/api/v1/skills/cached/SKILL.md", HTTP_IF_NONE_MATCH='"stale"').status_code == 200


def test_skill_md_etag_changes_when_a_new_version_is_published(api):
    publish("moving", description="Before.")
    first = api.get("/api/v1/skills/moving/SKILL.md")
    publish("moving", description="After.")

    second = api.get("/api/v1/skills/moving/SKILL.md", HTTP_IF_NONE_MATCH=first["ETag"])

    assert second.status_code == 200 and b"After." in second.content
    assert second["ETag"] != first["ETag"]


def test_skill_md_follows_label_moves_immediately(api):
    publish("rolled", description="Version one.")
    publish("rolled", description="Version two.")
    api.put("/api/v1/skills/rolled/labels/production", {"version": 2}, format="json")
    assert b"Version two." in api.get("/api/v1/skills/rolled/SKILL.md").content

    api.put("/api/v1/skills/rolled/labels/production", {"version": 1}, format="json")  # rollback

    assert b"Version one." in api.get("/api/v1/skills/rolled/SKILL.md").content


def test_skill_md_404_is_json_even_when_markdown_is_accepted(api):
    response = api.get("/api/v1/skills/missing/SKILL.md", HTTP_ACCEPT="text/markdown")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


# --- files and zips ------------------------------------------------------------------------------


def test_files_are_served_with_a_content_type_and_unknown_paths_404(api):
    publish(
        "filed",
        files=[
            ("scripts/run.py", b"print(1)\n", True),
            ("assets/logo.png", b"\x89PNG\r\n\x1a\n", False),
            ("assets/page.html", b"<script>alert(1)</script>", False),
        ],
    )

    script = api.get("/api/v1/skills/filed/files/scripts/run.py")
    image = api.get("/api/v1/skills/filed/files/assets/logo.png")
    page = api.get("/api/v1/skills/filed/files/assets/page.html")

    assert script.status_code == 200 and script.content == b"print(1)\n"
    assert script["Content-Type"].startswith("text/x-python")
    assert image["Content-Type"] == "image/png"
    assert page["Content-Disposition"].startswith("attachment")
    assert "sandbox" in page["Content-Security-Policy"]
    assert api.get("/api/v1/skills/filed/files/scripts/nope.py").status_code == 404
    assert api.get("/api/v1/skills/filed/files/../secrets").status_code == 404
    etag = script["ETag"]
    assert api.get("/api/v1/skills/filed/files/scripts/run.py", HTTP_IF_NONE_MATCH=etag).status_code == 304


def test_bundle_zip_round_trips_byte_for_byte(api):
    publish("zipme", files=[("scripts/a.sh", b"#!/bin/sh\necho a\n", True), ("references/b.md", b"# B\n", False)])

    response = api.get("/api/v1/skills/zipme/bundle.zip")

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    bundle = read_zip(response.content)
    assert bundle.skill_md == make_skill_md("zipme").encode()
    assert [(f.path, f.content, f.executable) for f in bundle.files] == [
        ("references/b.md", b"# B\n", False),
        ("scripts/a.sh", b"#!/bin/sh\necho a\n", True),
    ]
    assert api.get("/api/v1/skills/zipme/bundle.zip", HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


# --- versions and diff ---------------------------------------------------------------------------


def test_versions_list_and_detail(api):
    publish("history", description="v1.")
    publish("history", description="v2.")
    api.put("/api/v1/skills/history/labels/production", {"version": 1}, format="json")

    listing = api.get("/api/v1/skills/history/versions").json()
    detail = api.get("/api/v1/skills/history/versions/1").json()

    assert [v["number"] for v in listing["results"]] == [2, 1]
    assert listing["results"][1]["labels"] == ["production"]
    assert detail["version"] == 1 and detail["description"] == "v1."
    assert api.get("/api/v1/skills/history/versions/7").status_code == 404


def test_diff_shows_skill_md_and_file_changes(api):
    publish("diffed", description="Old words.", files=[("a.txt", b"one\n", False), ("gone.txt", b"x\n", False)])
    publish("diffed", description="New words.", files=[("a.txt", b"two\n", False), ("new.txt", b"n\n", True)])

    body = api.get("/api/v1/skills/diffed/diff", {"from": 1, "to": 2}).json()

    assert body["from_version"] == 1 and body["to_version"] == 2
    assert "-description: Old words." in body["skill_md_diff"]
    assert "+description: New words." in body["skill_md_diff"]
    changes = {c["path"]: c["change"] for c in body["files"]}
    assert changes == {"a.txt": "modified", "gone.txt": "removed", "new.txt": "added"}
    assert "+two" in next(c for c in body["files"] if c["path"] == "a.txt")["diff"]
    assert api.get("/api/v1/skills/diffed/diff").json()["from_version"] == 1  # default: latest vs previous
    assert api.get("/api/v1/skills/diffed/diff", {"from": 9}).status_code == 404


# --- labels -------------------------------------------------------------------------------------


def test_label_put_moves_and_records_history_and_delete_removes(api):
    publish("labels", description="a.")
    publish("labels", description="b.")

    first = api.put("/api/v1/skills/labels/labels/staging", {"version": 1}, format="json")
    second = api.put("/api/v1/skills/labels/labels/staging", {"version": 2}, format="json")

    assert first.status_code == 200 and first.json()["version"] == 1
    assert second.json()["version"] == 2 and second.json()["previous_version"] == 1
    history = api.get("/api/v1/skills/labels/labels").json()["history"]
    assert [(h["from_version"], h["to_version"]) for h in history] == [(1, 2), (None, 1)]

    assert api.delete("/api/v1/skills/labels/labels/staging").status_code == 204
    assert not Label.objects.exists()
    assert LabelHistory.objects.filter(to_version=None).count() == 1
    assert api.delete("/api/v1/skills/labels/labels/staging").status_code == 404


def test_label_errors(api):
    publish("strict")
    assert api.put("/api/v1/skills/strict/labels/latest", {"version": 1}, format="json").status_code == 400
    assert api.put("/api/v1/skills/strict/labels/Bad Label", {"version": 1}, format="json").status_code == 400
    assert api.put("/api/v1/skills/strict/labels/" + "x" * 37, {"version": 1}, format="json").status_code == 400
    assert api.put("/api/v1/skills/strict/labels/prod", {"version": 5}, format="json").status_code == 404
    assert api.put("/api/v1/skills/strict/labels/prod", {}, format="json").status_code == 400
    assert api.put("/api/v1/skills/nope/labels/prod", {"version": 1}, format="json").status_code == 404
    assert not Label.objects.exists()


@pytest.mark.parametrize("name", ["x" * 129, "a/b", "tab\there"])
def test_a_name_that_cannot_be_stored_or_addressed_is_a_400_with_its_line(api, name):
    text = f"---\ndescription: Fine.\nname: {name}\n---\nBody\n"
    response = api.post("/api/v1/skills", {"skill_md": text}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["line"] == 3 and "name" in response.json()["fields"]
    assert not Skill.objects.exists()
