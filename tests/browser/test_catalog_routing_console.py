"""The routing page in a real Chromium, as an analyst: reached from the nav, it shows the recall
figures, names the competing pair in overlaps and confusions (not the distinct third), and lists
a skill without trigger cases as "no evidence". Screenshot: test-output/screenshots/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.services.skills import skills_sync_bundled
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import make_skill_md
from tests.registry.routing_catalog import competing_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_analyst_reads_the_routing_report(live_server, open_page):
    user_with_role("alan", "analyst")
    assert not skills_sync_bundled().failed
    competing_catalog()
    page = open_page("alan")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Routing").click()

    expect(page.get_by_role("heading", name="Routing", exact=True)).to_be_visible()
    expect(page.locator(".routing-figures")).to_contain_text("recall@1")
    overlaps = page.locator("table.routing-overlaps tbody")
    expect(overlaps).to_contain_text("invoice-digest")
    expect(overlaps).to_contain_text("invoice-summary")
    expect(overlaps).not_to_contain_text("haiku-poems")
    confusions = page.locator("table.routing-confusions tbody")
    expect(confusions.locator("tr").first).to_contain_text("invoice-")
    expect(confusions).not_to_contain_text("haiku-poems")
    no_cases = page.locator("table.routing-skills tr", has_text="no-cases")
    expect(no_cases).to_contain_text("no evidence")
    code_review = page.locator("table.routing-skills tr", has_text="code-review")
    expect(code_review).to_contain_text("measured")
    code_review.locator("summary").click()
    expect(code_review.locator("ul.routing-cases li").first).to_be_visible()
    screenshot(page, "catalog-routing-analyst")

    page.fill("#id_label", "Not A Label")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#label-error")).to_be_visible()
    screenshot(page, "catalog-routing-bad-label")


def test_the_editor_warns_of_an_overlapping_description_as_you_type(live_server, open_page):
    user_with_role("ada", "author")
    competing_catalog()
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/new/")

    page.fill(
        "[data-skill-editor]",
        make_skill_md(
            "invoice-brief",
            description="Summarizes PDF invoices and billing statements into totals, due dates and vendors, briefly.",
            tags=["invoice", "billing"],
        ),
    )

    warnings = page.locator('#problems li[data-level="warning"]')
    expect(warnings.filter(has_text="overlaps the skill 'invoice-summary'")).to_have_count(1)
    expect(warnings.filter(has_text="overlaps the skill 'invoice-digest'")).to_have_count(1)
    expect(page.locator("#problems")).not_to_contain_text("haiku-poems")
    screenshot(page, "catalog-routing-editor-overlap-warning")
