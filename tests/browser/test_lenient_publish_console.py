"""In a real headless Chromium, an author types a frontmatter with an unclosed list: the live
check marks it as an error on its line, Publish refuses it, "Publish as read" shows each field
as it will be stored, and accepting publishes exactly those fields."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import Skill, SkillVersion
from tests.browser.console_helpers import screenshot, user_with_role
from tests.registry.test_publish_check import AS_TEXT, UNCLOSED_TAGS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


def test_an_unclosed_list_is_refused_with_its_line_then_published_as_read(live_server, open_page, author):
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/new/")
    editor = page.locator("[data-skill-editor]")
    # Pasted, as an author brings an existing SKILL.md: typed key by key, the editor would indent
    # the lines after the open `[` as YAML continues it.
    editor.fill(UNCLOSED_TAGS)

    # While typing: an error on line 4, and no preview (what the check calls an error does not publish).
    problem = page.locator('#live .problems li[data-level="error"]')
    expect(problem).to_have_count(1)
    expect(problem).to_have_attribute("data-line", "4")
    expect(problem).to_contain_text("line 4:")
    expect(problem).to_contain_text("tags is not valid YAML")
    expect(problem.locator("code").first).to_have_text("tags")  # a code span, not backticks
    expect(problem).to_contain_text("lines 4-5")
    expect(page.locator("#preview")).to_contain_text("The preview appears once the problems marked × are fixed")
    screenshot(page, "skills-lenient-live-error-author")

    page.fill("input[name=message]", "Release checklist")
    page.get_by_role("button", name="Publish", exact=True).click()

    refused = page.locator(".flash-error")
    expect(refused).to_contain_text("Not published.")
    expect(refused).to_contain_text("line 4:")
    assert not Skill.objects.exists()
    as_read = page.locator("#as-read")
    expect(as_read).to_be_visible()
    expect(as_read.locator('tr[data-field="tags"] code.stored')).to_have_text(AS_TEXT)
    expect(as_read.locator('tr[data-field="tags"]')).to_contain_text("line 4: tags is not valid YAML")
    expect(as_read.locator('tr[data-field="name"] code.stored')).to_have_text("release-checklist")
    expect(as_read.locator('tr[data-field="triggers"]')).to_have_count(0)
    expect(as_read.locator('tr[data-read="triggers"] code.stored')).to_have_text("[] (none)")
    expect(page.locator("textarea[name=skill_md]")).to_have_value(UNCLOSED_TAGS)  # the text is kept
    expect(page.locator("[data-skill-editor]")).to_have_text(UNCLOSED_TAGS.replace("\n", ""))
    as_read.scroll_into_view_if_needed()
    screenshot(page, "skills-lenient-publish-as-read-author")

    as_read.get_by_role("button", name="Publish as read").click()

    expect(page.locator(".flash-success")).to_contain_text("Published release-checklist v1")
    version = SkillVersion.objects.get(skill__name="release-checklist")
    assert version.frontmatter["tags"] == AS_TEXT and version.triggers == []
    assert version.skill_md == UNCLOSED_TAGS and version.message == "Release checklist"
    expect(page.locator(".flash-warning").first).to_contain_text("line 4:")
    screenshot(page, "skills-lenient-published-author")
