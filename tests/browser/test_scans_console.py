"""Scan verdicts in a real headless Chromium: the version page lists the findings with their lines
highlighted, the skill list carries a badge, the diff and the production confirmation show the
candidate's verdict, and a move `require_scan` refuses names the scan and its findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from registry.services.audit import SYSTEM
from registry.services.label_policies import label_policy_set
from registry.services.scans import scan_run
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import read_folder
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = Path(__file__).resolve().parent.parent / "registry" / "hostile_skills"


@pytest.fixture
def scanned():
    """notes-sync v1 (hostile) and v2 (harmless), each scanned by the real scanner in this process."""
    hostile = skill_version_publish(bundle=read_folder(HOSTILE / "notes-sync"), actor=SYSTEM).version
    harmless = publish("notes-sync", description="Back up notes.", body="Copy the notes folder somewhere safe.\n")
    for version in (hostile, harmless.version):
        scan_run(scan_id=version.scans.get().pk)
    return hostile.skill


def test_the_version_page_shows_findings_with_their_lines_highlighted(browser, live_server, scanned):
    user_with_role("ann", "author")
    page = new_page(browser)
    log_in(page, live_server.url, "ann")

    page.goto(f"{live_server.url}/skills/notes-sync/?version=1")
    scan = page.locator("#scan")
    expect(scan.locator(".badge.verdict")).to_have_text("malicious")
    finding = scan.locator('.scan-finding:has(.where:text-is("scripts/sync.py:12"))').first
    expect(finding.locator(".hit")).to_contain_text("requests.post")
    expect(finding.locator(".hit .ln")).to_have_text("12")
    expect(finding.locator(".ctx").first).to_be_visible()  # the lines around it, not highlighted
    screenshot(page, "scan-version-findings")

    page.goto(f"{live_server.url}/skills/notes-sync/?version=2")
    expect(page.locator("#scan .badge.verdict")).to_have_text("clean")

    page.goto(f"{live_server.url}/skills/")
    expect(page.locator("tr:has-text('notes-sync') .scan-cell .badge")).to_have_text("clean")  # the newest, v2
    screenshot(page, "scan-skill-list")

    page.goto(f"{live_server.url}/skills/notes-sync/diff/?from=2&to=1")
    expect(page.locator(".scan-compare")).to_contain_text("v2 clean → v1 malicious")
    screenshot(page, "scan-diff")


def test_a_move_require_scan_refuses_names_the_scan_and_a_clean_one_confirms_with_its_verdict(
    browser, live_server, scanned
):
    label_policy_set(label="production", roles=["admin", "author"], require_scan={"max_verdict": "review"})
    user_with_role("root", "admin")
    page = new_page(browser)
    log_in(page, live_server.url, "root")

    page.goto(f"{live_server.url}/skills/notes-sync/versions/")
    row = page.locator("tr:has(button:text-is('Set production to v1'))")
    expect(row).to_contain_text("a scan verdict of at most review (its scan says malicious)")  # before the click
    row.get_by_role("button", name="Set production to v1").click()
    refusal = page.locator("#label-refusal")
    expect(refusal).to_contain_text("scan")
    expect(refusal.locator(".scan-refusal-findings")).to_contain_text("scripts/sync.py")
    screenshot(page, "scan-refusal")

    # An admin's override puts production on v1; promoting the clean v2 then asks for confirmation.
    page.locator("#override-reason").fill("Known false positive: the upload goes to our own backup host.")
    page.get_by_role("button", name="Override and move production to v1").click()
    expect(page.locator(".flash-success")).to_contain_text("to v1")
    page.get_by_role("button", name="Promote v2 to production").click()
    expect(page.locator(".scan-line")).to_contain_text("Security scan of v2: clean")
    screenshot(page, "scan-confirm")
