"""A skill's requirements in the console, in a real headless Chromium: its page lists what it
requires (a skill missing from the registry flagged) and who requires it; disabling a skill
others require asks first, naming them, and only the confirmation disables it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import Skill
from registry.services.labels import label_move
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def requiring(name: str, requires: str, description: str) -> None:
    publish(name, description=description, metadata=f'{{requires: "{requires}"}}')


def test_the_skill_page_shows_requirements_and_disabling_a_required_skill_asks_naming_who_needs_it(
    live_server, open_page
):
    user_with_role("ada", "author")
    publish("pdf-tools", description="Reads and fills PDF forms. Use for any PDF.")
    requiring("report", "skill:pdf-tools, skill:charts@stable, tool:Bash, mcp:github", "Writes the monthly report.")
    requiring("invoice", "skill:pdf-tools@1", "Makes invoices as PDF.")
    label_move(skill=Skill.objects.get(name="report"), label="production", version_number=1)
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/report/")
    requires = page.locator("#requirements")
    expect(requires.locator("tr[data-requirement]")).to_have_count(4)
    expect(requires.locator("tr[data-requirement='skill:charts@stable'] .requirement-problem")).to_contain_text(
        "no enabled skill is named 'charts'"
    )
    expect(requires.locator("tr[data-requirement='skill:pdf-tools'] .requirement-problem")).to_have_count(0)
    expect(requires.locator("tr[data-requirement='mcp:github']")).to_contain_text("github")
    screenshot(page, "skill-requirements-author")

    page.goto(f"{live_server.url}/skills/pdf-tools/")
    expect(page.locator("#required-by tr[data-requirer]")).to_have_count(2)
    expect(page.locator("#required-by tr[data-requirer='invoice']")).to_contain_text("skill:pdf-tools@1")
    screenshot(page, "skill-required-by-author")
    page.get_by_role("button", name="Disable this skill").click()

    expect(page.get_by_role("heading", name="Disable pdf-tools? 2 skills require it")).to_be_visible()
    expect(page.locator(".required-by-confirm tr[data-requirer]")).to_have_count(2)
    expect(page.locator(".required-by-confirm tr[data-requirer='report']")).to_contain_text("production")
    screenshot(page, "skill-disable-confirm-author")
    assert Skill.objects.get(name="pdf-tools").enabled

    page.get_by_role("button", name="Disable pdf-tools").click()
    expect(page.locator(".flash-success")).to_contain_text("Disabled pdf-tools")
    assert not Skill.objects.get(name="pdf-tools").enabled


def test_an_analyst_reads_requirements_and_required_by_without_a_disable_button(live_server, open_page):
    user_with_role("ann", "analyst")
    publish("pdf-tools", description="Reads and fills PDF forms. Use for any PDF.")
    requiring("report", "skill:pdf-tools, tool:Bash", "Writes the monthly report.")
    page = open_page("ann")

    page.goto(f"{live_server.url}/skills/pdf-tools/")

    expect(page.locator("#required-by tr[data-requirer='report']")).to_contain_text("skill:pdf-tools")
    expect(page.get_by_role("button", name="Disable this skill")).to_have_count(0)
    page.goto(f"{live_server.url}/skills/report/")
    expect(page.locator("#requirements tr[data-requirement]")).to_have_count(2)
    screenshot(page, "skill-requirements-analyst")
