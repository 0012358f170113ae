"""Model checks in a real Chromium: an author sees the drift banner on the routing page, follows it
to the model checks, reads a finished check with the regressed skill first and the skill without
cases as no evidence, starts a check from the form, and dismisses the banner; an analyst reads the
same page without the form or the banner. The runs end through the grading services (no worker).
Screenshots: test-output/screenshots/."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from agents.evals.model_check import catalog_watch_start, model_check_start, model_checks_advance
from registry.models import ModelCheck
from tests.agents.evals.model_check_runs import CASES, accepted_run, grade_all, served
from tests.browser.console_helpers import screenshot, user_with_role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def finished_checks() -> ModelCheck:
    """A check where `pr-review` regressed on offline (`summarize` held up, `notes` has no cases),
    and a drift watch where `pr-review` fell below its accepted run."""
    pr_review, summarize = served("pr-review", cases=CASES), served("summarize", cases=CASES)
    served("notes")
    check = model_check_start(label="production", current_model="scripted", candidate_model="offline")
    for link in check.runs.select_related("run__skill"):
        grade_all(link.run, tasks_pass=link.side == "current" or link.run.skill == summarize)
    accepted_run(pr_review, model=settings.AGENT_MODEL)
    accepted_run(summarize, model=settings.AGENT_MODEL)
    watch = catalog_watch_start()
    for link in watch.runs.select_related("run__skill"):
        grade_all(link.run, tasks_pass=link.run.skill != pr_review)
    assert model_checks_advance() == 2
    return check


def test_an_author_reads_a_model_check_starts_one_and_dismisses_the_drift_banner(live_server, open_page):
    user_with_role("ada", "author")
    user_with_role("alan", "analyst")
    check = finished_checks()
    page = open_page("ada")
    page.goto(f"{live_server.url}/catalog/routing/?label=production")

    banner = page.locator("#drift-banner")
    expect(banner).to_contain_text("pr-review")
    expect(banner).not_to_contain_text("summarize")
    page.get_by_role("link", name="Model checks").click()
    expect(page.get_by_role("heading", name="Model checks")).to_be_visible()
    page.locator("table.model-checks tbody tr", has_text="scripted → offline").get_by_role("link").click()

    rows = page.locator("#check-skills tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("pr-review")
    expect(rows.nth(0)).to_contain_text("regressed")
    expect(rows.nth(1)).to_contain_text("summarize")
    expect(rows.nth(2)).to_contain_text("no evidence")
    expect(page.locator("#check-threshold")).to_contain_text("0.95")
    screenshot(page, "model-check-author")
    assert str(check.pk) in page.url

    page.goto(f"{live_server.url}/catalog/model-checks/")
    page.select_option("#id_current_model", "scripted")
    page.select_option("#id_candidate_model", "offline")
    page.fill("#id_repeat", "2")
    page.get_by_role("button", name="Start check").click()
    expect(page.locator("#check-status")).to_have_text("running")
    expect(page.locator(".page-head .sub")).to_contain_text("× 2 repeats")
    screenshot(page, "model-check-started")

    page.locator("#drift-banner").get_by_role("button", name="Dismiss").click()
    expect(page.locator("#drift-banner")).to_have_count(0)

    analyst = open_page("alan")
    analyst.goto(f"{live_server.url}/catalog/model-checks/{check.pk}/")
    expect(analyst.locator("#check-skills tbody tr").first).to_contain_text("pr-review")
    analyst.goto(f"{live_server.url}/catalog/model-checks/")
    expect(analyst.get_by_role("button", name="Start check")).to_have_count(0)
    expect(analyst.locator("#drift-banner")).to_have_count(0)
    screenshot(analyst, "model-checks-analyst")
