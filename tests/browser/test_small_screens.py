"""The console on a phone-wide screen: the main navigation, which scrolls sideways there, starts
at the page it names, audit actions stay readable on one line, and a wide table scrolls in its box."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def test_the_navigation_shows_the_current_page_and_audit_actions_stay_on_one_line(open_page, live_server):
    user_with_role("root", "admin")
    publish("code-review", description="Reviews code.")
    page = open_page("root")
    page.set_viewport_size(PHONE)

    page.goto(f"{live_server.url}/audit/")
    current = page.locator(".mainnav [aria-current=page]")
    expect(current).to_have_text("Audit")
    expect(current).to_be_in_viewport(ratio=1)
    action = page.locator("table.audit td.action code").first
    line_height = action.evaluate("el => parseFloat(getComputedStyle(el).lineHeight) || 20")
    assert action.bounding_box()["height"] < 1.5 * line_height
    # A wide table scrolls inside its box; the page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "audit-phone")

    page.goto(f"{live_server.url}/skills/")
    expect(page.locator(".mainnav [aria-current=page]")).to_be_in_viewport(ratio=1)
