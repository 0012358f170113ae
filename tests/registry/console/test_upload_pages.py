"""Creating a skill from a zip or a picked folder in the console, and replacing a skill's files
from one: the API's readers and publish service, its messages, and the "Publish as read" step
for a SKILL.md whose frontmatter needed a fallback reading."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from registry.models import Skill, SkillVersion
from tests.factories import make_skill_md, publish
from tests.registry.test_publish_check import AS_TEXT, UNCLOSED_TAGS

pytestmark = pytest.mark.django_db


def _zip(files: dict[str, str | bytes], name: str = "skill.zip") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, content in files.items():
            archive.writestr(path, content)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/zip")


def _folder(files: dict[str, str | bytes]) -> dict:
    """What the browser and console.js send for a picked folder: each file under its last name
    part (as Django keeps it), and the relative paths in order."""
    uploads = [
        SimpleUploadedFile(path.rsplit("/", 1)[-1], content.encode() if isinstance(content, str) else content)
        for path, content in files.items()
    ]
    return {"folder": uploads, "folder_paths": json.dumps(list(files))}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_new_page_and_the_list_offer_the_upload(author_client):
    new = author_client.get("/skills/new/").content.decode()
    listing = author_client.get("/skills/").content.decode()
    upload = author_client.get("/skills/new/upload/").content.decode()

    assert 'href="/skills/new/upload/"' in new
    assert 'name="skill_md"' in new  # the editor is still there
    assert 'href="/skills/new/upload/"' in listing
    assert 'name="bundle"' in upload and 'name="folder"' in upload and "webkitdirectory" in upload


def test_a_zip_creates_the_skill_with_its_files(author_client, author):
    upload = _zip({"pdf-tools/SKILL.md": make_skill_md("pdf-tools"), "pdf-tools/scripts/run.sh": "echo\n"})

    response = author_client.post("/skills/new/upload/", {"bundle": upload, "message": "From my laptop"})

    assert response.status_code == 302 and response["Location"] == "/skills/pdf-tools/"
    version = SkillVersion.objects.get(skill__name="pdf-tools")
    assert (version.skill.source, version.message, version.author) == ("user", "From my laptop", author)
    assert [f.path for f in version.files.all()] == ["scripts/run.sh"]
    assert "Published pdf-tools v1." in author_client.get(response["Location"]).content.decode()


def test_a_picked_folder_creates_the_skill_with_its_relative_paths(author_client):
    files = {
        "sql-query/SKILL.md": make_skill_md("sql-query"),
        "sql-query/scripts/explain.py": "print('plan')\n",
        "sql-query/references/dialects/postgres.md": "# PostgreSQL\n",
        "sql-query/.git/HEAD": "ref: refs/heads/main\n",
    }

    response = author_client.post("/skills/new/upload/", {**_folder(files), "source": "workspace"})

    assert response.status_code == 302
    version = SkillVersion.objects.get(skill__name="sql-query")
    assert version.skill.source == "workspace"
    assert version.message == "Upload folder sql-query"
    assert [(f.path, f.executable) for f in version.files.all()] == [
        ("references/dialects/postgres.md", False),
        ("scripts/explain.py", True),
    ]


def test_a_folder_without_its_paths_asks_for_a_zip(author_client):
    files = _folder({"sql-query/SKILL.md": make_skill_md("sql-query")})

    response = author_client.post("/skills/new/upload/", {"folder": files["folder"]})

    assert response.status_code == 400
    assert "upload a zip of the folder instead" in _text(response.content.decode())
    assert not Skill.objects.exists()


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        ({}, "Choose a zip of the skill folder, or the folder itself."),
        ({"bundle": SimpleUploadedFile("x.zip", b"not a zip")}, "The upload is not a zip archive."),
        ({"bundle": "x"}, "Choose a zip of the skill folder, or the folder itself."),
        ({"folder_paths": "[", "folder": [SimpleUploadedFile("SKILL.md", b"x")]}, "paths did not arrive"),
        (_folder({"a/SKILL.md": "x", "b/x.md": "y"}), "not all in one picked folder"),
        (_folder({"a/../SKILL.md": make_skill_md("a")}), "'..'"),
        (_folder({"a/notes.md": "x"}), "There is no SKILL.md at the top of the folder 'a'"),
        ({"source": "bundled"}, "Publish as 'user' or 'workspace'"),
    ],
)
def test_a_bad_upload_is_a_400_that_says_why(author_client, upload, message):
    response = author_client.post("/skills/new/upload/", upload)

    assert response.status_code == 400
    assert message in _text(response.content.decode())
    assert not Skill.objects.exists()


def test_an_invalid_skill_md_is_refused_with_its_line_as_the_api_refuses_it(author_client):
    broken = make_skill_md("pdf-tools").replace("description:", "descr:")

    response = author_client.post("/skills/new/upload/", {"bundle": _zip({"SKILL.md": broken})})

    assert response.status_code == 400
    text = _text(response.content.decode())
    assert "Not published." in text and "SKILL.md line" in text and "description" in text
    assert not Skill.objects.exists()


def test_creating_a_name_that_exists_is_refused_not_a_new_version(author_client):
    publish("pdf-tools")

    response = author_client.post("/skills/new/upload/", {"bundle": _zip({"SKILL.md": make_skill_md("pdf-tools")})})

    assert response.status_code == 409
    text = _text(response.content.decode())
    assert "'pdf-tools' exists (v1 by system, source user)" in text and "already exists in that source" in text
    assert 'href="/skills/pdf-tools/?source=user">open pdf-tools</a>' in response.content.decode()
    assert SkillVersion.objects.count() == 1


@override_settings(SKILL_BUNDLE_MAX_FILES=3)
def test_a_folder_over_the_file_limit_names_the_setting(author_client):
    files = {"big/SKILL.md": make_skill_md("big"), **{f"big/references/{n}.md": "x" for n in range(4)}}

    response = author_client.post("/skills/new/upload/", _folder(files))

    assert response.status_code == 413
    assert "SKILL_BUNDLE_MAX_FILES" in _text(response.content.decode())


def test_a_lenient_reading_is_refused_with_its_line_then_published_as_read(author_client):
    upload = {"bundle": _zip({"release-checklist/SKILL.md": UNCLOSED_TAGS})}

    refused = author_client.post("/skills/new/upload/", upload)

    assert refused.status_code == 400
    html = refused.content.decode()
    assert "SKILL.md line 4:" in _text(html) and "`tags` is not valid YAML" in html
    assert "Publish as read" in html and AS_TEXT in html
    assert "Choose the same zip again" in html  # without JavaScript the file is not kept
    refusal = _text(html).split("Not published.")[1].split("Publish as read?")[0]
    assert "editor" not in refusal  # the step is here, not in an editor that does not apply
    sha = re.search(r'name="read_sha256" value="([0-9a-f]{64})"', html).group(1)
    assert sha == hashlib.sha256(UNCLOSED_TAGS.encode()).hexdigest()
    assert not Skill.objects.exists()

    accepted = author_client.post(
        "/skills/new/upload/",
        {"bundle": _zip({"release-checklist/SKILL.md": UNCLOSED_TAGS}), "accept_lenient": "1", "read_sha256": sha},
    )

    assert accepted.status_code == 302
    version = SkillVersion.objects.get(skill__name="release-checklist")
    assert version.frontmatter["tags"] == AS_TEXT and version.triggers == []


def test_accepting_one_reading_does_not_publish_another_text(author_client):
    sha = hashlib.sha256(UNCLOSED_TAGS.encode()).hexdigest()
    other = UNCLOSED_TAGS.replace("Walk through", "Go through")

    response = author_client.post(
        "/skills/new/upload/",
        {"bundle": _zip({"SKILL.md": other}), "accept_lenient": "1", "read_sha256": sha},
    )

    assert response.status_code == 400 and "Publish as read" in response.content.decode()
    assert not Skill.objects.exists()


def test_htmx_gets_the_refusal_in_place_and_a_client_redirect_on_success(author_client):
    upload = {"bundle": _zip({"SKILL.md": UNCLOSED_TAGS})}

    refused = author_client.post("/skills/new/upload/", upload, headers={"HX-Request": "true"})

    html = refused.content.decode()
    assert refused.status_code == 400 and html.lstrip().startswith('<div id="upload-result">')
    assert "Publishes the chosen files with the fields above" in html
    sha = re.search(r'name="read_sha256" value="([0-9a-f]{64})"', html).group(1)

    accepted = author_client.post(
        "/skills/new/upload/",
        {"bundle": _zip({"SKILL.md": UNCLOSED_TAGS}), "accept_lenient": "1", "read_sha256": sha},
        headers={"HX-Request": "true"},
    )

    assert accepted.status_code == 200 and accepted["HX-Redirect"] == "/skills/release-checklist/"


def test_replacing_a_skills_files_from_a_zip_publishes_the_next_version(author_client):
    publish("demo-skill", files=[("scripts/run.sh", b"echo hi\n", True)])
    page = author_client.get("/skills/demo-skill/").content.decode()
    assert 'href="/skills/demo-skill/upload/"' in page and "A zip replaces the whole folder" not in page
    upload = _zip(
        {"demo-skill/SKILL.md": make_skill_md(body="# From the zip\n"), "demo-skill/references/guide.md": "#"}
    )

    response = author_client.post("/skills/demo-skill/upload/", {"bundle": upload, "base_version": "1"})

    assert response.status_code == 302
    version = SkillVersion.objects.get(number=2)
    assert "From the zip" in version.skill_md and version.message == "Upload skill.zip"
    assert [f.path for f in version.files.all()] == ["references/guide.md"]


def test_replacing_from_a_zip_with_a_lenient_reading_offers_the_accept_step(author_client):
    publish("release-checklist")

    refused = author_client.post(
        "/skills/release-checklist/upload/", {"bundle": _zip({"SKILL.md": UNCLOSED_TAGS}), "base_version": "1"}
    )

    html = refused.content.decode()
    assert refused.status_code == 400 and "Publish as read" in html
    assert "editor" not in _text(html).split("Not published.")[1].split("Publish as read?")[0]
    sha = re.search(r'name="read_sha256" value="([0-9a-f]{64})"', html).group(1)
    author_client.post(
        "/skills/release-checklist/upload/",
        {"bundle": _zip({"SKILL.md": UNCLOSED_TAGS}), "base_version": "1", "accept_lenient": "1", "read_sha256": sha},
    )
    assert SkillVersion.objects.get(number=2).frontmatter["tags"] == AS_TEXT


def test_replacing_on_a_stale_page_changes_nothing(author_client):
    publish("demo-skill")
    publish("demo-skill", description="Newer.")

    response = author_client.post(
        "/skills/demo-skill/upload/", {"bundle": _zip({"SKILL.md": make_skill_md()}), "base_version": "1"}
    )

    assert response.status_code == 409 and "Reload this page" in response.content.decode()
    assert SkillVersion.objects.count() == 2


def test_replacing_without_a_base_version_is_refused_naming_it(author_client):
    """The page always sends the version it showed; a replace without one would publish over a
    version it never showed, so it is a 400 as in the editor, and nothing is published."""
    publish("demo-skill")
    publish("demo-skill", description="Newer.")

    response = author_client.post("/skills/demo-skill/upload/", {"bundle": _zip({"SKILL.md": make_skill_md()})})

    assert response.status_code == 400 and "base_version" in response.content.decode()
    assert SkillVersion.objects.count() == 2


def test_a_zip_of_another_skill_cannot_replace_this_one(author_client):
    publish("demo-skill")

    response = author_client.post(
        "/skills/demo-skill/upload/", {"bundle": _zip({"SKILL.md": make_skill_md("other")}), "base_version": "1"}
    )

    assert response.status_code == 400
    assert not Skill.objects.filter(name="other").exists()


def test_an_analyst_cannot_upload(analyst_client):
    publish("demo-skill")

    assert analyst_client.get("/skills/new/upload/").status_code == 403
    assert (
        analyst_client.post("/skills/new/upload/", {"bundle": _zip({"SKILL.md": make_skill_md()})}).status_code == 403
    )
    assert analyst_client.get("/skills/demo-skill/upload/").status_code == 403
    assert "Upload a zip or folder" not in analyst_client.get("/skills/").content.decode()
    assert not Skill.objects.exclude(name="demo-skill").exists()


def test_a_folder_of_more_files_than_djangos_default_upload_count_publishes(author_client):
    files = {"many/SKILL.md": make_skill_md("many"), **{f"many/references/{n:03}.md": "x" for n in range(150)}}

    response = author_client.post("/skills/new/upload/", _folder(files))

    assert response.status_code == 302
    assert SkillVersion.objects.get(skill__name="many").files.count() == 150
