"""Try before you promote, in a real headless Chromium against the live server and a real worker:
one message run against two versions of a skill side by side (each column its own version, body
and script listing, filled in live), a turn at a label, and an analyst, who runs no turns."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agents.models import AgentTurn
from registry.models import Skill
from registry.services.labels import label_move
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def checklist():
    """v1 (production): checked by hand, no scripts; v2 (staging): runs scripts/check.sh."""
    publish(
        "release-checklist",
        description="Release checklist for shipping a release.",
        body="# Release\n\n1. Read the changelog by hand.\n2. Tag the release.\n",
    )
    publish(
        "release-checklist",
        description="Release checklist for shipping a release, scripted.",
        body="# Release\n\n1. Run the check script.\n2. Tag the release when it passes.\n",
        tools=["run_skill"],
        files=[("scripts/check.sh", b"#!/bin/sh\necho checked\n", True)],
    )
    skill = Skill.objects.get(name="release-checklist")
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="staging", version_number=2)


def system_prompt(page, panel: str) -> str:
    event = page.locator(f'{panel} .event[data-type="llm_call"]').first
    event.locator("summary").first.click()
    event.locator("details.prompt summary").click()
    return event.locator("details.prompt pre").inner_text()


def test_an_author_compares_two_versions_of_a_forced_skill_side_by_side(live_server, open_page, worker, checklist):
    user_with_role("ada", "author")
    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/")
    page.evaluate("window.__samePage = true")  # gone if anything reloads the page

    page.fill("textarea[name=message]", "ship the release")
    page.select_option("#id_model", "offline")
    page.fill("#id_forced_skill", "release-checklist")
    expect(page.locator("#version-choices")).to_contain_text("has v1, v2")  # asked as the name is typed
    page.fill("#id_version", "1")
    page.fill("#id_compare_version", "2")
    page.get_by_role("button", name="Send").click()

    left, right = page.locator("#turn-panel"), page.locator("#turn-panel-b")
    expect(left).to_be_visible()
    expect(right).to_be_visible()
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("#turn-status-b")).to_have_text("succeeded", timeout=60_000)
    assert page.evaluate("window.__samePage") is True, "both columns fill in without a reload"
    first, second = AgentTurn.objects.order_by("created_at")
    assert f"?turn={first.pk}&compare={second.pk}" in page.url

    # Side by side: the two panels sit in one row.
    left_box, right_box = left.bounding_box(), right.bounding_box()
    assert left_box["x"] + left_box["width"] <= right_box["x"] and abs(left_box["y"] - right_box["y"]) < 2

    expect(left.locator(".box-head")).to_contain_text("release-checklist pinned v1")
    expect(right.locator(".box-head")).to_contain_text("release-checklist pinned v2")
    expect(page.locator("#turn-ran")).to_have_text("ran release-checklist v1")
    expect(page.locator("#turn-ran-b")).to_have_text("ran release-checklist v2")
    expect(page.locator("#turn-answer .answer-head")).to_contain_text("ran release-checklist v1")
    expect(page.locator("#turn-answer-b .answer-head")).to_contain_text("ran release-checklist v2")
    expect(page.locator("#turn-answer")).to_contain_text("Read the changelog by hand.")
    expect(page.locator("#turn-answer-b")).to_contain_text("Run the check script.")
    expect(page.locator("#turn-answer-b")).not_to_contain_text("Read the changelog")
    expect(left.locator('.event[data-type="skill_activated"]')).to_contain_text("release-checklist v1 via forced")
    expect(right.locator('.event[data-type="skill_activated"]')).to_contain_text("release-checklist v2 via forced")

    left_prompt, right_prompt = system_prompt(page, "#turn-panel"), system_prompt(page, "#turn-panel-b")
    assert 'version="1"' in left_prompt and "scripts/check.sh" not in left_prompt
    assert 'version="2"' in right_prompt and "scripts/check.sh" in right_prompt
    screenshot(page, "playground-compare-versions-author")

    # Feedback in the right column is recorded for its own turn and answered in its own place.
    right.get_by_role("button", name="✓ Good").click()
    expect(page.locator("#turn-feedback-b")).to_contain_text("Thanks")
    expect(page.locator("#turn-feedback")).not_to_contain_text("Thanks")
    second.refresh_from_db()
    assert second.feedback_rating == 1

    # The form keeps the choices for the next comparison.
    expect(page.locator("#id_version")).to_have_value("1")
    expect(page.locator("#id_compare_version")).to_have_value("2")
    expect(page.locator(".compare-title")).to_contain_text("release-checklist v1 and v2")

    # On a phone the columns stack, each still whole.
    page.set_viewport_size({"width": 390, "height": 844})
    left_box, right_box = left.bounding_box(), right.bounding_box()
    assert right_box["y"] >= left_box["y"] + left_box["height"]
    assert right_box["x"] + right_box["width"] <= 390
    screenshot(page, "playground-compare-versions-phone-author")


def test_an_admin_runs_a_turn_at_a_label(live_server, open_page, worker, checklist):
    user_with_role("root", "admin")
    page = open_page("root")
    page.goto(f"{live_server.url}/playground/")

    page.fill("textarea[name=message]", "ship the release with the release checklist")
    page.select_option("#id_model", "offline")
    page.select_option("#id_label", "staging")
    page.get_by_role("button", name="Send").click()

    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("#turn-panel .box-head")).to_contain_text("label staging")
    expect(page.locator("#turn-ran")).to_have_text("ran release-checklist v2")
    expect(page.locator("#turn-answer")).to_contain_text("Run the check script.")
    assert page.locator("#turn-panel-b").count() == 0
    expect(page.locator("#id_label")).to_have_value("staging")
    screenshot(page, "playground-label-staging-admin")

    # The same message without a label runs production (v1).
    first = AgentTurn.objects.get()
    page.fill("textarea[name=message]", "ship the release with the release checklist")
    page.select_option("#id_label", "")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#turn-panel")).not_to_have_attribute("data-turn", str(first.pk))
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("#turn-ran")).to_have_text("ran release-checklist v1")
    expect(page.locator("#turn-panel .box-head")).not_to_contain_text("label")


def test_an_analyst_sees_no_version_choices(live_server, open_page, checklist):
    user_with_role("ann", "analyst")
    page = open_page("ann")
    page.goto(f"{live_server.url}/playground/")

    expect(page.get_by_text("Your role can't run turns.")).to_be_visible()
    assert page.locator("#id_version, #id_compare_version, #id_label").count() == 0
    screenshot(page, "playground-versions-analyst")
