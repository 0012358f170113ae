"""The analytics pages in a real Chromium, as an analyst: charts are there, the numbers are the
API's numbers, and the CSV exports download. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from registry.services.usage import UsageEventInput, usage_record
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


def outcomes(skill: str, version: int, succeeded: int, failed: int, days_ago: int, **extra):
    at = timezone.now().replace(minute=0, second=0, microsecond=0) - dt.timedelta(days=days_ago, hours=1)
    tag = f"{skill}-{version}-{days_ago}"
    events = [UsageEventInput(f"{tag}-s{i}", "succeeded", skill, version, at=at, **extra) for i in range(succeeded)]
    events += [UsageEventInput(f"{tag}-f{i}", "failed", skill, version, at=at, **extra) for i in range(failed)]
    events += [
        UsageEventInput(f"{tag}-l{i}", "loaded", skill, version, at=at, **extra) for i in range(succeeded + failed)
    ]
    return events


@pytest.fixture
def usage():
    events = []
    for day in range(0, 12):
        events += outcomes("pdf", 2, 2 + day % 3, 2, day, trigger="read_skill", model="gpt-4o", tokens=900)
        events += outcomes("pdf", 3, 4, day % 2, day, trigger="forced", model="gpt-4o", tokens=700)
        events += outcomes("xlsx", 1, 1, 3, day, trigger="task_match", model="claude")
    events += [
        UsageEventInput(f"offer-{i}", "offered", "", offered_skills=(("pdf", 3), ("xlsx", 1))) for i in range(60)
    ]
    usage_record(events=events[:1000])
    usage_record(events=events[1000:])


def log_in_as_analyst(page, live_server):
    analyst = UserFactory(username="ada")
    analyst.groups.add(Group.objects.get_or_create(name="analyst")[0])
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "pw-for-tests")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Dashboard')")


def percent(rate: float) -> str:
    return f"{round(rate * 100)}%"


def test_the_overview_shows_the_apis_numbers_with_trends_and_exports_csv(live_server, page, usage):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    log_in_as_analyst(page, live_server)
    page.screenshot(path=str(SCREENSHOTS / "dashboard-analyst.png"), full_page=True)

    page.goto(f"{live_server.url}/analytics/")
    page.wait_for_selector("#skills-table")
    page.screenshot(path=str(SCREENSHOTS / "analytics-overview.png"), full_page=True)

    today = timezone.now().date()
    api = page.request.get(
        f"{live_server.url}/api/v1/analytics/skills?from={today - dt.timedelta(days=29)}&to={today}"
    ).json()
    assert {row["skill"] for row in api["skills"]} == {"pdf", "xlsx"}
    for row in api["skills"]:
        cells = page.locator(f"tr[data-skill='{row['skill']}']")
        assert cells.locator("td.n").inner_text() == str(row["n"])
        assert cells.locator("td.rate").inner_text() == percent(row["success_rate"])
        assert cells.locator("td.interval").inner_text() == f"{percent(row['ci_low'])[:-1]}–{percent(row['ci_high'])}"
        assert cells.locator("svg.sparkline polyline").count() == 1
        assert "Success rate of" in cells.locator("svg.sparkline").get_attribute("aria-label")
    assert page.locator("svg.funnel").count() == 1

    # Sorting by a header reorders the rows (a link: it works without JavaScript).
    page.click("th a:has-text('Success rate')")
    first = page.locator("#skills-table tbody tr").first.get_attribute("data-skill")
    page.click("th a:has-text('Success rate')")
    assert page.locator("#skills-table tbody tr").first.get_attribute("data-skill") != first

    with page.expect_download() as download:
        page.click("a:has-text('Export CSV')")
    table = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert {(r["skill"], int(r["n"])) for r in table} == {(r["skill"], r["n"]) for r in api["skills"]}


def test_the_skill_page_charts_the_rate_compares_versions_and_exports(live_server, page, usage):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    log_in_as_analyst(page, live_server)

    page.goto(f"{live_server.url}/analytics/")
    page.click("#skills-table a:has-text('pdf')")
    page.wait_for_selector("svg.rate-chart")
    page.screenshot(path=str(SCREENSHOTS / "analytics-skill.png"), full_page=True)

    # The chart has a band and a line, and a text alternative.
    assert page.locator("svg.rate-chart polygon.band").count() >= 1
    assert page.locator("svg.rate-chart polyline.line").count() >= 1
    assert "95% Wilson interval" in page.locator("svg.rate-chart desc").text_content()

    today = timezone.now().date()
    window = f"from={today - dt.timedelta(days=29)}&to={today}"
    versions = page.request.get(f"{live_server.url}/api/v1/analytics/skills?skill=pdf&by_version=true&{window}").json()[
        "skills"
    ]
    for row in versions:
        cells = page.locator(f"#versions-table tr[data-version='{row['version']}']")
        assert cells.locator("td.n").inner_text() == str(row["n"])
        assert cells.locator("td.rate").inner_text() == percent(row["success_rate"])
    compare = page.request.get(f"{live_server.url}/api/v1/analytics/skills/pdf/compare?a=2&b=3&{window}").json()
    assert page.locator("#comparison").inner_text() == compare["summary"] + "."
    assert page.locator("#comparison").inner_text().startswith("v3 beats v2 with")

    points = page.request.get(f"{live_server.url}/api/v1/analytics/skills/pdf/timeseries?interval=day&{window}").json()
    assert page.locator("#series-table tbody tr").count() == sum(1 for p in points["points"] if p["n"])
    assert page.locator("#triggers-table").inner_text().count("read_skill") == 1

    with page.expect_download() as download:
        page.click("a:has-text('Versions CSV')")
    table = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert {(int(r["version"]), int(r["succeeded"])) for r in table} == {
        (r["version"], r["succeeded"]) for r in versions
    }

    # Choosing other versions to compare, and a weekly view.
    page.select_option("#cmp-a", "3")
    page.select_option("#cmp-b", "2")
    page.click("button:has-text('Compare')")
    assert page.locator("#comparison").inner_text().startswith("v3 beats v2")
    page.select_option("#f-interval", "week")
    page.click("button:has-text('Apply')")
    page.wait_for_selector("svg.rate-chart")
    assert "per week" in page.locator("#series-h").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "analytics-skill-weekly.png"), full_page=True)


def test_a_bad_date_in_the_filter_is_explained_not_a_500(live_server, page, usage):
    log_in_as_analyst(page, live_server)
    response = page.goto(f"{live_server.url}/analytics/skills/pdf/?from=9999-12-31&to=2026-01-01")
    assert response.status == 200
    assert "between 1970-01-01 and 2999-12-31" in page.locator(".filter-errors").inner_text()


@pytest.mark.parametrize("path", ["/analytics/", "/analytics/skills/pdf/", "/", "/skills/", "/rules/", "/tokens/"])
def test_pages_fit_a_390px_phone_without_sideways_scrolling(live_server, browser, usage, path):
    """The README promises phone width: the page itself never scrolls sideways (a wide table may
    scroll inside its own box)."""
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    log_in_as_analyst(page, live_server)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > 390:
        page.screenshot(path=str(SCREENSHOTS / f"phone-overflow{path.replace('/', '-')}.png"), full_page=True)
    wide = page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > 391 && getComputedStyle(e).position !== 'fixed')
            .filter(e => !e.closest('.table-wrap, .table-scroll, pre'))
            .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
    )
    assert width <= 390, (path, width, wide)


def test_a_workspace_skill_shadowing_a_bundled_one_shows_only_its_own_usage(page, live_server):
    from tests.factories import publish

    publish("code-review", source="bundled", description="Reviews code for bugs when asked.")
    usage_record(events=outcomes("code-review", 1, 7, 3, 2, trigger="read_skill", model="gpt-4o"))
    publish("code-review", source="workspace", description="Reviews code the way this project does.")
    # Outcomes sent without trigger or model, after a load that has them.
    at = timezone.now() - dt.timedelta(hours=1)
    usage_record(
        events=[
            UsageEventInput("w-load", "loaded", "code-review", 1, trigger="task_match", model="claude", at=at),
            UsageEventInput("w-ok", "succeeded", "code-review", 1, at=at),
        ]
    )
    log_in_as_analyst(page, live_server)

    page.goto(f"{live_server.url}/analytics/")
    rows = page.locator("tr[data-skill='code-review']")
    assert rows.count() == 2
    assert "bundled" in rows.nth(0).inner_text() and "workspace" in rows.nth(1).inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "analytics-shadowed-overview.png"), full_page=True)

    page.goto(f"{live_server.url}/analytics/skills/code-review/")  # the skill the name resolves to
    assert page.inner_text("#overall-n") == "1" and page.inner_text("#skill-source") == "workspace"
    assert page.inner_text("#triggers-table tbody").split("\t")[0] == "task_match"
    assert "(not reported)" not in page.inner_text("#models-table")
    page.screenshot(path=str(SCREENSHOTS / "analytics-shadowing-skill.png"), full_page=True)

    page.click("#other-sources a:has-text('bundled')")
    page.wait_for_selector("#skill-source:has-text('bundled')")
    assert page.inner_text("#overall-n") == "10" and page.inner_text("#overall-rate") == "70%"
    page.click("button:has-text('Apply')")  # the filter form keeps the skill's source
    assert page.inner_text("#overall-n") == "10"
    page.screenshot(path=str(SCREENSHOTS / "analytics-shadowed-skill.png"), full_page=True)
