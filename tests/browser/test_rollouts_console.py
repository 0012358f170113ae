"""Canary rollouts on the versions page in a real headless Chromium: an admin starts, raises and
promotes one; an author starts and aborts one; the live comparison sits beside it, and a guard's
rollback shows a banner on the skill's pages."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import AuditLog, Label
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from registry.tasks import label_rollouts_guard_task
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_versions():
    publish("canary-ui", description="Stable edition.")
    skill = publish("canary-ui", description="Canary edition.").skill
    label_move(skill=skill, label="production", version_number=1)
    return skill


def _production(skill) -> Label:
    return Label.objects.select_related("version", "canary_version").get(skill=skill, name="production")


def _start(page, version: int, weight: int) -> None:
    """Fill and send the "start a rollout" form."""
    start = page.locator("#rollout-start")
    start.get_by_label("Label to roll out").fill("production")
    start.get_by_label("Canary version").select_option(str(version))
    start.get_by_label("Weight (%)").fill(str(weight))
    start.get_by_role("button", name="Start rollout").click()


def test_an_admin_starts_raises_and_promotes_a_rollout(browser, live_server, two_versions, api):
    user_with_role("root", "admin")
    page = new_page(browser)
    log_in(page, live_server.url, "root")
    page.goto(f"{live_server.url}/skills/canary-ui/versions/")
    expect(page.locator("#rollouts")).to_contain_text("No rollout")

    _start(page, 2, 10)
    expect(page.locator(".flash-success")).to_contain_text("v2 now serves 10% of production")
    label = _production(two_versions)
    assert (label.version.number, label.canary_version.number, label.weight) == (1, 2, 10)

    events = [
        {
            "event_id": f"ui-{version}-{n}",
            "kind": "succeeded" if n % 4 else "failed",
            "skill": "canary-ui",
            "version": version,
        }
        for version in (1, 2)
        for n in range(8)
    ]
    api.post("/api/v1/usage", {"events": events}, format="json")
    page.reload()
    panel = page.locator(".rollout[data-label=production]")
    expect(panel.locator(".rollout-comparison")).to_contain_text("stable v1")
    expect(panel.locator(".rollout-comparison")).to_contain_text("75%")
    expect(panel.locator(".rollout-p-worse")).not_to_have_text("—")

    panel.get_by_label("Weight (%)").fill("40")
    panel.get_by_role("button", name="Set weight").click()
    expect(page.locator(".flash-success")).to_contain_text("40%")
    assert _production(two_versions).weight == 40
    screenshot(page, "rollout-admin")

    # Promote moves production: the same confirmation page as any move of it, saying who gets what.
    page.locator(".rollout[data-label=production]").get_by_role("button", name="Promote v2").click()
    expect(page.get_by_role("heading", name="Move production to v2?")).to_be_visible()
    change = page.locator("[data-audience='naming production, naming no label'] .audience-change")
    expect(change).to_have_text("v1, and v2 for 40% of subjects (the rollout) → v2")
    assert _production(two_versions).weight == 40  # asking moved nothing
    screenshot(page, "rollout-promote-confirm-admin")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flash-success")).to_contain_text("Promoted v2 to production")
    label = _production(two_versions)
    assert label.version.number == 2 and label.canary_version is None and label.weight == 0
    assert AuditLog.objects.filter(action="label.rollout", via="console").count() == 2
    page.context.close()


def test_an_author_starts_and_aborts_and_sees_a_rollback_banner(browser, live_server, two_versions, api):
    user_with_role("ada", "author")
    page = new_page(browser)
    log_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/skills/canary-ui/versions/")

    _start(page, 1, 10)  # the stable version itself: refused, and said why
    expect(page.locator(".flash-error")).to_contain_text("already holds version 1")
    _start(page, 2, 25)
    expect(page.locator(".flash-success")).to_contain_text("25%")
    page.locator(".rollout[data-label=production]").get_by_role("button", name="Abort rollout").click()
    expect(page.locator(".flash-success")).to_contain_text("Aborted")
    assert _production(two_versions).canary_version is None

    label_policy_set(label="production", roles=["admin", "author"], guard={"min_n": 20, "p_worse": 0.9})
    _start(page, 2, 50)
    events = [
        {"event_id": f"rb-{version}-{n}", "kind": kind, "skill": "canary-ui", "version": version}
        for version, good in ((1, 18), (2, 4))
        for n, kind in enumerate(["succeeded"] * good + ["failed"] * (20 - good))
    ]
    assert api.post("/api/v1/usage", {"events": events}, format="json").status_code == 200
    assert label_rollouts_guard_task() == [_production(two_versions).pk]

    page.goto(f"{live_server.url}/skills/canary-ui/")
    expect(page.locator(".rollback-banner")).to_contain_text("rolled back the canary v2")
    screenshot(page, "rollout-rollback-banner")
    page.context.close()


def test_the_skill_page_says_a_canary_gets_a_share_of_the_served_label(browser, live_server, two_versions):
    """ "Agents get v1" is not the whole truth while 20% of subjects read v2: the overview says so
    beside the served label, in the words every page uses, and links the rollout."""
    label_rollout_set(skill=two_versions, label="production", version_number=2, weight=20)
    user_with_role("viv", "analyst")
    page = new_page(browser)
    log_in(page, live_server.url, "viv")
    page.goto(f"{live_server.url}/skills/canary-ui/")
    expect(page.locator("#served")).to_contain_text("v2 serves 20% of production (canary rollout)")
    note = page.locator(".canary-note")
    expect(note).to_have_text("canary v2 · 20% rollout")
    note.get_by_role("link", name="rollout").click()
    expect(page).to_have_url(f"{live_server.url}/skills/canary-ui/versions/#rollouts")
    screenshot(page, "skill-detail-canary")
