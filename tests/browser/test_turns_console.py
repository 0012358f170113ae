"""The turn pages in a real Chromium as analyst, author and admin: from a skill's failure count
on the analytics page to the failed turns, their causes and one turn's trace; who sees which
turns; filtering as you type. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from agents.models import AgentTurn
from agents.turns import services
from registry.services.usage import UsageEventInput, usage_record
from tests.agents.turns.turn_runs import ABORTS, SUCCEEDS, TOOL_FAILS, run_turn
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def turns(settings):
    """ada (author) and bob (author) ran turns with sql-query; an outside agent reported two
    failures of it through POST /usage."""
    settings.AGENT_MAX_ITERATIONS = 3
    publish("sql-query", description="Writes SQL queries.")
    ada, bob = user_with_role("ada", "author"), user_with_role("bob", "author")
    for message in ("monthly revenue by region", "top customers this quarter"):
        run_turn(ada, SUCCEEDS, message=message)
    failed = run_turn(ada, ABORTS, message="churn by cohort for 2019")
    services.agent_turn_feedback(turn=failed, rating="down", comment="It gave up instead of asking for the table.")
    run_turn(bob, ABORTS, message="bob's churn question")
    run_turn(bob, SUCCEEDS, message="bob's revenue question")
    run_turn(bob, TOOL_FAILS, message="bob's broken tool call")
    usage_record(
        events=[UsageEventInput(f"outside-{i}", "failed", "sql-query", 1, trigger="read_skill") for i in range(2)]
    )
    return {"failed": failed}


def test_an_analyst_goes_from_a_failure_count_to_the_turns_their_causes_and_a_trace(live_server, open_page, turns):
    user_with_role("ann", "analyst")
    page = open_page("ann")
    page.goto(f"{live_server.url}/analytics/skills/sql-query/")
    failed_link = page.locator("#versions-table tr[data-version='1'] a[data-count='failed']")
    expect(failed_link).to_have_text("4")  # two turns' failures and the outside agent's two
    screenshot(page, "turns-analytics-links")

    failed_link.click()
    page.wait_for_url(re.compile(r"/turns/\?.*event=failed"))
    expect(page.locator("#turn-total")).to_have_text("2")
    expect(page.locator("#drill-count")).to_have_text("4")
    expect(page.locator("#drill-outside")).to_have_text("2")
    rows = page.locator("#turns-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#causes [data-cause='aborted']")).to_contain_text("no database given")
    screenshot(page, "turns-list-drilldown-analyst")

    # An analyst reads every turn: both authors' are listed, and the nav leads here.
    page.goto(f"{live_server.url}/turns/")
    expect(page.locator("#turn-total")).to_have_text("6")
    expect(page.locator("nav.mainnav a[aria-current='page']")).to_have_text("Turns")
    expect(page.locator("#causes [data-cause='tool_error']")).to_contain_text("read_skill")
    screenshot(page, "turns-list-analyst")

    # Filtering as you type narrows the list without a reload.
    page.evaluate("window.__samePage = true")
    page.fill("#id_q", "churn")
    expect(page.locator("#turn-total")).to_have_text("2")
    assert page.evaluate("window.__samePage") is True
    assert "q=churn" in page.url

    # A cause is one click from its turns; a row opens the turn with its trace.
    page.locator("#causes [data-cause='aborted'] a").click()
    expect(page.locator("#turn-total")).to_have_text("2")
    page.get_by_role("link", name="churn by cohort for 2019").click()
    page.wait_for_url(re.compile(rf"/turns/{turns['failed'].pk}/$"))
    expect(page.locator("#turn-status")).to_have_text("failed")
    expect(page.locator(".turn-error")).to_contain_text("aborted")
    expect(page.locator("#turn-skills")).to_contain_text("sql-query v1")
    expect(page.locator("#turn-feedback")).to_contain_text("It gave up instead of asking for the table.")
    page.locator('.event[data-type="llm_call"] summary').first.click()
    expect(page.locator('.event[data-type="llm_call"]').first.locator("details.prompt")).to_be_visible()
    screenshot(page, "turn-detail-analyst")


def test_an_author_sees_only_their_own_turns(live_server, open_page, turns):
    page = open_page("bob")
    page.goto(f"{live_server.url}/turns/")
    expect(page.locator("#turn-total")).to_have_text("3")
    expect(page.locator("#turns-table")).to_contain_text("bob's churn question")
    expect(page.locator("#turns-table")).not_to_contain_text("churn by cohort for 2019")
    screenshot(page, "turns-list-author")

    # ada's turn is not bob's to read.
    response = page.goto(f"{live_server.url}/turns/{turns['failed'].pk}/")
    assert response is not None and response.status == 404

    page.goto(f"{live_server.url}/turns/?status=failed")
    expect(page.locator(".status-tab[aria-current='page']")).to_contain_text("failed")
    expect(page.locator("#turn-total")).to_have_text("2")


def test_an_admin_reads_anyones_turn(live_server, open_page, turns):
    user_with_role("root", "admin")
    page = open_page("root")
    page.goto(f"{live_server.url}/turns/")
    expect(page.locator("#turn-total")).to_have_text("6")
    screenshot(page, "turns-list-admin")
    turn = AgentTurn.objects.get(message="bob's revenue question")
    page.goto(f"{live_server.url}/turns/{turn.pk}/")
    expect(page.locator("#turn-status")).to_have_text("succeeded")
    expect(page.locator(".answer")).to_contain_text("Here is the query.")
    screenshot(page, "turn-detail-admin")


def test_a_trimmed_context_reads_in_words_in_the_trace(live_server, open_page, turns):
    """The closed row of a context_trimmed event says what was cut, not a Python list."""
    turn = turns["failed"]
    turn.trace_events.create(
        seq=turn.trace_events.count() + 1,
        type="context_trimmed",
        at=turn.created_at,
        data={
            "step": 1,
            "removed": [
                {"kind": "section", "name": "skills"},
                {"kind": "message", "role": "tool", "chars": 900},
                {"kind": "truncated", "target": "section environment", "from_chars": 800, "to_chars": 200},
            ],
            "limit": 50,
            "tokens_after": 48,
        },
    )
    page = open_page("ada")
    page.goto(f"{live_server.url}/turns/{turn.pk}/")
    row = page.locator("details", has_text="context_trimmed")
    expect(row).to_contain_text(
        "step 1 · dropped the skills section, dropped a tool message, cut section environment to 200 chars"
        " to fit 50 tokens"
    )
    expect(row).not_to_contain_text("{'kind'")
