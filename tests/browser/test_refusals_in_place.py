"""A refused htmx request shows the server's own message where the user is looking (as the
page does without JavaScript), not a generic "could not complete this request": the
playground's misspelt slash command, unknown forced skill and bad script JSON, the rule
tester's bad label, in a real headless Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.models import AgentTurn
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GENERIC = "could not complete this request"


@pytest.fixture
def author(db):
    publish("code-review", description="Reviews a change for bugs and style.")
    return user_with_role("ada", "author")


def send(page, *, message: str, forced_skill: str = "", model: str = "offline", script: str = "") -> None:
    page.fill("textarea[name=message]", message)
    page.fill("#id_forced_skill", forced_skill)
    page.select_option("#id_model", model)
    if script:
        page.fill("#id_script", script)
    page.get_by_role("button", name="Send").click()


@pytest.mark.parametrize(
    ("case", "fields", "said"),
    [
        ("slash-typo", {"message": "/code-reveiw app.py"}, "code-reveiw"),
        ("unknown-forced", {"message": "Review app.py", "forced_skill": "no-such-skill"}, "no-such-skill"),
        ("bad-script", {"message": "Run it", "model": "scripted", "script": '[{"content": '}, "not valid JSON"),
    ],
)
def test_the_playground_shows_why_a_message_was_refused(live_server, browser, open_page, author, case, fields, said):
    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/")
    page.evaluate("window.__samePage = true")
    send(page, **fields)

    refusal = page.locator("#send-form .flash-error")
    expect(refusal).to_contain_text("Not sent.")
    expect(refusal).to_contain_text(said)
    expect(page.locator("#request-problem")).to_be_hidden()
    expect(page.get_by_text(GENERIC)).to_have_count(0)
    assert page.evaluate("window.__samePage") is True  # shown in place, no reload
    assert page.locator("textarea[name=message]").input_value() == fields["message"]  # kept for a fix
    assert not AgentTurn.objects.exists()
    screenshot(page, f"refused-playground-{case}-author")

    # The message shown is the one the page gives without JavaScript.
    plain = new_page(browser, java_script_enabled=False)
    try:
        log_in(plain, live_server.url, "ada")
        plain.goto(f"{live_server.url}/playground/")
        send(plain, **fields)
        assert plain.locator("#send-form .flash-error").inner_text() == refusal.inner_text()
    finally:
        plain.context.close()


def test_the_rule_tester_shows_why_a_label_was_refused_and_recovers(live_server, open_page, author):
    page = open_page("ada")
    page.goto(f"{live_server.url}/rules/test/?query=review+app.py")
    expect(page.locator("#test-result")).to_contain_text("code-review")

    page.fill("#id_label", "no such label!")
    page.get_by_role("button", name="Test").click()
    refusal = page.locator("#test-result .flash-error")
    expect(refusal).to_contain_text("label")
    expect(page.get_by_text(GENERIC)).to_have_count(0)
    expect(page.locator("#request-problem")).to_be_hidden()
    screenshot(page, "refused-rule-tester-label-author")

    page.fill("#id_label", "")
    page.get_by_role("button", name="Test").click()
    expect(refusal).to_have_count(0)
    expect(page.locator("#test-result")).to_contain_text("code-review")
