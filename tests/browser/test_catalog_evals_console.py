"""Catalog eval runs in a real Chromium: an author reaches them from the routing page's tabs,
starts a run with the form and lands on its page; a finished run shows the matrix of only the
confused skills and the collision with both descriptions side by side, whose turn link opens
the turn; an analyst reads the same pages without the form. Screenshots: test-output/screenshots/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from registry.models import CatalogEvalRun
from tests.agents.evals.catalog_runs import digest_takes_summaries, graded_catalog_run
from tests.browser.console_helpers import screenshot, user_with_role
from tests.registry.routing_catalog import competing_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_author_starts_a_catalog_run_and_reads_a_finished_one_s_collisions(live_server, open_page):
    author = user_with_role("ada", "author")
    user_with_role("alan", "analyst")
    competing_catalog()
    finished = graded_catalog_run(loads=digest_takes_summaries, user=author)
    page = open_page("ada")

    page.goto(f"{live_server.url}/catalog/routing/")
    page.get_by_role("navigation", name="Routing").get_by_role("link", name="With a model").click()
    expect(page.locator("table.catalog-runs tbody tr")).to_have_count(1)
    page.select_option("#id_run_model", "offline")
    page.fill("#id_run_repeat", "2")
    page.get_by_role("button", name="Start catalog run").click()
    expect(page.locator("#run-total")).to_have_text("12")
    expect(page.locator("#run-status")).to_contain_text("queued")
    started = CatalogEvalRun.objects.exclude(pk=finished.pk).get()
    assert (started.model, started.repeat) == ("offline", 2)

    page.goto(f"{live_server.url}/catalog/evals/runs/{finished.pk}/")
    matrix = page.locator("table.confusion-matrix")
    expect(matrix.locator("tbody tr")).to_have_count(1)
    expect(matrix.locator("tbody tr").first).to_contain_text("invoice-summary")
    expect(matrix.locator("thead")).not_to_contain_text("haiku-poems")
    expect(matrix.locator('td[data-with="invoice-digest"]')).to_have_text("50%")
    collision = page.locator("article.collision")
    expect(collision).to_have_count(1)
    expect(collision.locator(".description")).to_have_count(2)
    expect(collision).to_contain_text("Condenses PDF invoices")
    expect(collision).to_contain_text("Summarizes PDF invoices")
    expect(page.locator("table.catalog-skills tr", has_text="no-cases")).to_contain_text("no evidence")
    screenshot(page, "catalog-evals-run-author")
    collision.locator("a.trace-link").first.click()
    expect(page).to_have_url(re.compile(r"/turns/[0-9a-f-]{36}/$"))
    page.locator("#catalog-run-link").click()  # and back to its run from the turn
    expect(page.locator("article.collision")).to_have_count(1)

    analyst = open_page("alan")
    analyst.goto(f"{live_server.url}/catalog/evals/")
    expect(analyst.locator("table.catalog-runs tbody tr")).to_have_count(2)
    expect(analyst.get_by_role("button", name="Start catalog run")).to_have_count(0)
    expect(analyst.get_by_text("authors and admins start them")).to_be_visible()
    screenshot(analyst, "catalog-evals-analyst")
    analyst.goto(f"{live_server.url}/catalog/evals/runs/{finished.pk}/")
    expect(analyst.locator("article.collision")).to_have_count(1)
    screenshot(analyst, "catalog-evals-run-analyst")
