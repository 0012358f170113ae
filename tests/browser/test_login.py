"""Logging in to the console in a real browser."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory, user_with_role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_person_logs_in_and_lands_on_the_dashboard(live_server, page):
    user_with_role("author", username="grace")  # without a role: the no-role page (test_users_console.py)

    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url
    page.fill("#id_username", "grace")
    page.fill("#id_password", "pw-for-tests")
    page.click("button[type=submit]")

    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.locator(".topbar").inner_text().count("grace") == 1


def test_a_wrong_password_shows_an_error(live_server, page):
    UserFactory(username="grace")

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "grace")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")

    assert page.locator(".error").is_visible()
