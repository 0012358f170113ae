"""The skills console in a real headless Chromium: search, create with live validation,
publish, diff, rollback, the conflict screen, file upload, roles, redirects, stored XSS."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from registry.models import Label, SkillVersion
from registry.selectors import skill_get
from registry.services.labels import label_move
from tests.browser.console_helpers import new_page, screenshot, user_with_role
from tests.factories import make_skill_md, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LINE_N = re.compile(r"line \d+")


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


def test_search_filters_the_list_as_you_type(live_server, open_page, author):
    publish("pdf-tools", description="Extract text and tables from PDF files.", tags=["pdf"])
    publish("sql-query", description="Write and explain SQL queries.", tags=["sql"])
    publish("sql-query", source="bundled", description="The bundled SQL helper.")
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/")
    expect(page.locator("#skill-table")).to_contain_text("shadowed by user")
    page.keyboard.press("/")  # focuses the search box
    page.keyboard.type("pdf")

    expect(page.locator("#skill-table tbody tr")).to_have_count(1)
    expect(page.locator("#skill-table")).to_contain_text("pdf-tools")
    assert "q=pdf" in page.url  # the filtered list has its own address
    screenshot(page, "skills-search-author")


def test_create_a_skill_with_a_validation_error_shown_while_typing(live_server, open_page, author):
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/")
    page.get_by_role("link", name="New skill").click()
    # Typing waits for the page's load: until then the code editor has not replaced the textarea,
    # nor has htmx bound the live check to it.
    page.wait_for_url("**/skills/new/")
    # A new skill from a template can be published as it is: no problem at all.
    expect(page.locator("#problems")).to_be_visible()
    expect(page.locator('#live .problems li[data-level="error"]')).to_have_count(0)

    editor = page.locator("[data-skill-editor]")
    editor.fill("---\nname: release-notes\n---\n\n# Release notes\n")
    problem = page.locator("#live .problems li").filter(has_text=LINE_N).first
    expect(problem).to_be_visible()
    expect(problem).to_contain_text("description")
    assert page.url.endswith("/skills/new/")
    assert not SkillVersion.objects.exists()
    screenshot(page, "skills-new-live-error-author")

    line = LINE_N.search(problem.inner_text()).group().removeprefix("line ")
    problem.click()  # jumps to the line in the editor
    expect(page.locator(".cm-lineNumbers .cm-activeLineGutter")).to_have_text(line)

    editor.fill(make_skill_md("release-notes", description="Writes release notes from merged changes."))
    expect(page.locator("#live")).to_contain_text("No problems")
    expect(page.locator("#live")).to_contain_text("<available_skills>")
    page.fill("input[name=message]", "First draft")
    page.get_by_role("button", name="Publish").click()

    expect(page.locator(".flash-success")).to_contain_text("Published release-notes v1")
    expect(page.locator(".page-head h1")).to_contain_text("release-notes")
    assert SkillVersion.objects.get(skill__name="release-notes").message == "First draft"
    screenshot(page, "skills-created-author")


def test_publish_two_versions_diff_them_and_roll_back_with_confirmation(live_server, open_page, author):
    publish("meeting-notes", description="Summarises meetings into decisions and actions.")
    page = open_page("ada")

    for number, words in (
        (2, "Summarises meetings into decisions, owners and dates."),
        (3, "Turns a meeting into notes."),
    ):
        page.goto(f"{live_server.url}/skills/meeting-notes/edit/")
        page.fill("[data-skill-editor]", make_skill_md("meeting-notes", description=words))
        page.fill("input[name=message]", f"Wording, take {number}")
        if number == 3:
            page.locator("[data-skill-editor]").press("Control+s")  # the keyboard shortcut publishes
        else:
            page.get_by_role("button", name="Publish").click()
        expect(page.locator(".flash-success")).to_contain_text(f"Published meeting-notes v{number}")
    screenshot(page, "skills-page-author")

    page.goto(f"{live_server.url}/skills/meeting-notes/diff/?from=2&to=3")
    expect(page.locator(".diff tr.del").first).to_contain_text("decisions, owners and dates")
    expect(page.locator(".diff tr.add").first).to_contain_text("Turns a meeting into notes.")
    screenshot(page, "skills-diff-author")

    label_move(skill=skill_get(name="meeting-notes"), label="production", version_number=3)
    page.goto(f"{live_server.url}/skills/meeting-notes/versions/")
    expect(page.get_by_role("button", name=re.compile("production to v3"))).to_have_count(0)
    screenshot(page, "skills-versions-author")
    page.get_by_role("button", name="Move production back to v1").click()

    expect(page.get_by_role("button", name="Confirm")).to_be_visible()
    assert Label.objects.get(name="production").version.number == 3  # nothing moved yet
    screenshot(page, "skills-rollback-confirm-author")
    page.get_by_role("button", name="Confirm").click()

    expect(page.locator(".flash-success")).to_contain_text("Moved production of meeting-notes from v3 to v1")
    assert Label.objects.get(name="production").version.number == 1


def test_two_editors_the_second_gets_the_conflict_screen_with_their_text_kept(live_server, open_page, author):
    user_with_role("grace", "author")
    publish("sql-query", description="Write and explain SQL queries.")
    first, second = open_page("ada"), open_page("grace")
    first.goto(f"{live_server.url}/skills/sql-query/edit/")
    second.goto(f"{live_server.url}/skills/sql-query/edit/")

    first.fill("[data-skill-editor]", make_skill_md("sql-query", description="Ada's wording."))
    first.get_by_role("button", name="Publish").click()
    expect(first.locator(".flash-success")).to_contain_text("v2")

    mine = make_skill_md("sql-query", description="Grace's wording.", body="# SQL\n\nGrace's careful steps.\n")
    second.fill("[data-skill-editor]", mine)
    second.get_by_role("button", name="Publish").click()

    expect(second.locator(".conflict")).to_contain_text("conflict")
    assert second.locator("textarea[name=skill_md]").input_value() == mine
    expect(second.locator(".conflict .diff")).to_contain_text("Ada's wording.")
    assert SkillVersion.objects.filter(skill__name="sql-query").count() == 2
    screenshot(second, "skills-conflict-author")

    second.get_by_role("button", name="Publish on top of v2").click()
    expect(second.locator(".flash-success")).to_contain_text("Published sql-query v3")
    assert SkillVersion.objects.get(skill__name="sql-query", number=3).skill_md == mine


def test_upload_a_bundle_file_and_toggle_its_executable_bit(live_server, open_page, author, tmp_path):
    publish("unit-conversion")
    script = tmp_path / "convert.py"
    script.write_text("print('ok')\n")
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/unit-conversion/")
    page.set_input_files("input[name=files]", str(script))
    page.fill("input[name=folder]", "scripts")
    page.get_by_role("button", name="Upload").click()

    expect(page.locator(".flash-success")).to_contain_text("Published unit-conversion v2")
    expect(page.locator("#files")).to_contain_text("scripts/convert.py")
    uploaded = SkillVersion.objects.get(skill__name="unit-conversion", number=2).files.get()
    assert (uploaded.path, uploaded.executable) == ("scripts/convert.py", True)  # scripts/ files start executable
    page.get_by_role("button", name="Make scripts/convert.py not executable").click()
    expect(page.locator(".flash-success")).to_contain_text("v3")
    file = SkillVersion.objects.get(skill__name="unit-conversion", number=3).files.get()
    assert (file.path, file.executable) == ("scripts/convert.py", False)
    screenshot(page, "skills-files-author")


def test_an_analyst_reads_skills_but_has_no_write_controls(live_server, open_page):
    user_with_role("alan", "analyst")
    publish("code-review", files=[("scripts/lint.sh", b"echo lint\n", True)])
    publish("code-review", description="Reviews code for bugs, style and risks.")
    page = open_page("alan")

    page.goto(f"{live_server.url}/skills/")
    expect(page.locator("#skill-table")).to_contain_text("code-review")
    expect(page.get_by_role("link", name="New skill")).to_have_count(0)
    screenshot(page, "skills-list-analyst")

    page.goto(f"{live_server.url}/skills/code-review/")
    expect(page.locator(".markdown")).to_contain_text("Step one.")
    expect(page.get_by_role("link", name="Edit SKILL.md")).to_have_count(0)
    expect(page.get_by_role("button", name="Upload")).to_have_count(0)
    screenshot(page, "skills-page-analyst")

    page.goto(f"{live_server.url}/skills/code-review/versions/")
    expect(page.get_by_role("button", name=re.compile("production"))).to_have_count(0)
    screenshot(page, "skills-versions-analyst")

    response = page.goto(f"{live_server.url}/skills/code-review/edit/")
    assert response.status == 403


def test_an_admin_sees_every_skills_page(live_server, open_page):
    user_with_role("root", "admin")
    publish("api-design", tags=["api"], files=[("references/http.md", b"# Status codes\n", False)])
    publish("api-design", description="Designs HTTP APIs and reviews them.", tags=["api", "rest"])
    publish("api-design", source="bundled")
    label_move(skill=skill_get(name="api-design"), label="production", version_number=1)
    label_move(skill=skill_get(name="api-design"), label="staging", version_number=2)
    page = open_page("root")

    for slug, url in [
        ("list", "/skills/"),
        ("page", "/skills/api-design/"),
        ("versions", "/skills/api-design/versions/"),
        ("edit", "/skills/api-design/edit/"),
        ("new", "/skills/new/?template=script"),
        ("file", "/skills/api-design/files/references/http.md?version=1"),
    ]:
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == 200, url
        screenshot(page, f"skills-{slug}-admin")
    expect(page.locator("body")).to_contain_text("Status codes")


@pytest.mark.parametrize(
    "path",
    ["/skills/", "/skills/new/", "/skills/x/", "/skills/x/edit/", "/skills/x/versions/", "/skills/x/diff/?from=1&to=2"],
)
def test_logged_out_pages_redirect_to_login(live_server, browser, path):
    page = new_page(browser)
    try:
        page.goto(f"{live_server.url}{path}")
        assert "/login/" in page.url
        expect(page.locator("#id_username")).to_be_visible()
    finally:
        page.context.close()


XSS = "<img src=x onerror=window.__xss=1><script>window.__xss=1</script>"
# `<`, `>` and `"` are refused in paths (Windows allows none of them): a quote and entities try to break out.
HOSTILE_PATH = "scripts/x' onfocus='window.__xss=1' &lt;img src=x onerror=window.__xss=1&gt;.sh"


def test_stored_xss_in_skill_text_file_names_and_messages_stays_inert(live_server, open_page, author):
    skill_md = (
        "---\n"
        "name: xss-skill\n"
        f'description: "{XSS}"\n'
        f'metadata: {{"note": "{XSS}"}}\n'
        f'tags: ["<svg onload=window.__xss=1>"]\n'
        "---\n\n"
        f"# Title {XSS}\n\n"
        "[click me](javascript:window.__xss=1) [data](data:text/html,<script>window.__xss=1</script>)\n\n"
        f'<a href="javascript:window.__xss=1">raw</a> {XSS}\n'
    )
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    bundle = bundle_from_parts(skill_md.encode(), [(HOSTILE_PATH, b"echo\n", True)])
    skill_version_publish(bundle=bundle, message=XSS)
    skill_version_publish(bundle=bundle_from_parts(skill_md.replace("Title", "Other").encode(), []), message=XSS)
    page = open_page("ada")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    for url in [
        "/skills/",
        "/skills/xss-skill/",
        "/skills/xss-skill/?version=1",
        "/skills/xss-skill/versions/",
        "/skills/xss-skill/diff/?from=1&to=2",
        "/skills/xss-skill/edit/",
    ]:
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__xss") is None, url
        assert page.locator("a[href^='javascript:' i], a[href^='data:' i]").count() == 0, url
    page.goto(f"{live_server.url}/skills/xss-skill/?version=1")
    expect(page.locator("#files")).to_contain_text(HOSTILE_PATH.removeprefix("scripts/"))  # shown as text
    expect(page.locator(".markdown")).to_contain_text("click me")  # the link text stays, the link does not
    page.goto(f"{live_server.url}/skills/xss-skill/edit/")
    page.fill("[data-skill-editor]", skill_md + "\nmore\n")  # the live preview renders it too
    expect(page.locator("#live .markdown")).to_contain_text("more")
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    screenshot(page, "skills-xss-inert-author")
