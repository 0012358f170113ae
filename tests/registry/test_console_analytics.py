"""The analytics pages without a browser: who may open them, hostile names, bad filters."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from registry.models import HourlyRollup, QueuedOffer
from registry.services.usage import UsageEventInput, usage_record
from tests.factories import UserFactory, publish

pytestmark = pytest.mark.django_db


def user_with_role(role: str | None):
    user = UserFactory()
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def test_logged_out_is_sent_to_login_and_a_user_without_a_role_is_refused(client):
    for path in ("/analytics/", "/analytics/skills/pdf/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    client.force_login(user_with_role(None))
    assert client.get("/analytics/").status_code == 403


@pytest.mark.parametrize("role", ["analyst", "author", "admin"])
def test_analysts_and_up_see_both_pages(client, role):
    usage_record(events=[UsageEventInput("a", "succeeded", "pdf", 1), UsageEventInput("b", "failed", "pdf", 2)])
    client.force_login(user_with_role(role))
    assert b"<svg" in client.get("/analytics/").content
    page = client.get("/analytics/skills/pdf/").content.decode()
    # One outcome a version is below the comparison's minimum: the page says so, with no verdict.
    assert "Too few outcomes to compare yet" in page and "beats" not in page


def test_hostile_skill_names_are_escaped_and_never_break_a_page(client):
    names = ["<img src=x onerror=alert(1)>", "a/b", "x y?&z", "ünï"]
    usage_record(events=[UsageEventInput(f"e{i}", "succeeded", name, 1) for i, name in enumerate(names)])
    client.force_login(user_with_role("analyst"))

    overview = client.get("/analytics/").content.decode()
    assert "<img src=x" not in overview and "&lt;img src=x onerror=alert(1)&gt;" in overview
    assert "/analytics/skills/a%2Fb/" in overview  # a 404 when followed (no route has a slash in a name)
    skill_page = client.get("/analytics/skills/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E/")
    assert skill_page.status_code == 200 and "<img src=x" not in skill_page.content.decode()
    assert client.get("/analytics/skills/x%20y%3F%26z/").status_code == 200
    assert client.get("/").status_code == 200


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/analytics/", "from=9999-12-31"),
        ("/analytics/skills/pdf/", "to=0001-01-01"),
        ("/analytics/", "from=2026-13-01"),
        ("/analytics/skills/pdf/", "from=2026-03-02&to=2026-03-01"),
        ("/analytics/skills/pdf/", "interval=hour&from=1999-01-01"),
    ],
)
def test_bad_filters_are_explained_on_the_page(client, path, query):
    usage_record(events=[UsageEventInput("a", "succeeded", "pdf", 1)])
    client.force_login(user_with_role("analyst"))
    response = client.get(f"{path}?{query}")
    assert response.status_code == 200
    assert b"filter-errors" in response.content or b"more than" in response.content


def test_the_widest_range_allowed_still_renders(client):
    usage_record(events=[UsageEventInput("a", "succeeded", "pdf", 1)])
    client.force_login(user_with_role("analyst"))
    for path in ("/analytics/", "/analytics/skills/pdf/"):
        assert client.get(f"{path}?from=1970-01-01&to=2999-12-31").status_code == 200


@pytest.mark.parametrize("path", ["/", "/analytics/", "/analytics/skills/pdf/", "/skills/pdf/"])
def test_every_page_with_counts_counts_the_offers_a_finished_turn_left_queued(client, path):
    publish("pdf")
    listed = (("pdf", 1), ("xlsx", None))
    usage_record(events=[UsageEventInput("t1:offered", "offered", "", offered_skills=listed)], source="runtime")
    assert QueuedOffer.objects.exists()
    client.force_login(user_with_role("analyst"))

    assert client.get(path).status_code == 200
    assert not QueuedOffer.objects.exists()  # the view rolled the queue up before it read
    assert HourlyRollup.objects.filter(skill_name="pdf", offered=1).exists()


def test_the_dashboard_s_empty_rankings_say_different_things(client):
    client.force_login(user_with_role("analyst"))
    page = client.get("/").content.decode()
    best = page.split('id="best-h"')[1].split("</section>")[0]
    worst = page.split('id="worst-h"')[1].split("</section>")[0]
    assert "No skill has 5 outcomes" in best and "POST /api/v1/usage" in worst and best != worst
