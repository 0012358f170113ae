"""Names that a case- or normalisation-insensitive file system (macOS, Windows) would merge:
skill names unique regardless of case, bundle paths refused when two differ only by case or
Unicode normalisation, and zip entry names read as UTF-8 — through the API, the console and
the CLI, which all publish through the same service and bundle readers."""

from __future__ import annotations

import base64
import io
import unicodedata
import zipfile
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from registry.models import Skill, SkillVersion
from registry.roles import AUTHOR
from registry.skillformat.bundle import read_zip
from tests.factories import make_skill_md, publish, user_with_role

pytestmark = pytest.mark.django_db

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


def create(api, name="demo-skill", *, files=(), source="user"):
    body = {"skill_md": make_skill_md(name), "source": source}
    if files:
        body["files"] = [
            {"path": path, "content_base64": base64.b64encode(content).decode()} for path, content in files
        ]
    return api.post("/api/v1/skills", body, format="json")


# --- skill names ---------------------------------------------------------------------------


def test_a_skill_name_differing_only_by_case_is_a_409_naming_the_existing_skill(api):
    assert create(api, "UPPER-case").status_code == 201

    response = create(api, "upper-case")

    assert response.status_code == 409, response.content
    body = response.json()
    assert body["error"] == "conflict"
    assert "'UPPER-case' (user) already exists" in body["detail"]
    assert "upper-case" in body["fields"]["name"] or "UPPER-case" in body["fields"]["name"]
    assert list(Skill.objects.values_list("name", flat=True)) == ["UPPER-case"]


def test_shadowing_another_source_needs_the_same_spelling(api):
    """The same name in a higher source shadows (SPEC §3); a name that differs only by case
    would sit beside it instead, so it is refused and the existing spelling is named."""
    assert create(api, "Report-writer", source="user").status_code == 201

    refused = create(api, "report-writer", source="workspace")
    shadowing = create(api, "Report-writer", source="workspace")

    assert refused.status_code == 409
    assert "'Report-writer' (user)" in refused.json()["detail"]
    assert shadowing.status_code == 201, shadowing.content
    listed = api.get("/api/v1/skills?name=Report-writer").json()["results"]
    assert [(s["name"], s["source"]) for s in listed if s["name"].lower() == "report-writer"] == [
        ("Report-writer", "workspace")
    ]


def test_a_new_version_of_an_uppercase_skill_is_not_a_clash(api):
    create(api, "Mixed-Case")

    response = api.post(
        "/api/v1/skills/Mixed-Case/versions",
        {"skill_md": make_skill_md("Mixed-Case", description="Changed.")},
        format="json",
    )

    assert response.status_code == 201, response.content


def test_the_database_refuses_names_differing_only_by_case_in_one_source():
    """The constraint holds even for writes that skip the service (and under races)."""
    Skill.objects.create(name="twice", source="user")
    Skill.objects.create(name="TWICE", source="workspace")  # another source: not this constraint's business
    with pytest.raises(IntegrityError), transaction.atomic():
        Skill.objects.create(name="Twice", source="user")


def test_the_cli_refuses_a_skill_name_differing_only_by_case(tmp_path):
    publish("cli-skill")
    folder = tmp_path / "CLI-Skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(make_skill_md("CLI-Skill"))

    with pytest.raises(CommandError, match="'cli-skill' \\(user\\) already exists"):
        call_command("skills", "import", str(folder), "--source", "user", stdout=StringIO(), stderr=StringIO())

    assert not Skill.objects.filter(name="CLI-Skill").exists()


# --- bundle paths --------------------------------------------------------------------------

CLASHES = [
    ("README.md", "readme.md", "upper- and lowercase"),
    ("skill.md", None, "upper- and lowercase"),  # beside SKILL.md itself
    (NFC, NFD, "Unicode normalisation"),
    ("Docs/a.md", "docs/b.md", "upper- and lowercase"),  # two folders that would merge
    ("Notes", "notes/x.md", "upper- and lowercase"),  # a file and a folder
    (unicodedata.normalize("NFD", "Café.md"), NFC, "upper- and lowercase and Unicode normalisation"),
]


@pytest.mark.parametrize(("first", "second", "rule"), CLASHES, ids=[f"{a}+{b}" for a, b, _ in CLASHES])
def test_json_files_whose_paths_differ_only_by_case_or_normalisation_are_refused(api, first, second, rule):
    paths = [first] + ([second] if second else [])
    response = create(api, "clash", files=[(path, path.encode()) for path in paths])

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_bundle"
    assert f"only by {rule}" in body["detail"]
    shown = [p.split("/")[0] if "/" in p else p for p in [first, second or "SKILL.md"]]
    if "Docs/a.md" in paths:
        shown = ["Docs", "docs"]
    for path in shown:
        assert repr(path) in body["detail"], (path, body["detail"])
    assert not Skill.objects.exists()


