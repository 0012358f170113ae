"""Capabilities in the console, in a real headless Chromium: the diff page and the production
confirm page list what a version adds (`+ network: api.example.com (scripts/sync.py:6)`,
`+ reads GITHUB_TOKEN (…)`) and drops, for an author and an admin; under a policy with
`new_capabilities: admin`, an author's button is disabled with the capabilities named, and an
admin approves them on the confirm page with a reason the label history keeps."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import LabelChange, LabelHistory
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OFFLINE = b"def main():\n    print('offline')\n"
ONLINE = (
    b"import os\n"
    b"import requests\n"
    b"\n"
    b"def main():\n"
    b'    token = os.environ["GITHUB_TOKEN"]\n'
    b'    requests.post("https://api.example.com/sync", headers={"Authorization": token})\n'
)
ADDED = ["+ network: api.example.com (scripts/sync.py:6)", "+ reads GITHUB_TOKEN (scripts/sync.py:5)"]


def sync_skill():
    v1 = publish("sync", description="Syncs the tracker.", files=[("scripts/sync.py", OFFLINE, False)])
    label_move(skill=v1.skill, label="production", version_number=1)
    publish("sync", description="Syncs the tracker.", files=[("scripts/sync.py", ONLINE, False)])
    return v1.skill


@pytest.mark.parametrize("role", ["author", "admin"])
def test_the_diff_page_lists_added_and_removed_capabilities(live_server, open_page, role):
    user_with_role("ada", role)
    sync_skill()
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/sync/diff/?from=1&to=2")

    box = page.locator("[data-capabilities]")
    expect(box.locator(".box-head")).to_contain_text("Capabilities: v1 → v2")
    expect(box.locator("li.capability-added")).to_have_text(
        [text + " " + badge for text, badge in zip(ADDED, ["new network", "new credential"], strict=True)]
    )
    expect(box.locator("li.capability-removed")).to_have_count(0)
    screenshot(page, f"capabilities-diff-{role}")

    page.goto(f"{live_server.url}/skills/sync/diff/?from=2&to=1")
    expect(box.locator("li.capability-removed")).to_have_text([text.replace("+", "−", 1) for text in ADDED])
    expect(box.locator("li.capability-added")).to_have_count(0)


def test_the_confirm_page_shows_what_the_move_adds(live_server, open_page):
    user_with_role("ada", "author")
    sync_skill()
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/sync/versions/")

    page.get_by_role("button", name="Promote v2 to production").click()

    expect(page.get_by_role("heading", name="Move production to v2?")).to_be_visible()
    added = page.locator("[data-capabilities] li.capability-added")
    expect(added).to_have_count(2)
    expect(added.first).to_contain_text(ADDED[0])
    expect(added.nth(1)).to_contain_text(ADDED[1])
    expect(page.locator("#override-reason")).to_have_count(0)  # no policy asks for approval
    screenshot(page, "capabilities-confirm-author")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flash-success")).to_contain_text("Moved production of sync from v1 to v2")


def test_under_the_policy_an_author_is_stopped_and_an_admin_approves_with_a_reason(live_server, open_page):
    user_with_role("ada", "author")
    user_with_role("root", "admin")
    skill = sync_skill()
    label_policy_set(label="production", roles=["admin", "author"], new_capabilities="admin")

    author = open_page("ada")
    author.goto(f"{live_server.url}/skills/sync/versions/")
    expect(author.get_by_role("button", name="Promote v2 to production")).to_be_disabled()
    gate = author.locator(".gate-line").first
    expect(gate).to_contain_text("admin override only")
    expect(gate).to_contain_text("network: api.example.com (scripts/sync.py:6)")
    expect(gate).to_contain_text("reads GITHUB_TOKEN (scripts/sync.py:5)")
    screenshot(author, "capabilities-gate-author")
    # The Move a label form posts anyway: the refusal names the capabilities in place.
    author.get_by_label("Label", exact=True).fill("production")
    author.get_by_label("Version", exact=True).select_option("2")
    author.get_by_role("button", name="Move label", exact=True).click()
    refusal = author.locator("#label-refusal")
    expect(refusal).to_contain_text("+ network: api.example.com (scripts/sync.py:6)")
    expect(refusal).to_contain_text("+ reads GITHUB_TOKEN (scripts/sync.py:5)")
    expect(refusal.locator("form.override")).to_have_count(0)  # authors cannot override
    screenshot(author, "capabilities-refused-author")

    admin = open_page("root")
    admin.goto(f"{live_server.url}/skills/sync/versions/")
    admin.get_by_role("button", name="Promote v2 to production").click()
    expect(admin.get_by_role("heading", name="Move production to v2?")).to_be_visible()
    expect(admin.locator("[data-capabilities] li.capability-added")).to_have_count(2)
    reason = admin.get_by_label("Approve the new capabilities: why may production serve them?")
    expect(reason).to_be_visible()
    screenshot(admin, "capabilities-confirm-admin")

    reason.fill("Reviewed scripts/sync.py: it posts to our own sync service with the repo token.")
    admin.get_by_role("button", name="Confirm").click()
    expect(admin.locator(".flash-success")).to_contain_text("Moved production of sync from v1 to v2")
    row = LabelHistory.objects.filter(skill=skill, label="production").first()
    assert row.kind == LabelChange.OVERRIDE and row.to_version == 2
    assert row.unmet[0]["got"] == ADDED


def test_an_admin_turns_the_check_on_in_the_policy_form(live_server, open_page):
    user_with_role("root", "admin")
    page = open_page("root")
    page.goto(f"{live_server.url}/labels/policies/")

    page.get_by_label("Approve new capabilities first").check()
    page.get_by_role("button", name="Save policy").click()

    row = page.locator("#policy-production")
    expect(row.locator(".new-capabilities-policy")).to_have_text("new capabilities need an admin")
    screenshot(page, "capabilities-policy-admin")
    page.get_by_role("link", name="Edit the policy of production").click()
    expect(page.get_by_label("Approve new capabilities first")).to_be_checked()
