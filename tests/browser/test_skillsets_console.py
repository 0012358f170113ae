"""Skillsets in a real headless Chromium: an author creates a set, publishes a second version,
compares them, moves production through the confirmation (each member's label and policy shown),
and rolls back; the confirmation names a member whose policy would refuse. An analyst reads the
same pages with no write controls."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import Label
from registry.services.label_policies import label_policy_set
from registry.services.skillsets import skillset_label_move, skillset_publish
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def skills():
    for name in ("csv-tools", "sql-tools"):
        publish(name, description=f"Works with {name.split('-')[0].upper()} data when asked.")
        publish(name, description=f"Works with {name.split('-')[0].upper()} data, second edition.")
    publish("charts", description="Draws charts from tables.")


def _production(name: str) -> int:
    return Label.objects.get(skill__name=name, name="production").version.number


def test_an_author_publishes_compares_moves_and_rolls_back_a_set(open_page, live_server, skills):
    user_with_role("ada", "author")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skillsets/")
    expect(page.get_by_text("No skillsets yet.")).to_be_visible()
    page.get_by_role("link", name="Create a skillset").click()
    page.get_by_label("Name").fill("data")
    page.get_by_label("Description").fill("The data team's skills, released together.")
    page.get_by_label("Members").fill("csv-tools: 1\nsql-tools: 1\nnope: 1\n")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#members-error")).to_contain_text("Member 'nope': no skill has this name.")
    page.get_by_label("Members").fill("csv-tools: 1\nsql-tools: latest\n")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator(".flash-success")).to_contain_text("Published data v1")

    page.get_by_role("link", name="Publish a version").click()
    page.get_by_label("Members").fill("csv-tools: 2\nsql-tools: 2\ncharts: 1\n")
    page.get_by_label("Note").fill("Adds charts")
    page.get_by_role("button", name="Publish v2").click()
    expect(page.locator(".skillset-members [data-member=charts]")).to_contain_text("v1")

    page.get_by_role("link", name="Diff").first.click()
    expect(page.locator(".member-changes [data-member=csv-tools]")).to_contain_text("changed")
    expect(page.locator(".member-changes [data-member=charts]")).to_contain_text("added")
    expect(page.locator(".member-changes [data-member=sql-tools]")).to_contain_text("same")
    expect(page.locator("[data-member-diff=csv-tools] .diff")).to_contain_text("second edition")
    screenshot(page, "skillset-diff-author")

    page.get_by_role("link", name="Overview").click()
    move = page.locator("#move-form")
    move.get_by_label("Version").select_option("1")
    move.get_by_role("button", name="Move label").click()
    expect(page.get_by_role("heading", name="Move production of data to v1?")).to_be_visible()
    expect(page.locator(".member-moves [data-member=csv-tools]")).to_contain_text("allowed")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flash-success")).to_contain_text("Moved production of data to v1")
    assert (_production("csv-tools"), _production("sql-tools")) == (1, 2)

    move = page.locator("#move-form")
    move.get_by_label("Version").select_option("2")
    move.get_by_role("button", name="Move label").click()
    expect(page.locator(".member-moves [data-member=csv-tools]")).to_contain_text("v1")
    screenshot(page, "skillset-confirm-author")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("[data-label=production]")).to_contain_text("v2")
    assert (_production("csv-tools"), _production("charts")) == (2, 1)
    screenshot(page, "skillset-page-author")

    page.locator("[data-label=production]").get_by_role("button", name="Roll back").click()
    expect(page.locator(".flash-success")).to_contain_text("it serves v1, members and all")
    assert _production("csv-tools") == 1


def test_the_confirmation_names_a_refusing_member_and_an_analyst_only_reads(open_page, live_server, skills):
    first, _ = skillset_publish(name="data", members={"csv-tools": 1, "sql-tools": 1})
    skillset_label_move(skillset=first.skillset, label="production", version_number=1)
    skillset_publish(name="data", members={"csv-tools": 2, "sql-tools": 1}, note="New CSV edition")
    label_policy_set(label="production", roles=["author", "admin"], require_scan={"max_verdict": "review"})
    user_with_role("ada", "author")
    author = open_page("ada")
    author.goto(f"{live_server.url}/skillsets/data/")
    author.locator("#move-form").get_by_label("Version").select_option("2")
    author.locator("#move-form").get_by_role("button", name="Move label").click()

    expect(author.locator(".member-moves [data-member=csv-tools]")).to_contain_text("needs evidence")
    expect(author.locator(".member-moves [data-member=sql-tools]")).to_contain_text("nothing to move")
    expect(author.locator(".flash-error")).to_contain_text("csv-tools")
    expect(author.get_by_role("button", name="Confirm")).to_be_disabled()

    user_with_role("ann", "analyst")
    analyst = open_page("ann")
    analyst.goto(f"{live_server.url}/skillsets/")
    expect(analyst.get_by_role("link", name="data")).to_be_visible()
    screenshot(analyst, "skillset-list-analyst")
    analyst.get_by_role("link", name="data").click()
    expect(analyst.locator("[data-label=production]")).to_contain_text("v1")
    expect(analyst.locator("#move-form")).to_have_count(0)
    expect(analyst.get_by_role("link", name="Publish a version")).to_have_count(0)
    screenshot(analyst, "skillset-page-analyst")


def test_an_admin_removes_an_eval_gated_set_label_with_a_reason(open_page, live_server, skills):
    first, _ = skillset_publish(name="data", members={"csv-tools": 1, "charts": 1})
    skillset_label_move(skillset=first.skillset, label="production", version_number=1)
    gate = {"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8, "not_worse": True}
    label_policy_set(label="production", roles=["author", "admin"], require_eval=gate)
    user_with_role("root", "admin")
    page = open_page("root")
    page.goto(f"{live_server.url}/skillsets/data/")

    page.get_by_role("button", name="Remove label production").click()

    expect(page.locator(".flash-error")).to_contain_text("Member 'charts'")
    screenshot(page, "skillset-label-remove-admin")
    page.get_by_label("Override reason").fill("Retiring the data set")
    page.get_by_role("button", name="Remove anyway").click()
    expect(page.locator(".flash")).to_contain_text("Removed label production from data")
    expect(page.locator("[data-label=production]")).to_have_count(0)
    assert _production("charts") == 1  # the member keeps its own label