def test_a_normalisation_clash_shows_both_spellings_escaped(api):
    response = create(api, "clash", files=[(NFC, b"1"), (NFD, b"2")])

    detail = response.json()["detail"]
    assert ascii(NFC) in detail and ascii(NFD) in detail  # 'caf\xe9.md' and 'cafe\u0301.md'


def zip_with_raw_names(entries: list[tuple[bytes, bytes]], *, utf8_flag: bool = False) -> bytes:
    """A zip whose entry names are the given bytes as stored, with or without the UTF-8 flag
    (bit 11): zipfile itself sets the flag for every non-ASCII name, as other tools do not."""
    buffer = io.BytesIO()
    placeholders = []
    with zipfile.ZipFile(buffer, "w") as archive:
        for index, (raw, content) in enumerate(entries):
            placeholder = f"{index:0{len(raw)}d}".encode()
            assert len(placeholder) == len(raw)
            placeholders.append((placeholder, raw))
            info = zipfile.ZipInfo(placeholder.decode())
            info.external_attr = 0o100644 << 16
            if utf8_flag:
                info.flag_bits |= 0x800
            archive.writestr(info, content)
    data = buffer.getvalue()
    for placeholder, raw in placeholders:
        assert data.count(placeholder) == 2  # the local header and the central directory
        data = data.replace(placeholder, raw)
    return data


def test_zip_entries_whose_paths_differ_only_by_case_are_refused(api):
    body = zip_with_raw_names([(b"SKILL.md", make_skill_md("zipped").encode()), (b"skill.md", b"x")])

    response = api.post("/api/v1/skills", body, content_type="application/zip")

    assert response.status_code == 400, response.content
    assert "'SKILL.md' and 'skill.md' differ only by upper- and lowercase" in response.json()["detail"]
    assert not Skill.objects.exists()


def test_a_utf8_zip_name_without_the_utf8_flag_is_read_as_utf8_not_mojibake(api):
    body = zip_with_raw_names([(b"SKILL.md", make_skill_md("zipped").encode()), (NFC.encode(), b"accent")])

    response = api.post("/api/v1/skills", body, content_type="application/zip")

    assert response.status_code == 201, response.content
    assert [f.path for f in SkillVersion.objects.get().files.all()] == [NFC]  # not 'cafÃ©.md'


def test_a_zip_name_that_is_not_utf8_is_refused_naming_the_entry(api):
    body = zip_with_raw_names([(b"SKILL.md", make_skill_md("zipped").encode()), (b"caf\xe9.md", b"latin-1")])

    response = api.post("/api/v1/skills", body, content_type="application/zip")

    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "caf\\xe9.md" in detail and "not valid UTF-8" in detail
    assert not Skill.objects.exists()


def test_a_zip_name_flagged_utf8_that_is_not_is_a_400(api):
    body = zip_with_raw_names(
        [(b"SKILL.md", make_skill_md("zipped").encode()), (b"caf\xe9.md", b"latin-1")], utf8_flag=True
    )

    response = api.post("/api/v1/skills", body, content_type="application/zip")

    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_bundle"
    assert not Skill.objects.exists()


def test_a_lone_nfd_path_is_kept_byte_for_byte(api):
    """Only a pair is refused: a single decomposed name (as macOS writes them) round-trips as is."""
    assert create(api, "decomposed", files=[(NFD, b"accent\n")]).status_code == 201

    exported = read_zip(api.get("/api/v1/skills/decomposed/bundle.zip").content)
    served = api.get(f"/api/v1/skills/decomposed/files/{NFD}")

    assert [f.path for f in exported.files] == [NFD]
    assert exported.files[0].path.encode() == NFD.encode()
    assert served.status_code == 200 and served.content == b"accent\n"


def test_a_console_upload_beside_a_file_differing_only_by_case_changes_nothing(client):
    publish("demo-skill", files=[("README.md", b"# Read me\n", False)])
    client.force_login(user_with_role(AUTHOR))

    response = client.post(
        "/skills/demo-skill/files/",
        {"action": "upload", "base_version": "1", "files": SimpleUploadedFile("readme.md", b"# lower\n")},
        follow=True,
    )

    page = response.content.decode()
    assert "Nothing changed" in page and "differ only by upper- and lowercase" in page
    assert SkillVersion.objects.count() == 1


def test_cli_import_and_sync_refuse_a_folder_with_names_differing_only_by_case(settings, tmp_path):
    folder = tmp_path / "bundled" / "twins"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(make_skill_md("twins"))
    (folder / "README.md").write_text("upper\n")
    (folder / "readme.md").write_text("lower\n")

    with pytest.raises(CommandError, match="'README.md' and 'readme.md' differ only by upper- and lowercase"):
        call_command("skills", "import", str(folder), stdout=StringIO(), stderr=StringIO())

    settings.BUNDLED_SKILLS_DIR = tmp_path / "bundled"
    out = StringIO()
    with pytest.raises(CommandError, match="1 skill"):
        call_command("skills", "sync", stdout=out, stderr=out)
    assert "1 failed" in out.getvalue() and "'README.md' and 'readme.md'" in out.getvalue()
    assert not Skill.objects.exists()
