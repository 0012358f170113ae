"""The dashboard leads somewhere: a recent publish opens that skill at that version, and the
figures open the pages they count."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_recent_publish_opens_that_version_and_the_figures_open_their_pages(open_page, live_server):
    user_with_role("ana", "analyst")
    publish("haiku", description="First.")
    publish("haiku", description="Seasons.")
    page = open_page("ana")

    expect(page.locator(".recent-publishes time").first).to_have_attribute(
        "title", re.compile(r"^\d{4}-\d\d-\d\d .* UTC$")
    )
    screenshot(page, "dashboard-analyst")
    page.locator(".recent-publishes").get_by_role("link", name="v2").click()
    expect(page).to_have_url(f"{live_server.url}/skills/haiku/?version=2&source=user")
    expect(page.locator("h1").first).to_contain_text("haiku")

    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="force-include rules").click()
    expect(page).to_have_url(f"{live_server.url}/rules/")
