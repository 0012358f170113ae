"""In a real headless Chromium, as admin, author and analyst: the skill page and list say which
version is served apart from the latest, rollback moves production back after a confirmation,
and a skill is created (or its files replaced) from a zip or a picked folder, with the
"Publish as read" step for a SKILL.md that needed a fallback reading."""

from __future__ import annotations

import zipfile

import pytest
from playwright.sync_api import expect

from registry.models import Label, SkillVersion
from registry.selectors import skill_get
from registry.services.labels import label_move
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import make_skill_md, publish
from tests.registry.test_publish_check import AS_TEXT, UNCLOSED_TAGS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


def _three_versions(name: str, production: int) -> None:
    for words in ("Version one.", "Version two.", "Version three."):
        publish(name, description=words, body=f"# {words}\n")
    label_move(skill=skill_get(name=name), label="production", version_number=production)


def _zip(path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return str(path)


def test_the_page_and_list_show_the_served_version_and_rollback_moves_production(live_server, open_page, author):
    _three_versions("meeting-notes", production=2)
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/")
    row = page.locator("#skill-table tbody tr").filter(has_text="meeting-notes")
    expect(row).to_contain_text("served v2 (production) · latest v3")
    expect(page.get_by_role("link", name="Upload a zip or folder")).to_be_visible()
    screenshot(page, "served-list-author")

    row.get_by_role("link", name="meeting-notes").click()
    served = page.locator("#served")
    expect(served).to_contain_text("Agents and API readers get v2")
    expect(served).to_contain_text("Latest is v3 (draft, not served)")
    expect(page.locator(".markdown")).to_contain_text("Version two.")
    expect(page.get_by_role("link", name="Download v2 (production) as zip")).to_be_visible()
    screenshot(page, "served-page-author")

    served.get_by_role("link", name="v3", exact=True).click()
    expect(page.locator("#served")).to_contain_text("You are looking at v3")
    expect(page.locator("#served")).to_contain_text("which is not served: readers get v2")
    expect(page.locator(".markdown")).to_contain_text("Version three.")
    expect(page.get_by_role("link", name="Download v3 (latest) as zip")).to_be_visible()
    screenshot(page, "served-latest-author")

    page.get_by_role("link", name="Versions").click()
    expect(page.get_by_role("button", name="Move production back to v1")).to_be_visible()
    expect(page.get_by_role("button", name="Promote v3 to production")).to_be_visible()
    expect(page.get_by_role("button", name="Move production back to v3")).to_have_count(0)
    expect(page.get_by_role("button", name="Move production back to v2")).to_have_count(0)
    screenshot(page, "served-versions-author")
    page.get_by_role("button", name="Move production back to v1").click()

    expect(page.locator("#confirm-title")).to_contain_text("back to v1?")
    assert Label.objects.get(name="production").version.number == 2
    screenshot(page, "served-rollback-confirm-author")
    page.get_by_role("button", name="Confirm").click()

    expect(page.locator(".flash-success")).to_contain_text("Moved production of meeting-notes from v2 to v1")
    page.goto(f"{live_server.url}/skills/meeting-notes/")
    expect(page.locator("#served")).to_contain_text("Agents and API readers get v1")


def test_an_analyst_sees_what_is_served_and_cannot_upload(live_server, open_page):
    user_with_role("alan", "analyst")
    _three_versions("code-review", production=1)
    page = open_page("alan")

    page.goto(f"{live_server.url}/skills/code-review/")
    expect(page.locator("#served")).to_contain_text("Agents and API readers get v1")
    expect(page.locator("#served")).to_contain_text("Latest is v3 (draft, not served)")
    expect(page.locator("#served").get_by_role("link", name="edit v3")).to_have_count(0)
    screenshot(page, "served-page-analyst")
    page.goto(f"{live_server.url}/skills/code-review/versions/")
    expect(page.get_by_role("button", name="Move production back to v1")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("Readers that name no label get v1")
    page.goto(f"{live_server.url}/skills/")
    expect(page.get_by_role("link", name="Upload a zip or folder")).to_have_count(0)
    screenshot(page, "served-list-analyst")

    response = page.goto(f"{live_server.url}/skills/new/upload/")
    assert response.status == 403


def test_an_admin_creates_a_skill_from_a_zip_on_the_new_page(live_server, open_page, tmp_path):
    user_with_role("root", "admin")
    archive = _zip(
        tmp_path / "pdf-tools.zip",
        {"pdf-tools/SKILL.md": make_skill_md("pdf-tools"), "pdf-tools/scripts/extract.py": "print('text')\n"},
    )
    page = open_page("root")

    page.goto(f"{live_server.url}/skills/new/")
    screenshot(page, "upload-offered-on-new-page-admin")
    page.get_by_role("link", name="Create it from a zip or a folder").click()
    page.set_input_files("#upload-zip", archive)
    page.fill("#upload-message", "From the laptop")
    screenshot(page, "upload-zip-chosen-admin")
    page.get_by_role("button", name="Publish").click()

    expect(page.locator(".flash-success")).to_contain_text("Published pdf-tools v1")
    expect(page.locator("#files")).to_contain_text("scripts/extract.py")
    version = SkillVersion.objects.get(skill__name="pdf-tools")
    assert version.message == "From the laptop"
    screenshot(page, "upload-created-admin")


def test_an_author_creates_a_skill_from_a_picked_folder(live_server, open_page, author, tmp_path):
    folder = tmp_path / "sql-query"
    (folder / "scripts").mkdir(parents=True)
    (folder / "references" / "dialects").mkdir(parents=True)
    (folder / "SKILL.md").write_text(make_skill_md("sql-query"))
    (folder / "scripts" / "explain.py").write_text("print('plan')\n")
    (folder / "references" / "dialects" / "postgres.md").write_text("# PostgreSQL\n")
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/")
    page.locator(".page-head").get_by_role("link", name="Upload a zip or folder").click()
    page.set_input_files("#upload-folder", str(folder))
    expect(page.locator("[data-folder-summary]")).to_contain_text("3 files from the folder sql-query")
    page.select_option("#upload-source", "workspace")
    screenshot(page, "upload-folder-chosen-author")
    page.get_by_role("button", name="Publish").click()

    expect(page.locator(".flash-success")).to_contain_text("Published sql-query v1")
    version = SkillVersion.objects.get(skill__name="sql-query")
    assert version.skill.source == "workspace"
    assert [(f.path, f.executable) for f in version.files.all()] == [
        ("references/dialects/postgres.md", False),
        ("scripts/explain.py", True),
    ]
    screenshot(page, "upload-folder-created-author")


def test_a_lenient_zip_is_refused_with_its_line_then_published_as_read(live_server, open_page, author, tmp_path):
    archive = _zip(tmp_path / "release.zip", {"release-checklist/SKILL.md": UNCLOSED_TAGS})
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/new/upload/")
    page.set_input_files("#upload-zip", archive)
    page.get_by_role("button", name="Publish").click()

    refused = page.locator("#upload-result .flash-error")
    expect(refused).to_contain_text("Not published.")
    expect(refused).to_contain_text("SKILL.md line 4:")
    expect(refused).to_contain_text("`tags` is not valid YAML")
    as_read = page.locator("#as-read")
    expect(as_read.locator('tr[data-field="tags"] code.stored')).to_have_text(AS_TEXT)
    expect(as_read.locator('tr[data-read="triggers"] code.stored')).to_have_text("[] (none)")
    expect(as_read).to_contain_text("Publishes the chosen files")
    assert page.url.endswith("/skills/new/upload/")
    assert not SkillVersion.objects.exists()
    screenshot(page, "upload-lenient-refused-author")

    as_read.get_by_role("button", name="Publish as read").click()  # the chosen zip is still chosen

    expect(page.locator(".flash-success")).to_contain_text("Published release-checklist v1")
    version = SkillVersion.objects.get(skill__name="release-checklist")
    assert version.frontmatter["tags"] == AS_TEXT and version.triggers == []
    screenshot(page, "upload-lenient-published-author")


def test_replacing_a_skills_files_from_a_zip_offers_publish_as_read(live_server, open_page, author, tmp_path):
    publish("release-checklist", files=[("scripts/old.sh", b"echo old\n", True)])
    archive = _zip(tmp_path / "release.zip", {"SKILL.md": UNCLOSED_TAGS, "references/steps.md": "# Steps\n"})
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/release-checklist/")
    page.get_by_role("link", name="Replace every file from a zip or folder").click()
    expect(page.locator(".upload-form .box-head")).to_contain_text("publishes v2")
    page.set_input_files("#upload-zip", archive)
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.locator("#as-read")).to_be_visible()
    expect(page.locator("#upload-result .flash-error")).not_to_contain_text("editor")
    screenshot(page, "replace-lenient-refused-author")
    page.get_by_role("button", name="Publish as read").click()

    expect(page.locator(".flash-success")).to_contain_text("Published release-checklist v2")
    version = SkillVersion.objects.get(skill__name="release-checklist", number=2)
    assert [f.path for f in version.files.all()] == ["references/steps.md"]


def test_without_javascript_a_zip_uploads_and_the_accept_step_asks_for_it_again(live_server, browser, author, tmp_path):
    archive = _zip(tmp_path / "release.zip", {"SKILL.md": UNCLOSED_TAGS})
    page = new_page(browser, java_script_enabled=False)
    try:
        log_in(page, live_server.url, "ada")
        page.goto(f"{live_server.url}/skills/new/upload/")
        expect(page.locator("#upload-folder")).to_be_hidden()  # picking a folder needs the script
        page.set_input_files("#upload-zip", archive)
        page.get_by_role("button", name="Publish").click()

        expect(page.locator("#as-read")).to_contain_text("Choose the same zip again")
        screenshot(page, "upload-lenient-refused-nojs-author")
        page.set_input_files("#upload-zip", archive)
        page.get_by_role("button", name="Publish as read").click()

        expect(page.locator(".flash-success")).to_contain_text("Published release-checklist v1")
    finally:
        page.context.close()
