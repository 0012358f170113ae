"""The playground, as an author uses it, in a real headless Chromium with a real worker: no
console errors (htmx included), each conversation listed once and told apart (the two sides of
a side-by-side run too), and no warning for a forced skill that needs no tools.

Apart from tests/browser/test_author_trust.py: this module starts a worker, which would deliver
the webhooks that module expects to stay pending."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.models import AgentTurn
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _console_problems(page) -> list[str]:
    """Every console error and uncaught exception of the page, collected as it runs."""
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def test_the_playground_logs_no_errors_lists_a_conversation_once_and_warns_of_nothing(live_server, open_page, worker):
    user_with_role("ada", "author")
    publish("plain-prompt", description="Answer politely.", body="# Plain\n\n1. Be polite.\n")
    publish("plain-prompt", description="Answer politely, briefly.", body="# Plain\n\n1. Be brief.\n")
    page = open_page("ada")
    problems = _console_problems(page)
    page.goto(f"{live_server.url}/playground/")

    page.fill("textarea[name=message]", "Say hello")
    page.select_option("#id_model", "offline")
    page.fill("#id_forced_skill", "plain-prompt")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator('.event[data-type="warning"]')).to_have_count(0)

    page.fill("textarea[name=message]", "And once more")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".earlier")).to_contain_text("Say hello")
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    assert AgentTurn.objects.count() == 2
    options = page.locator("#id_conversation option").all_inner_texts()
    assert len([o for o in options if o.startswith("Continue")]) == 1, options
    expect(page.locator('.event[data-type="warning"]')).to_have_count(0)

    # Side by side: two conversations of the same message, each listed once and told apart.
    page.select_option("#id_conversation", "")
    page.fill("textarea[name=message]", "Compare the two")
    page.fill("#id_version", "1")
    page.fill("#id_compare_version", "2")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".compare-column .status")).to_have_text(["succeeded", "succeeded"], timeout=60_000)
    continues = [o for o in page.locator("#id_conversation option").all_inner_texts() if o.startswith("Continue")]
    assert len(continues) == 3 and len(set(continues)) == 3, continues
    assert any("plain-prompt v1" in o for o in continues) and any("plain-prompt v2" in o for o in continues)
    screenshot(page, "playground-no-errors-author")
    assert problems == []
