"""Usage service: idempotent by event id, kinds validated, one audit row per batch; a turn's
compact offer row queued on write and counted by the next read."""

from __future__ import annotations

import pytest

from registry.errors import ApplicationError
from registry.models import AuditLog, HourlyRollup, QueuedOffer, UsageEvent
from registry.selectors.analytics import AnalyticsFilter, skill_analytics, skills_overview, usage_funnel
from registry.services.usage import UsageEventInput, usage_offers_roll_up, usage_record

pytestmark = pytest.mark.django_db


def event(event_id: str, kind: str = "loaded") -> UsageEventInput:
    return UsageEventInput(event_id=event_id, kind=kind, skill="pdf", version=1)


def test_a_repeated_batch_is_counted_once():
    first = usage_record(events=[event("a"), event("b")])
    again = usage_record(events=[event("a"), event("b"), event("c")])
    assert (first.accepted, first.duplicates) == (2, 0)
    assert (again.accepted, again.duplicates, again.duplicate_ids) == (1, 2, ("a", "b"))
    assert UsageEvent.objects.count() == 3
    assert AuditLog.objects.filter(action="usage.record").count() == 2


def test_an_id_repeated_inside_one_batch_counts_once():
    result = usage_record(events=[event("x"), event("x", kind="failed")])
    assert (result.accepted, result.duplicates) == (1, 1)
    assert UsageEvent.objects.get().kind == "loaded"


def test_unknown_kinds_are_refused_before_anything_is_written():
    with pytest.raises(ApplicationError) as caught:
        usage_record(events=[event("ok"), event("bad", kind="exploded")])
    assert "events[1].kind" in caught.value.fields
    assert not UsageEvent.objects.exists()


def test_a_turns_offer_row_is_queued_on_write_and_the_next_roll_up_counts_it():
    listed = (("pdf", 1), ("xlsx", None))
    offer = UsageEventInput(event_id="t1:offered:list", kind="offered", skill="", offered_skills=listed)
    usage_record(events=[offer, event("t1:loaded")], source="runtime", audit=False)

    # The turn's finish counted its plain events; its offer list waits in the queue.
    assert QueuedOffer.objects.count() == 1
    assert sorted(HourlyRollup.objects.values_list("skill_name", "offered", "loaded")) == [("pdf", 0, 1)]

    assert usage_funnel()["offered"] == 0  # a read only reads
    assert QueuedOffer.objects.count() == 1
    assert usage_offers_roll_up() == 1  # what an analytics view runs before it reads
    assert usage_funnel()["offered"] == 2
    assert not QueuedOffer.objects.exists()
    assert {(row.skill, row.offered, row.loaded) for row in skill_analytics()} == {("pdf", 1, 1), ("xlsx", 1, 0)}
    assert usage_offers_roll_up() == 0  # nothing left to count twice

    usage_record(events=[UsageEventInput(event_id="t2:offered:list", kind="offered", skill="", offered_skills=listed)])
    usage_offers_roll_up()
    overview = skills_overview(filters=AnalyticsFilter())  # the overview page's one raw-SQL read
    assert {row.skill: row.offered for row in overview.stats} == {"pdf": 2, "xlsx": 2}
