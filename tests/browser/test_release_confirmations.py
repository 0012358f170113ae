"""Release safety in the console, in a real headless Chromium: the first production label's
confirmation says what each audience is served before and after (readers naming `production`
get it for the first time, readers naming no label go back from the latest), and a new skill
with a taken name is named as taken while it is typed and refused when published, with a link
to the skill that has the name and nothing offering to publish over it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import Label, SkillVersion
from registry.services.audit import Actor
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import make_skill_md, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_first_production_label_states_the_change_for_each_audience(live_server, open_page):
    user_with_role("ada", "author")
    publish("first-label", description="Version one.", body="# First\n\nThe careful steps.\n")
    publish("first-label", description="Version two.", body="# First\n\nThe newer steps.\n")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/first-label/versions/")

    page.get_by_role("button", name="Set production to v1").click()

    expect(page.get_by_role("heading", name="Move production to v1?")).to_be_visible()
    labelled = page.locator("[data-audience='naming production'] .audience-change")
    expect(labelled).to_have_text("nothing (the skill has no production label) → v1")
    unlabelled = page.locator("[data-audience='naming no label'] .audience-change")
    expect(unlabelled).to_have_text("v2 (the latest: no version is labelled production) → v1")
    # Readers naming no label lose v2's lines and get v1's back: that diff, not a whole file added.
    diff = page.locator("[data-audience-diff='naming no label']")
    expect(diff.locator("tr.del")).to_contain_text(["description: Version two.", "The newer steps."])
    expect(diff.locator("tr.add")).to_contain_text(["description: Version one.", "The careful steps."])
    expect(page.locator("[data-audience-diff='naming production'] tr.del")).to_have_count(0)
    screenshot(page, "first-production-confirm-author")
    assert not Label.objects.exists()

    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flash-success")).to_contain_text("Moved production of first-label to v1")
    assert Label.objects.get(name="production").version.number == 1


def test_a_new_skill_with_a_taken_name_is_named_as_taken_and_refused(live_server, open_page):
    ann = user_with_role("ann", "author")
    for n in (1, 2, 3):
        text = make_skill_md("csv-cleaner", description=f"Ann's cleaner, take {n}.")
        skill_version_publish(bundle=bundle_from_parts(text.encode(), ()), actor=Actor(user=ann))
    user_with_role("bob", "author")
    page = open_page("bob")
    page.goto(f"{live_server.url}/skills/new/")

    page.fill("[data-skill-editor]", make_skill_md("csv-cleaner", description="Bob's own cleaner."))

    taken = page.locator("#problems [data-name-taken]")
    expect(taken).to_have_text("× csv-cleaner exists (v3 by ann): open it or choose another name.")
    expect(page.locator("#problems .badge-bad")).to_have_text("1 error")
    expect(page.locator("#problems .badge-warn")).to_have_count(0)
    screenshot(page, "new-skill-name-taken-author")

    page.get_by_role("button", name="Publish").click()
    expect(page.locator(".flash-error")).to_contain_text("'csv-cleaner' exists (v3 by ann, source user)")
    expect(page.locator("#problems [data-name-taken]")).to_be_visible()
    expect(page.get_by_role("button", name="Publish on top", exact=False)).to_have_count(0)
    expect(page.locator("body")).not_to_contain_text("Edit conflict")
    screenshot(page, "new-skill-name-taken-refused-author")
    assert SkillVersion.objects.filter(skill__name="csv-cleaner").count() == 3

    page.locator("#problems [data-name-taken]").get_by_role("link", name="open it").click()
    expect(page.locator("h1").first).to_contain_text("csv-cleaner")
    assert page.url.endswith("/skills/csv-cleaner/?source=user")

    # Renamed, it publishes as a skill of its own.
    page.goto(f"{live_server.url}/skills/new/")
    page.fill("[data-skill-editor]", make_skill_md("csv-tidier", description="Bob's own cleaner."))
    expect(page.locator("#problems .all-good")).to_be_visible()
    page.get_by_role("button", name="Publish").click()
    expect(page.locator(".flash-success")).to_contain_text("Published csv-tidier v1.")
