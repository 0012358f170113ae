"""Usage service: idempotent by event id, kinds validated, one audit row per batch."""

from __future__ import annotations

import pytest

from registry.errors import ApplicationError
from registry.models import AuditLog, UsageEvent
from registry.services.usage import UsageEventInput, usage_record

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
