"""The console's turn pages with Django's client: who sees which turns, the filters and their
counts, failure causes, one turn's page; and every count on the analytics pages linking to the
turns behind it, whose total (with what outside agents reported) is that count."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from agents.models import TurnOrigin
from agents.turns import services
from registry.roles import ADMIN, ANALYST, AUTHOR
from registry.services.usage import UsageEventInput, usage_record
from tests.agents.turns.turn_runs import ABORTS, SUCCEEDS, TOOL_FAILS, run_turn
from tests.factories import publish, user_with_role

# The lease keeper renews from a thread of its own, on its own connection: turns are committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def skill(settings):
    settings.AGENT_MAX_ITERATIONS = 3
    publish("sql-query", description="Writes SQL queries.")


def console(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    return response.content.decode()


def figure(page: str, element_id: str) -> int:
    found = re.search(rf'id="{element_id}"[^>]*>(\d+)<', page)
    assert found, f"#{element_id} not on the page"
    return int(found.group(1))


def test_the_list_shows_analysts_every_turn_and_authors_their_own():
    author, other = user_with_role(AUTHOR), user_with_role(AUTHOR)
    mine = run_turn(author, SUCCEEDS, message="mine: monthly revenue")
    theirs = run_turn(other, ABORTS, message="theirs: churn by cohort")

    for role in (ANALYST, ADMIN):
        page = text(console(user_with_role(role)).get("/turns/"))
        assert "mine: monthly revenue" in page and "theirs: churn by cohort" in page
        assert figure(page, "turn-total") == 2
    page = text(console(author).get("/turns/"))
    assert "mine: monthly revenue" in page and "theirs: churn by cohort" not in page
    assert f"/turns/{mine.pk}/" in page

    analyst = console(user_with_role(ANALYST))
    detail = analyst.get(f"/turns/{theirs.pk}/")
    assert detail.status_code == 200
    assert console(author).get(f"/turns/{theirs.pk}/").status_code == 404
    assert console(author).get("/turns/not-a-uuid/").status_code == 404
    assert Client().get("/turns/").status_code == 302


def test_an_empty_list_says_no_turns_yet_only_when_there_are_none_at_all():
    author = user_with_role(AUTHOR)
    page = text(console(author).get("/turns/"))
    assert "No turns yet." in page and "No turn matches" not in page

    run_turn(author, SUCCEEDS)
    page = text(console(author).get("/turns/?from=2000-01-01&to=2000-01-31"))
    assert "No turn matches these filters." in page and "No turns yet." not in page


def test_a_role_that_reads_no_turns_is_refused():
    nobody = user_with_role(ANALYST)
    nobody.groups.clear()
    assert console(nobody).get("/turns/").status_code == 403


def test_the_filters_their_counts_and_the_causes():
    author = user_with_role(AUTHOR)
    ok = run_turn(author, SUCCEEDS, origin=TurnOrigin.PLAYGROUND)
    services.agent_turn_feedback(turn=ok, rating="down", comment="used the wrong table")
    run_turn(author, ABORTS)
    run_turn(author, ABORTS)
    run_turn(author, TOOL_FAILS)
    analyst = console(user_with_role(ANALYST))

    page = text(analyst.get("/turns/"))
    assert re.search(r'data-status="failed">failed <span class="count">3</span>', page)
    assert re.search(r'data-status="succeeded">succeeded <span class="count">1</span>', page)
    assert "Playground (1)" not in page and "playground (1)" in page
    assert "✗ bad (1)" in page
    causes = re.findall(r'data-cause="(\w+)"><a href="([^"]+)">.*?<span class="count">(\d+)</span>', page)
    assert [(cause, int(count)) for cause, _, count in causes] == [("aborted", 2), ("tool_error", 1)]

    # A cause is one click from its turns.
    aborted_href = html.unescape(causes[0][1])
    assert figure(text(analyst.get(f"/turns/{aborted_href}")), "turn-total") == 2
    failed = text(analyst.get("/turns/?status=failed&skill=sql-query"))
    assert figure(failed, "turn-total") == 2  # the tool-error turn never loaded the skill
    feedback = text(analyst.get("/turns/?feedback=down"))
    assert figure(feedback, "turn-total") == 1 and "used the wrong table" in feedback


def test_a_bad_filter_is_named_and_the_others_still_apply():
    author = user_with_role(AUTHOR)
    run_turn(author, SUCCEEDS)
    response = console(author).get("/turns/?status=exploded&skill=sql-query")
    assert response.status_code == 400
    page = text(response)
    assert 'data-field="status"' in page
    assert figure(page, "turn-total") == 1


def test_a_turn_page_shows_its_trace_skills_rules_feedback_cost_and_timing():
    author = user_with_role(AUTHOR)
    turn = run_turn(author, SUCCEEDS)
    services.agent_turn_feedback(turn=turn, rating="down", comment="too slow")

    page = text(console(user_with_role(ANALYST)).get(f"/turns/{turn.pk}/"))

    assert 'data-type="llm_call"' in page and 'data-type="skill_activated"' in page
    assert 'href="/skills/sql-query/?version=1"' in page
    assert "too slow" in page
    assert 'id="turn-duration"' in page and "Cost" in page
    assert "Here is the query." in page


# --- every analytics count links to its turns ----------------------------------------------


def outside_events() -> None:
    """What an agent outside the registry reported for sql-query v1 through POST /usage."""
    events = [UsageEventInput(f"outside-f{i}", "failed", "sql-query", 1, trigger="read_skill") for i in range(3)]
    events += [UsageEventInput(f"outside-s{i}", "succeeded", "sql-query", 1, trigger="read_skill") for i in range(2)]
    events += [UsageEventInput(f"outside-l{i}", "loaded", "sql-query", 1, trigger="read_skill") for i in range(5)]
    events += [UsageEventInput("outside-d", "feedback", "sql-query", 1, rating=-1)]
    usage_record(events=events)


def linked_counts(page: str) -> list[tuple[str, int]]:
    """Every link to the turn list on an analytics page, with the number it shows."""
    links = [
        (html.unescape(href), int(n)) for href, n in re.findall(r'<a[^>]*href="(/turns/\?[^"]+)"[^>]*>(\d+)</a>', page)
    ]
    # The funnel's bars: the number is in the link's title.
    links += [
        (html.unescape(href), int(n))
        for href, n in re.findall(r'<a href="(/turns/\?[^"]+)" data-step="\w+"><title>The turns behind (\d+) ', page)
    ]
    return links


def test_each_analytics_count_equals_the_total_of_the_list_it_links_to():
    author = user_with_role(AUTHOR)
    for _ in range(2):
        run_turn(author, SUCCEEDS)
    failed = run_turn(author, ABORTS)
    run_turn(author, ABORTS)
    services.agent_turn_feedback(turn=failed, rating="down", comment="gave up")
    publish("sql-query", description="Writes SQL queries, v2.")
    run_turn(author, SUCCEEDS)
    run_turn(author, ABORTS)
    outside_events()
    analyst = console(user_with_role(ANALYST))

    checked = 0
    for analytics_page in ("/analytics/", "/analytics/skills/sql-query/"):
        page = text(analyst.get(analytics_page))
        links = linked_counts(page)
        assert links, f"no count on {analytics_page} links to its turns"
        for href, count in links:
            listed = text(analyst.get(href))
            turns, outside = figure(listed, "turn-total"), figure(listed, "drill-count") - figure(listed, "drill-turns")
            assert figure(listed, "drill-count") == count, href
            assert turns + outside == count, href
            checked += 1
    # the overview's rate, n and loads; the skill page's n, failures, loads, each version's n,
    # succeeded, failed, loaded, feedback up and down, the trigger row and four funnel steps
    assert checked >= 20
    # The outside agent's events are named as such on the list of v1's failures.
    v1_failed = text(analyst.get("/turns/?skill=sql-query&version=1&event=failed"))
    assert figure(v1_failed, "turn-total") == 2 and figure(v1_failed, "drill-outside") == 3


def test_a_name_in_two_sources_links_each_skills_counts_to_its_own_turns():
    """A workspace skill shadowing the user one has analytics of its own; each count links to the
    turns behind it, not to the other skill's of the same name."""
    author = user_with_role(AUTHOR)
    run_turn(author, SUCCEEDS)
    run_turn(author, ABORTS)  # the user skill's history: 1 succeeded, 1 failed
    publish("sql-query", source="workspace", description="Writes SQL queries, the workspace's way.")
    for _ in range(3):
        run_turn(author, SUCCEEDS)  # the workspace skill's: 3 succeeded
    analyst = console(user_with_role(ANALYST))

    checked = 0
    for source, outcomes in (("user", 2), ("workspace", 3)):
        page = text(analyst.get(f"/analytics/skills/sql-query/?source={source}"))
        assert figure(page, "overall-n") == outcomes
        for href, count in linked_counts(page):
            assert f"source={source}" in href, href
            listed = text(analyst.get(href))
            assert figure(listed, "drill-count") == count == figure(listed, "turn-total"), href
            checked += 1
    assert checked >= 8
    overview = text(analyst.get("/analytics/"))
    assert {href for href, _ in linked_counts(overview) if "source=workspace" in href}
    assert {href for href, _ in linked_counts(overview) if "source=user" in href}
