"""Summaries that hold up, in a real Chromium as an analyst and as an admin: the rankings say what
they rank by and that they need a minimum of outcomes, and a skill that never failed is never
"failing"; feedback stands beside the success rate; a comparison below the minimum sample is no
verdict but says how many more turns would decide it; the turn list's search is the page's
address, so a filtered view can be shared. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from registry.services.usage import UsageEventInput, usage_record
from tests.agents.turns.turn_runs import ABORTS, SUCCEEDS, run_turn
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = [("ann", "analyst"), ("root", "admin")]


def outcomes(skill: str, version: int, succeeded: int, failed: int, *, up: int = 0, down: int = 0):
    at = timezone.now() - dt.timedelta(hours=2)
    tag = f"{skill}-{version}"
    events = [UsageEventInput(f"{tag}-s{i}", "succeeded", skill, version, at=at) for i in range(succeeded)]
    events += [UsageEventInput(f"{tag}-f{i}", "failed", skill, version, at=at) for i in range(failed)]
    events += [UsageEventInput(f"{tag}-u{i}", "feedback", skill, version, rating=1, at=at) for i in range(up)]
    events += [UsageEventInput(f"{tag}-d{i}", "feedback", skill, version, rating=-1, at=at) for i in range(down)]
    return events


@pytest.fixture
def people():
    for username, role in ROLES:
        user_with_role(username, role)


def ranked(page, ranking: str) -> list[str]:
    return page.locator(f"#{ranking} table.ranking tbody tr").evaluate_all("rows => rows.map(r => r.dataset.ranked)")


@pytest.mark.parametrize(("username", "role"), ROLES)
def test_a_skill_with_no_failures_is_only_working_best_and_rankings_say_what_they_rank_by(
    live_server, open_page, people, username, role
):
    usage_record(events=outcomes("steady", 1, 5, 0))
    page = open_page(username)

    # The dashboard's case: one skill, 5 of 5 succeeded.
    expect(page.locator("#working-best")).to_contain_text("steady")
    assert ranked(page, "working-best") == ["steady"]
    assert ranked(page, "failing-most") == []
    expect(page.locator("#failing-most")).to_contain_text("No ranked skill is failing.")
    expect(page.locator("#working-best .ranking-basis")).to_contain_text("lower end of the 95% interval")
    expect(page.locator("#working-best .ranking-basis")).to_contain_text("at least 5 outcomes")
    expect(page.locator("#failing-most .ranking-basis")).to_contain_text("upper end of the 95% interval")
    expect(page.locator("#working-best th").nth(2)).to_have_text("Ranked by: at least")
    # 5 of 5: a Wilson lower bound of 57%, the figure the ranking goes by.
    expect(page.locator("#working-best tr[data-ranked='steady'] td.bound")).to_have_text("57%")
    screenshot(page, f"dashboard-rankings-one-skill-{role}")

    # A failing skill and one below the minimum join it.
    usage_record(events=outcomes("shaky", 1, 2, 4) + outcomes("new", 1, 2, 0))
    page.reload()
    assert ranked(page, "working-best") == ["steady"]
    assert ranked(page, "failing-most") == ["shaky"]
    expect(page.locator("#failing-most tr[data-ranked='shaky'] td.bound")).to_have_text("70%")
    expect(page.locator("#working-best .ranking-basis")).to_contain_text("1 with fewer is not ranked")
    screenshot(page, f"dashboard-rankings-{role}")

    # The analytics overview ranks the same way, over its own range.
    page.goto(f"{live_server.url}/analytics/")
    assert ranked(page, "working-best") == ["steady"]
    assert ranked(page, "failing-most") == ["shaky"]
    expect(page.locator("#failing-most .ranking-basis")).to_contain_text("Only skills with a failure")
    screenshot(page, f"analytics-rankings-{role}")


@pytest.mark.parametrize(("username", "role"), ROLES)
def test_feedback_stands_beside_the_success_rate(live_server, open_page, people, username, role):
    usage_record(events=outcomes("pdf", 1, 6, 2, up=3, down=1) + outcomes("xlsx", 1, 1, 4))
    page = open_page(username)

    page.goto(f"{live_server.url}/analytics/")
    pdf = page.locator("#skills-table tr[data-skill='pdf']")
    expect(pdf.locator("td.rate")).to_have_text("75%")
    expect(pdf.locator("td.thumbs [data-count='feedback_up']")).to_contain_text("3")
    expect(pdf.locator("td.thumbs [data-count='feedback_down']")).to_contain_text("1")
    expect(pdf.locator("td.thumbs .feedback-counts")).to_have_attribute(
        "title", "Feedback on its turns: 3 thumbs up, 1 thumbs down"
    )
    expect(page.locator("#skills-table tr[data-skill='xlsx'] td.thumbs")).to_contain_text("0")
    screenshot(page, f"analytics-feedback-overview-{role}")

    page.locator("#skills-table th a", has_text="pdf").click()
    feedback = page.locator("#overall-feedback")
    expect(feedback).to_contain_text("feedback (thumbs up / down)")
    expect(feedback.locator("[data-count='feedback_up'] a")).to_have_text("3")
    expect(feedback.locator("[data-count='feedback_down'] a")).to_have_text("1")
    # It stands next to the success rate in the headline.
    headline = page.locator("#headline .stat").evaluate_all("stats => stats.map(s => s.id || s.firstElementChild.id)")
    assert headline.index("overall-feedback") == headline.index("overall-rate") + 1
    screenshot(page, f"analytics-feedback-skill-{role}")
    # Its counts open the turns behind them (none here: the events came from outside).
    feedback.locator("[data-count='feedback_down'] a").click()
    page.wait_for_url(re.compile(r"/turns/\?.*event=feedback&feedback=down"))


@pytest.mark.parametrize(("username", "role"), ROLES)
def test_below_the_minimum_sample_a_comparison_says_what_would_decide_it(
    live_server, open_page, people, username, role
):
    usage_record(events=outcomes("pdf", 2, 2, 2) + outcomes("pdf", 3, 4, 2))  # 50% of 4, 67% of 6
    page = open_page(username)

    page.goto(f"{live_server.url}/analytics/skills/pdf/")
    comparison = page.locator("#comparison")
    expect(comparison).to_have_attribute("data-decided", "false")
    text = comparison.inner_text()
    assert "beats" not in text and "probability" not in text
    assert text.startswith("Too few outcomes to compare yet (at least 30 of each version): v3 67% (n = 6), v2 50%")
    more = re.search(r"about ([\d,]+) more outcomes of each version would decide it", text)
    assert more is not None and int(more.group(1).replace(",", "")) > 24
    api = page.request.get(f"{live_server.url}/api/v1/analytics/skills/pdf/compare?a=2&b=3").json()
    assert text == api["summary"] + "."
    assert api["decided"] is False and api["more_outcomes_needed"] == int(more.group(1).replace(",", ""))
    screenshot(page, f"analytics-comparison-below-minimum-{role}")

    # With 30 of each, the comparison is a finding again.
    more_events = [
        UsageEventInput(f"more-{v}-{i}", "succeeded" if i % 3 else "failed", "pdf", v, at=timezone.now())
        for v in (2, 3)
        for i in range(30)
    ]
    usage_record(events=more_events)
    page.reload()
    expect(page.locator("#comparison")).not_to_have_attribute("data-decided", "false")
    expect(page.locator("#comparison")).to_contain_text("probability")


@pytest.fixture
def turns(settings):
    settings.AGENT_MAX_ITERATIONS = 3
    publish("sql-query", description="Writes SQL queries.")
    ada = user_with_role("ada", "author")
    for message in ("monthly revenue by region", "churn by cohort for 2019", "churn for 2020"):
        run_turn(ada, SUCCEEDS, message=message)
    run_turn(ada, ABORTS, message="churn by region")


@pytest.mark.parametrize(("username", "role"), ROLES)
def test_the_turn_lists_search_is_its_address_so_a_filtered_view_can_be_shared(
    live_server, browser, open_page, people, turns, username, role
):
    page = open_page(username)
    page.goto(f"{live_server.url}/turns/")
    expect(page.locator("#turn-total")).to_have_text("4")

    page.evaluate("window.__samePage = true")
    page.fill("#id_q", "churn")
    expect(page.locator("#turn-total")).to_have_text("3")
    page.select_option("#id_origin", "api")
    expect(page).to_have_url(re.compile(r"origin=api"))
    page.locator("nav.status-tabs a[data-status='succeeded']").click()
    expect(page.locator("#turn-total")).to_have_text("2")
    # Only the filters that are set, dates as shown: the address is the view.
    expect(page).to_have_url(re.compile(r"/turns/\?status=succeeded&origin=api&q=churn&from=[\d-]+&to=[\d-]+$"))
    shared = page.url
    screenshot(page, f"turns-shared-search-{role}")

    # Someone else opens the address: the same filtered view, the search box filled in.
    other = new_page(browser)
    try:
        log_in(other, live_server.url, "ann" if username == "root" else "root")
        other.goto(shared)
        expect(other.locator("#turn-total")).to_have_text("2")
        expect(other.locator("#id_q")).to_have_value("churn")
        expect(other.locator("#id_origin")).to_have_value("api")
    finally:
        other.context.close()

    # Typing again replaces the address; the dates cleared stay cleared (no bound) as it is shared.
    page.goto(f"{live_server.url}/turns/?from=&to=")
    page.fill("#id_q", "revenue")
    expect(page.locator("#turn-total")).to_have_text("1")
    expect(page).to_have_url(re.compile(r"/turns/\?q=revenue&from=&to=$"))
    page.go_back()
    expect(page.locator("#turn-total")).to_have_text("4")
