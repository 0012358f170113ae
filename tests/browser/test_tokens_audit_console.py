"""API tokens and the audit log in a real headless Chromium: create a token and see its secret
once, revoke it, filter the audit log as you type, an analyst who reads but cannot write, and
hostile token names and audit data that stay inert."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import ApiToken
from registry.selectors import skill_get
from registry.services.audit import Actor, audit_record
from registry.services.labels import label_move
from registry.services.tokens import api_token_create
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=window.__xss=1><script>window.__xss=1</script>"


@pytest.fixture
def open_page(browser, live_server):
    """open_page(username, **context options) -> a logged-in page in a fresh browser context."""
    contexts = []

    def open_as(username: str, **options):
        page = new_page(browser, **options)
        contexts.append(page.context)
        log_in(page, live_server.url, username)
        return page

    yield open_as
    for context in contexts:
        context.close()


def test_create_a_token_see_the_secret_once_then_revoke_it(live_server, open_page):
    user_with_role("root", "admin")
    user_with_role("ada", "author")
    page = open_page("root", permissions=["clipboard-read", "clipboard-write"])

    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator(".empty")).to_contain_text("No tokens yet")
    page.fill("input[name=name]", "ci-deploy")
    page.select_option("select[name=owner]", "ada")
    page.get_by_label("skills:write").check()
    page.get_by_role("button", name="Create token").click()

    secret = page.locator("#new-secret").inner_text().strip()
    assert secret.startswith("skr_")
    assert ApiToken.objects.get(name="ci-deploy").secret_hash == ApiToken.hash_secret(secret)
    expect(page.locator(".flash-success")).to_contain_text("Created token ci-deploy for ada")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    screenshot(page, "tokens-secret-once-admin")

    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("#token-table")).to_contain_text("ci-deploy")
    assert secret not in page.content()
    expect(page.locator("#new-secret")).to_have_count(0)

    page.get_by_role("link", name="Revoke ci-deploy").click()
    expect(page.locator(".confirm-box")).to_contain_text("Revoke the token ci-deploy?")
    assert ApiToken.objects.get(name="ci-deploy").revoked_at is None
    screenshot(page, "tokens-revoke-confirm-admin")
    page.get_by_role("button", name="Confirm: revoke ci-deploy").click()

    expect(page.locator(".flash-success")).to_contain_text("Revoked token ci-deploy")
    expect(page.locator("#token-table tr.row-revoked")).to_contain_text("revoked")
    assert ApiToken.objects.get(name="ci-deploy").revoked_at is not None
    screenshot(page, "tokens-revoked-admin")


def test_an_author_manages_only_their_own_tokens(live_server, open_page):
    user_with_role("ada", "author")
    user_with_role("bob", "author")
    api_token_create(name="bobs-token", username="bob", scopes=["skills:read"])
    page = open_page("ada")

    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("select[name=owner]")).to_have_count(0)  # always their own
    page.fill("input[name=name]", "my-agent")
    page.get_by_role("button", name="Create token").click()

    expect(page.locator("#new-secret")).to_contain_text("skr_")
    expect(page.locator("#token-table")).to_contain_text("my-agent")
    expect(page.locator("#token-table")).not_to_contain_text("bobs-token")
    screenshot(page, "tokens-author")


def test_filter_the_audit_log_as_you_type(live_server, open_page):
    ada = user_with_role("ada", "author")
    publish("pdf-tools")
    publish("sql-query")
    label_move(skill=skill_get(name="pdf-tools"), label="production", version_number=1, actor=Actor(ada, "console"))
    audit_record(
        actor=Actor(ada, "console"),
        action="rule.update",
        object_type="rule",
        object_repr="deploy-rule",
        before={"priority": 1, "instruction": "Check the runbook."},
        after={"priority": 5, "instruction": "Check the runbook."},
    )
    page = open_page("ada")

    page.goto(f"{live_server.url}/audit/")
    rows = page.locator("#audit-table tbody tr")
    expect(rows).to_have_count(4)
    page.fill("#id_actor", "ada")  # typed: htmx swaps the table, no reload
    expect(rows).to_have_count(2)
    assert "actor=ada" in page.url
    page.select_option("#id_object_type", "rule")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("rule.update")
    expect(rows.first.locator(".change-changed del")).to_have_text("1")
    expect(rows.first.locator(".change-changed ins")).to_have_text("5")
    screenshot(page, "audit-filtered-author")

    page.get_by_role("link", name="clear filters").click()
    page.get_by_role("link", name="pdf-tools@user").first.click()  # a row's object filters by it
    expect(rows).to_have_count(2)
    page.fill("#id_date_from", "2001-01-01")
    page.fill("#id_date_to", "2001-01-02")
    expect(page.locator("#audit-table")).to_contain_text("No entries match")


def test_an_analyst_reads_tokens_and_audit_and_may_only_revoke_their_own_token(live_server, open_page):
    user_with_role("alan", "analyst")
    token, _ = api_token_create(name="alans-reader", username="alan", scopes=["analytics:read"])
    publish("pdf-tools")
    page = open_page("alan", color_scheme="dark")  # and the dark theme, from the system setting

    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("#token-table")).to_contain_text("alans-reader")
    expect(page.get_by_role("button", name="Create token")).to_have_count(0)
    # Revoking only takes power away: an analyst may withdraw their own token, and create none.
    expect(page.get_by_role("link", name="Revoke alans-reader")).to_have_count(1)
    expect(page.locator("main form[method=post]")).to_have_count(0)
    screenshot(page, "tokens-analyst-dark")

    other, _ = api_token_create(
        name="ann-writer", username=user_with_role("ann", "author").username, scopes=["skills:read"]
    )
    assert page.goto(f"{live_server.url}/tokens/{other.pk}/revoke/").status == 404  # not theirs: not there
    asked = page.goto(f"{live_server.url}/tokens/{token.pk}/revoke/")
    assert asked.status == 200
    expect(page.locator(".confirm-box")).to_contain_text("Revoke the token alans-reader?")
    status = page.evaluate(
        """async () => (await fetch('/tokens/', {method: 'POST',
            headers: {'x-csrftoken': document.cookie.match(/csrftoken=([^;]+)/)?.[1] || ''},
            body: new URLSearchParams({name: 'sneaky', scopes: 'skills:read'})})).status"""
    )
    assert status == 403 and not ApiToken.objects.filter(name="sneaky").exists()

    page.goto(f"{live_server.url}/audit/")
    expect(page.locator("#audit-table")).to_contain_text("version.publish")
    expect(page.locator("main form[method=post]")).to_have_count(0)
    screenshot(page, "audit-analyst-dark")


def test_hostile_token_names_and_audit_data_stay_inert(live_server, open_page):
    user_with_role("root", "admin")
    api_token_create(name=f"tok {XSS}", username="root", scopes=["skills:read"])
    audit_record(
        actor=Actor(via=f"api token {XSS}"),
        action=f"rule.update{XSS}"[:64],
        object_type="rule",
        object_repr=f"rule {XSS} javascript:window.__xss=1",
        before={"instruction": XSS, XSS: "key"},
        after={"instruction": f"<svg onload=window.__xss=1>{XSS}", "nested": {"x": XSS}},
    )
    page = open_page("root")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    for url in ("/tokens/", "/audit/", f"/audit/?object={XSS}"):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__xss") is None, url
    page.goto(f"{live_server.url}/audit/")
    page.fill("#id_object", "<img")  # the htmx fragment too
    page.wait_for_url(lambda url: "object=" in url)  # the swapped table's address is pushed
    expect(page.locator("#audit-table tbody tr")).to_have_count(2)
    page.locator("details.raw summary").first.click()
    expect(page.locator("details.raw[open] pre")).to_contain_text("before:")
    expect(page.locator("#audit-table")).to_contain_text("<svg onload=window.__xss=1>")  # shown as text
    screenshot(page, "audit-xss-inert-admin")
    assert page.evaluate("window.__xss") is None
    assert page.locator("#audit-table img, #audit-table svg, #audit-table script").count() == 0
    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("#token-table")).to_contain_text("tok <img src=x")
    assert page.locator("#token-table img, #token-table script").count() == 0
    assert dialogs == []
    screenshot(page, "tokens-xss-inert-admin")
