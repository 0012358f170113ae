"""People and roles in a real headless Chromium: an admin lists every account, creates one with a
set-password link (used by its owner in another browser) and one with a password, changes a role,
deactivates an account whose API token then stops at once, and reactivates it; authors and
analysts are refused; an account without a role sees who can grant one instead of the console."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from registry.models import AuditLog
from registry.roles import user_roles
from registry.services.tokens import api_token_create
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

User = get_user_model()
NEW_PASSWORD = "a-long-passphrase-for-zoe"


def api_status(base_url: str, secret: str) -> int:
    request = urllib.request.Request(f"{base_url}/api/v1/skills", headers={"Authorization": f"Bearer {secret}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def roles_of(username: str) -> set[str]:
    return user_roles(User.objects.get(username=username))


@pytest.fixture
def admin_page(browser, live_server):
    root = user_with_role("root", "admin")
    root.email = "root@example.com"
    root.save(update_fields=["email"])
    page = new_page(browser, permissions=["clipboard-read", "clipboard-write"])
    log_in(page, live_server.url, "root")
    yield page
    page.context.close()


def test_an_admin_creates_a_user_with_a_set_password_link_that_works_once(live_server, browser, admin_page):
    page = admin_page
    user_with_role("ada", "author")
    api_token_create(name="ada-agent", username="ada", scopes=["skills:read"])

    page.goto(f"{live_server.url}/users/")
    expect(page.get_by_role("link", name="Users")).to_have_attribute("aria-current", "page")
    ada = page.locator("#user-table tr[data-user=ada]")
    expect(ada.locator("select[name=role]")).to_have_value("author")
    expect(ada.locator("td").nth(3)).to_have_text("1")  # her live token
    expect(page.locator("#user-table tr[data-user=root] select[name=role]")).to_have_value("admin")
    screenshot(page, "users-list-admin")

    page.fill("#user-username", "zoe")
    page.fill("#user-email", "zoe@example.com")
    page.locator("input[name=role][value=analyst]").check()
    expect(page.locator("input[name=how][value=link]")).to_be_checked()  # the default
    page.get_by_role("button", name="Create user").click()

    expect(page.locator(".flash-success")).to_contain_text("Created zoe (analyst)")
    link = page.locator("#password-link").inner_text().strip()
    assert link.startswith(f"{live_server.url}/password/set/")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == link
    expect(page.locator("#user-table tr[data-user=zoe]")).to_contain_text("never")
    assert roles_of("zoe") == {"analyst"} and not User.objects.get(username="zoe").has_usable_password()
    screenshot(page, "users-created-with-link-admin")

    # Zoe opens the link in a browser of her own, sets her password, and logs in with it.
    zoe = new_page(browser)
    zoe.goto(link)
    expect(zoe.get_by_role("heading", name="Set your password")).to_be_visible()
    screenshot(zoe, "users-set-password-page")
    zoe.fill("#id_new_password1", NEW_PASSWORD)
    zoe.fill("#id_new_password2", NEW_PASSWORD)
    zoe.get_by_role("button", name="Set password").click()
    expect(zoe.locator(".flash-success")).to_contain_text("Your password is set")
    log_in(zoe, live_server.url, "zoe", NEW_PASSWORD)
    expect(zoe.locator(".usermenu .badge")).to_have_text("analyst")
    zoe.goto(link)  # once only
    expect(zoe.locator(".error")).to_contain_text("has been used, has expired")
    zoe.context.close()

    # An initial password instead: too weak is said beside the field, then a good one.
    page.goto(f"{live_server.url}/users/")
    page.fill("#user-username", "max")
    page.locator("input[name=how][value=password]").check()
    page.fill("#user-password", "short")
    page.get_by_role("button", name="Create user").click()
    expect(page.locator("#user-password-error")).to_contain_text("too weak")
    expect(page.locator(".flash-error")).to_contain_text("No user created: Password:")
    expect(page.locator("#user-username")).to_have_value("max")
    page.fill("#user-password", "another-long-passphrase")
    page.get_by_role("button", name="Create user").click()
    expect(page.locator(".flash-success")).to_contain_text("Created max (author) with the password you gave")
    expect(page.locator("#password-link")).to_have_count(0)
    assert roles_of("max") == {"author"}

    audited = AuditLog.objects.filter(object_type="user", object_repr__in=["zoe", "max"]).order_by("id")
    assert [(row.action, row.object_repr, row.via) for row in audited] == [
        ("user.create", "zoe", "console"),
        ("user.password_link", "zoe", "console"),
        ("user.password", "zoe", "set-password link"),
        ("user.create", "max", "console"),
    ]


def test_an_admin_changes_a_role_and_deactivation_stops_the_users_token_at_once(live_server, admin_page):
    page = admin_page
    user_with_role("ada", "author")
    _, secret = api_token_create(name="ada-agent", username="ada", scopes=["skills:read", "skills:write"])
    assert api_status(live_server.url, secret) == 200

    page.goto(f"{live_server.url}/users/")
    page.get_by_label("Role of ada", exact=True).select_option("analyst")
    page.get_by_role("button", name="Change the role of ada").click()
    expect(page.locator(".flash-success")).to_have_text("ada is now analyst.")
    expect(page.get_by_label("Role of ada", exact=True)).to_have_value("analyst")
    assert roles_of("ada") == {"analyst"}

    page.get_by_role("link", name="Deactivate ada").click()
    expect(page.get_by_role("heading", name="Deactivate ada?")).to_be_visible()
    expect(page.locator(".confirm-box")).to_contain_text("every request with their 1 token gets 401")
    screenshot(page, "users-deactivate-confirm-admin")
    assert api_status(live_server.url, secret) == 200  # nothing happens before the confirmation
    page.get_by_role("button", name="Confirm: deactivate ada").click()

    expect(page.locator(".flash-success")).to_contain_text("Deactivated ada")
    expect(page.locator("#user-table tr[data-user=ada]")).to_contain_text("deactivated")
    assert api_status(live_server.url, secret) == 401  # at once: no wait for a cache
    screenshot(page, "users-deactivated-admin")

    page.get_by_role("link", name="Reactivate ada").click()
    page.get_by_role("button", name="Confirm: reactivate ada").click()
    expect(page.locator(".flash-success")).to_contain_text("Reactivated ada")
    assert api_status(live_server.url, secret) == 200
    # The last admin is never deactivated; the console offers no button for yourself at all.
    expect(page.get_by_role("link", name="Deactivate root")).to_have_count(0)
    changes = AuditLog.objects.filter(object_type="user", object_repr="ada", via="console").order_by("id")
    assert [(row.action, row.after.get("roles"), row.after.get("is_active")) for row in changes] == [
        ("user.update", ["analyst"], None),
        ("user.update", [], False),
        ("user.update", ["analyst"], True),
    ]


@pytest.mark.parametrize("role", ["author", "analyst"])
def test_authors_and_analysts_are_refused_the_users_page(live_server, open_page, role):
    user_with_role("someone", role)
    page = open_page("someone")

    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Users")).to_have_count(0)
    response = page.goto(f"{live_server.url}/users/")
    assert response.status == 403
    expect(page.locator("main")).to_contain_text("You don't have access to this page")
    expect(page.locator("main")).to_contain_text("This page is for admins")
    csrf = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == "csrftoken")
    create = page.request.post(
        f"{live_server.url}/users/",
        form={"username": "sneaky", "role": "admin", "how": "password", "password": "a-long-passphrase"},
        headers={"X-CSRFToken": csrf, "Referer": f"{live_server.url}/users/"},
    )
    assert create.status == 403 and "You don't have access to this page" in create.text()  # the role check's
    assert not User.objects.filter(username="sneaky").exists()
    screenshot(page, f"users-refused-{role}")


def test_a_user_without_a_role_sees_who_can_grant_one_then_gets_the_console(live_server, browser, admin_page):
    UserFactory(username="newbie")
    newbie = new_page(browser)
    log_in(newbie, live_server.url, "newbie")

    expect(newbie.get_by_role("heading", name="Your account has no role yet")).to_be_visible()
    expect(newbie.locator(".admin-list")).to_contain_text("root — root@example.com")
    expect(newbie.get_by_role("navigation", name="Main")).to_have_count(0)  # no links that would all be 403
    expect(newbie.locator("main")).not_to_contain_text("Recent publishes")
    screenshot(newbie, "no-role-dashboard")
    refused = newbie.goto(f"{live_server.url}/skills/")
    assert refused.status == 403
    expect(newbie.get_by_role("heading", name="Your account has no role yet")).to_be_visible()

    admin_page.goto(f"{live_server.url}/users/")
    expect(admin_page.locator("#user-table tr[data-user=newbie]")).to_contain_text("no role")
    admin_page.get_by_label("Role of newbie", exact=True).select_option("author")
    admin_page.get_by_role("button", name="Change the role of newbie").click()
    expect(admin_page.locator(".flash-success")).to_have_text("newbie is now author.")

    newbie.goto(f"{live_server.url}/skills/")
    expect(newbie.get_by_role("heading", name="Skills", exact=True)).to_be_visible()
    expect(newbie.get_by_role("navigation", name="Main")).to_be_visible()
    newbie.context.close()
