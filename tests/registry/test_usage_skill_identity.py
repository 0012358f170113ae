"""Usage belongs to one skill (name and source), never to whichever skill holds the name now; and an
outcome carries the trigger and model of the load it follows, so every breakdown adds up."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.turns import services as agent_services
from registry.models import DailyRollup, HourlyRollup, UsageEvent, WeeklyRollup
from registry.selectors.analytics import (
    AnalyticsFilter,
    skill_analytics,
    skill_timeseries,
    skill_versions_compare,
    skills_overview,
)
from registry.services.usage import UsageEventInput, usage_offers_roll_up, usage_record, usage_rollups_rebuild
from tests.factories import UserFactory, publish

pytestmark = pytest.mark.django_db


def outcomes(prefix: str, succeeded: int, failed: int) -> list[UsageEventInput]:
    """What an external agent sends for one skill: a load, then outcomes that name only the skill."""
    events = [UsageEventInput(f"{prefix}-load", "loaded", "code-review", 1, trigger="read_skill", model="m1")]
    events += [UsageEventInput(f"{prefix}-ok-{i}", "succeeded", "code-review", 1) for i in range(succeeded)]
    events += [UsageEventInput(f"{prefix}-bad-{i}", "failed", "code-review", 1) for i in range(failed)]
    return events


def analyst_client(client):
    user = UserFactory()
    user.groups.add(Group.objects.get_or_create(name="analyst")[0])
    client.force_login(user)
    return client


def test_a_workspace_skill_shadowing_a_bundled_one_starts_with_no_history(client):
    publish("code-review", source="bundled", description="Reviews code for bugs when asked.")
    usage_record(events=outcomes("before", succeeded=7, failed=3))
    # A changed code-review imported from a project: it now wins the name, at its own version 1.
    publish("code-review", source="workspace", description="Reviews code the way this project does.")

    bundled = AnalyticsFilter(skill="code-review", skill_source="bundled")
    workspace = AnalyticsFilter(skill="code-review", skill_source="workspace")
    assert [(s.source, s.n) for s in skill_analytics(filters=bundled)] == [("bundled", 10)]
    assert skill_analytics(filters=workspace) == []
    # One skill's series and comparison default to the skill the name resolves to: the workspace one.
    assert sum(p.n for p in skill_timeseries(name="code-review")) == 0
    assert skill_versions_compare(name="code-review", a=1, b=1, filters=bundled).a.n == 10

    page = analyst_client(client).get("/analytics/skills/code-review/").content.decode()
    assert overall_n(page) == "0"
    assert "source=bundled" in page  # the bundled skill's own page is linked, not merged in
    bundled_page = client.get("/analytics/skills/code-review/?source=bundled").content.decode()
    assert overall_n(bundled_page) == "10" and "70%" in bundled_page
    skill_page = client.get("/skills/code-review/").content.decode()
    assert "n = 10" not in skill_page and "70%" not in skill_page
    assert "n = 10" in client.get("/skills/code-review/?source=bundled").content.decode()

    # Events sent by name from now on are the workspace skill's; the overview lists both by name.
    usage_record(events=outcomes("after", succeeded=1, failed=1))
    assert [(s.source, s.n) for s in skill_analytics(filters=workspace)] == [("workspace", 2)]
    assert [(s.source, s.n) for s in skill_analytics(filters=bundled)] == [("bundled", 10)]
    overview = skills_overview(filters=AnalyticsFilter())
    assert [(s.skill, s.source, s.n) for s in overview.stats] == [
        ("code-review", "bundled", 10),
        ("code-review", "workspace", 2),
    ]
    assert set(overview.sparklines) == {("code-review", "bundled"), ("code-review", "workspace")}


def test_a_client_may_name_the_source_and_a_name_no_skill_has_keeps_none(api):
    publish("code-review", source="bundled")
    publish("code-review", source="workspace")
    batch = {
        "events": [
            {"event_id": "a", "kind": "succeeded", "skill": "code-review", "version": 1, "source": "bundled"},
            {"event_id": "b", "kind": "succeeded", "skill": "code-review", "version": 1},
            {"event_id": "c", "kind": "succeeded", "skill": "not-in-registry", "version": 1},
        ]
    }
    assert api.post("/api/v1/usage", batch, format="json").status_code == 200
    assert dict(UsageEvent.objects.values_list("event_id", "skill_source")) == {
        "a": "bundled",
        "b": "workspace",
        "c": "",
    }
    rows = api.get("/api/v1/analytics/skills?skill=code-review").json()["skills"]
    assert [(row["source"], row["n"]) for row in rows] == [("bundled", 1), ("workspace", 1)]
    only = api.get("/api/v1/analytics/skills?skill=code-review&source=bundled").json()["skills"]
    assert [(row["source"], row["n"]) for row in only] == [("bundled", 1)]

    bad = api.post(
        "/api/v1/usage",
        {"events": [{"event_id": "d", "kind": "loaded", "skill": "code-review", "source": "elsewhere"}]},
        format="json",
    )
    assert bad.status_code == 400 and "source" in str(bad.json())
    assert api.get("/api/v1/analytics/skills?source=elsewhere").status_code == 400


def test_outcomes_sent_without_trigger_or_model_take_those_of_their_load(api):
    batch = {
        "client_id": "ci-agent",
        "events": [
            {"event_id": "l1", "kind": "loaded", "skill": "pdf", "trigger": "read_skill", "model": "m1"},
            {"event_id": "s1", "kind": "succeeded", "skill": "pdf"},
            {"event_id": "l2", "kind": "loaded", "skill": "pdf", "trigger": "forced", "model": "m2"},
            {"event_id": "f2", "kind": "failed", "skill": "pdf"},
            {"event_id": "u2", "kind": "feedback", "skill": "pdf", "rating": "up"},
            {"event_id": "s3", "kind": "succeeded", "skill": "pdf", "trigger": "task_match", "model": "m3"},
            # another client's outcome in the same batch follows no load of its own
            {"event_id": "x1", "kind": "failed", "skill": "pdf", "client_id": "other"},
        ],
    }
    assert api.post("/api/v1/usage", batch, format="json").status_code == 200
    stored = {e: (t, m) for e, t, m in UsageEvent.objects.values_list("event_id", "trigger", "model")}
    assert stored["s1"] == ("read_skill", "m1")
    assert stored["f2"] == stored["u2"] == ("forced", "m2")
    assert stored["s3"] == ("task_match", "m3")  # what an event says is kept
    assert stored["x1"] == ("", "")
    by_trigger = {s.group["trigger"]: s.n for s in skill_analytics(by="trigger")}
    assert by_trigger == {"read_skill": 1, "forced": 1, "task_match": 1, "": 1}


KINDS = st.sampled_from(["loaded", "succeeded", "failed", "feedback", "executed"])
EVENT = st.tuples(
    KINDS,
    st.sampled_from(["pdf", "docx"]),
    st.sampled_from(["", "read_skill", "forced"]),
    st.sampled_from(["", "m1", "m2"]),
    st.sampled_from(["a", "b"]),  # client
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(EVENT, min_size=1, max_size=12), min_size=1, max_size=4))
def test_every_breakdown_adds_up_to_the_skill_and_an_outcome_after_a_load_is_never_unattributed(batches):
    UsageEvent.objects.all().delete()
    for rollup in (HourlyRollup, DailyRollup, WeeklyRollup):
        rollup.objects.all().delete()
    for number, batch in enumerate(batches):
        events = [
            UsageEventInput(
                f"{number}-{i}",
                kind,
                skill,
                1,
                trigger=trigger if kind == "loaded" else "",
                model=model,
                client_id=client,
                rating=1 if kind == "feedback" else None,
            )
            for i, (kind, skill, trigger, model, client) in enumerate(batch)
        ]
        usage_record(events=events)

    for skill in skill_analytics():
        one = AnalyticsFilter(skill=skill.skill, skill_source=skill.source)
        for by in ("trigger", "model"):
            rows = skill_analytics(filters=one, by=by)
            for counter in ("n", "succeeded", "failed", "feedback_up", "executed", "loaded"):
                assert sum(getattr(r, counter) for r in rows) == getattr(skill, counter), (by, counter)
    # What follows a load of its skill by its client in its batch takes the nearest earlier load's
    # trigger and model (else the first later load's); with no such load it keeps what it said.
    for number, batch in enumerate(batches):
        for i, (kind, skill, _, model, client) in enumerate(batch):
            if kind == "loaded":
                continue
            loads = [
                (j, e[2], e[3]) for j, e in enumerate(batch) if e[0] == "loaded" and e[1:2] + e[4:] == (skill, client)
            ]
            earlier = [load for load in loads if load[0] < i]
            load = earlier[-1] if earlier else (loads[0] if loads else (None, "", ""))
            stored = UsageEvent.objects.get(event_id=f"{number}-{i}")
            assert (stored.trigger, stored.model) == (load[1], model or load[2])


@pytest.mark.django_db(transaction=True)  # the turn's lease keeper reads the turn from its own thread
def test_a_runtime_turn_records_the_skill_it_loaded_and_feedback_carries_its_trigger(settings):
    settings.AGENT_ALLOW_SCRIPTED = True
    publish("code-review", source="bundled", description="Reviews code for bugs when asked.")
    publish("code-review", source="workspace", description="Reviews code the way this project does.")
    read = {"name": "read_skill", "arguments": {"skill_name": "code-review"}}
    script = [{"content": None, "tool_calls": [read]}, {"content": "Reviewed."}]
    user = UserFactory()
    turn = agent_services.agent_turn_create(user=user, message="review my code", model="scripted", script=script)
    claimed = agent_services.agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None
    result = agent_services.agent_turn_run(claimed=claimed)  # as the worker runs it, finish included

    events = UsageEvent.objects.filter(turn=turn, offered_skills__isnull=True)
    assert {(e.kind, e.skill_source, e.trigger) for e in events} >= {
        ("loaded", "workspace", "read_skill"),
        (result.status, "workspace", "read_skill"),
    }
    offer = UsageEvent.objects.get(turn=turn, kind="offered")
    assert offer.offered_skills == [["code-review", 1, "workspace"]]

    turn.refresh_from_db()
    agent_services.agent_turn_feedback(turn=turn, rating="up")
    feedback = UsageEvent.objects.get(turn=turn, kind="feedback")
    assert (feedback.skill_source, feedback.trigger, feedback.model) == ("workspace", "read_skill", "scripted")
    workspace = AnalyticsFilter(skill="code-review", skill_source="workspace")
    by_trigger = skill_analytics(filters=workspace, by="trigger")
    assert {s.group["trigger"]: (s.n, s.feedback_up) for s in by_trigger if s.n or s.feedback_up} == {
        "read_skill": (1, 1)
    }
    assert skill_analytics(filters=AnalyticsFilter(skill="code-review", skill_source="bundled")) == []


def rollup_rows() -> dict:
    return {
        rollup.__name__: sorted(
            rollup.objects.values_list("skill_name", "skill_source", "bucket", "version", "offered", "succeeded")
        )
        for rollup in (HourlyRollup, DailyRollup, WeeklyRollup)
    }


def test_analytics_rebuild_recounts_each_skill_apart():
    publish("code-review", source="bundled")
    usage_record(events=outcomes("before", succeeded=2, failed=1))
    publish("code-review", source="workspace")
    usage_record(events=outcomes("after", succeeded=1, failed=0))
    offer = (("code-review", 1, "workspace"), ("code-review", 1, "bundled"), ("ghost", None, ""))
    usage_record(events=[UsageEventInput("turn:offered", "offered", "", offered_skills=offer)])
    usage_offers_roll_up()
    counted = rollup_rows()
    assert {row[1] for row in counted["WeeklyRollup"]} == {"bundled", "workspace", ""}

    HourlyRollup.objects.update(succeeded=0)  # damaged rollups
    WeeklyRollup.objects.all().delete()
    usage_rollups_rebuild()
    assert rollup_rows() == counted


def overall_n(page: str) -> str:
    """The skill page's outcome count (a link to its turns, or plain text when there are none)."""
    return re.search(r'id="overall-n"[^>]*>([^<]*)<', page).group(1)
