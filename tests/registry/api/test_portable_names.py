"""Names that Windows or a terminal shows as another name: a trailing dot or space (`x.md ` is
`x.md` on Windows), a reserved device name (`con`, `nul.md`, `COM1`, in any folder and case), a
character Windows does not allow in a name (`< > : " | ? *`: the skill would not install there) and
a bidirectional control (U+202A-U+202E, U+2066-U+2069) are refused in bundle paths and skill names,
with the rule and the path named — through the API (JSON and zip), the console and the CLI."""

from __future__ import annotations

import io
import zipfile
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from registry.models import Skill
from registry.roles import AUTHOR
from tests.factories import make_skill_md, user_with_role
from tests.registry.api.test_name_collisions import create

pytestmark = pytest.mark.django_db

TRAILING_DOT = "ends with a dot, which Windows drops"
TRAILING_SPACE = "ends with a space, which Windows drops"
DEVICE = "reserved device name"
BIDI = "bidirectional control"
RESERVED = "which Windows does not allow in a file or folder name"

BAD_PATHS = [
    (["x.md", "x.md "], "'x.md '", TRAILING_SPACE),
    (["y.md."], "'y.md.'", TRAILING_DOT),
    (["d./notes.md"], "'d./notes.md' ('d.')", TRAILING_DOT),
    (["con"], "'con'", f"{DEVICE} 'con'"),
    (["docs/NUL.md"], "'docs/NUL.md' ('NUL.md')", f"{DEVICE} 'NUL'"),
    (["Com1.tar.gz"], "'Com1.tar.gz'", f"{DEVICE} 'Com1'"),
    (["lpt1/readme.md"], "'lpt1/readme.md' ('lpt1')", f"{DEVICE} 'lpt1'"),
    (["invoice\u202egpj.sh"], "'invoice\\u202egpj.sh'", f"{BIDI} U+202E"),
    (["notes/\u2067evil.md"], "'notes/\\u2067evil.md' ('\\u2067evil.md')", f"{BIDI} U+2067"),
    (["a<b.md"], "'a<b.md'", f"'<', {RESERVED}"),
    (["docs/a>b.md"], "'docs/a>b.md' ('a>b.md')", f"'>', {RESERVED}"),
    (["notes:draft.md"], "'notes:draft.md'", f"':', {RESERVED}"),
    (['say "hi".md'], "'say \"hi\".md'", f"'\"', {RESERVED}"),
    (["a|b/c.md"], "'a|b/c.md' ('a|b')", f"'|', {RESERVED}"),
    (["why?.md"], "'why?.md'", f"'?', {RESERVED}"),
    (["scripts/*.sh"], "'scripts/*.sh' ('*.sh')", f"'*', {RESERVED}"),
]
IDS = [ascii(paths[-1]) for paths, _, _ in BAD_PATHS]


@pytest.mark.parametrize(("paths", "shown", "rule"), BAD_PATHS, ids=IDS)
def test_json_files_with_a_misleading_name_are_refused_naming_the_rule_and_the_path(api, paths, shown, rule):
    response = create(api, "portable", files=[(path, b"x") for path in paths])

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_bundle"
    assert f"The path {shown} " in body["detail"] and rule in body["detail"], body["detail"]
    assert body["fields"] == {"path": paths[-1]}
    assert not Skill.objects.exists()


def _zip(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            if name.endswith("/"):
                archive.writestr(zipfile.ZipInfo(name), b"")  # a folder entry, as zip tools write them
            else:
                archive.writestr(name, make_skill_md("zipped") if name.endswith("SKILL.md") else "x")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("names", "rule"),
    [
        (["SKILL.md", "d./", "d./a.md"], TRAILING_DOT),
        (["SKILL.md", "empty./"], TRAILING_DOT),  # an empty folder entry is checked too
        (["zipped/SKILL.md", "zipped/aux.json"], f"{DEVICE} 'aux'"),
        (["SKILL.md", "readme.md\u202c"], f"{BIDI} U+202C"),
        (["SKILL.md", "what?/a.md"], f"'?', {RESERVED}"),
    ],
)
def test_zip_entries_with_a_misleading_name_are_refused(api, names, rule):
    response = api.post("/api/v1/skills", _zip(names), content_type="application/zip")

    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_bundle" and rule in response.json()["detail"]
    assert not Skill.objects.exists()


def test_names_that_only_look_like_the_rules_are_kept(api):
    kept = ["console.md", "com10.txt", "nullable/x.md", "x.md.bak", ".meta/con-notes.md", "a b/c.md"]

    response = create(api, "near-misses", files=[(path, b"x") for path in kept])

    assert response.status_code == 201, response.content
    listed = api.get("/api/v1/skills/near-misses").json()
    assert sorted(f["path"] for f in listed["files"]) == sorted(kept)


@pytest.mark.parametrize(
    ("name", "rule"),
    [("con", f"{DEVICE} 'con'"), ("NUL.skill", f"{DEVICE} 'NUL'"), ("lpt1", DEVICE), ("my-skill.", TRAILING_DOT)],
)
def test_a_skill_name_windows_would_misread_is_refused_naming_the_rule(api, name, rule):
    response = create(api, name)

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_skill"
    assert f"The name '{name}' " in body["fields"]["name"] and rule in body["fields"]["name"]
    assert not Skill.objects.exists()


def test_a_skill_name_with_a_bidirectional_control_is_refused(api):
    response = create(api, "report\u202eexe")

    assert response.status_code == 400
    assert "cannot be stored" in response.json()["fields"]["name"]


@pytest.fixture
def author_client(client):
    client.force_login(user_with_role(AUTHOR))
    return client


def test_the_console_upload_refuses_a_zip_with_a_device_name_and_creates_nothing(author_client):
    upload = SimpleUploadedFile("skill.zip", _zip(["tools/SKILL.md", "tools/scripts/com1.sh"]))

    response = author_client.post("/skills/new/upload/", {"bundle": upload})

    page = response.content.decode()
    assert response.status_code == 400
    assert "scripts/com1.sh" in page and DEVICE in page
    assert not Skill.objects.exists()


def test_the_console_live_check_names_the_skill_name_rule(author_client):
    response = author_client.post(
        "/skills/new/",
        {"skill_md": make_skill_md("prn"), "base_version": "0", "check": "problems"},
        HTTP_HX_REQUEST="true",
    )

    page = response.content.decode()
    assert "The name &#x27;prn&#x27; uses the reserved device name" in page


def test_the_cli_import_refuses_a_folder_with_a_trailing_space(tmp_path):
    folder = tmp_path / "spaced"
    folder.mkdir()
    (folder / "SKILL.md").write_text(make_skill_md("spaced"))
    (folder / "notes.md ").write_text("shadow\n")

    with pytest.raises(CommandError, match="'notes.md ' ends with a space"):
        call_command("skills", "import", str(folder), stdout=StringIO(), stderr=StringIO())

    assert not Skill.objects.exists()
