"""POST /usage validates plain batches in one pass instead of through the serializer: every
batch that path accepts must be one the serializer accepts, with the same values."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from registry.api import serializers as s
from registry.api.usage import plain_batch

texts = st.one_of(
    st.sampled_from(["pdf", "read_skill", "", " padded ", "x" * 101, "x" * 129, "a\x00b", "\ud800", "ünï"]),
    st.text(max_size=12),
    st.integers(),
    st.none(),
)
numbers = st.one_of(
    st.none(),
    st.integers(-5, 2**31 + 5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=3),
)
moments = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2026-03-10T12:00:00Z",
            "2026-03-10T12:00:00",
            "2026-02-30T00:00:00Z",
            "2999-12-31T23:00:00-05:00",
            "9999-12-31T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "yesterday",
            "2026-03-10",
        ]
    ),
    st.datetimes(min_value=dt.datetime(1960, 1, 1), max_value=dt.datetime(3010, 1, 1)).map(lambda d: d.isoformat()),
    st.integers(),
)
events = st.dictionaries(
    keys=st.sampled_from(
        [
            "event_id",
            "kind",
            "skill",
            "version",
            "trigger",
            "label",
            "model",
            "client_id",
            "duration_ms",
            "tokens",
            "cost",
            "rating",
            "at",
            "colour",
        ]
    ),
    values=st.deferred(
        lambda: st.one_of(texts, numbers, moments, st.sampled_from(["loaded", "feedback", "up", "down", 1, -1, "+1"]))
    ),
).map(lambda e: {"event_id": "e", "kind": "loaded", "skill": "pdf"} | e)


@settings(max_examples=400, deadline=None)
@given(batch=st.lists(events, min_size=0, max_size=3), client_id=st.one_of(texts, st.just("")))
def test_a_batch_the_fast_path_accepts_is_one_the_serializer_accepts_with_the_same_values(batch, client_id):
    data = {"events": batch, "client_id": client_id}
    fast = plain_batch(data)
    if fast is None:
        return
    serializer = s.UsageBatchInputSerializer(data=data)
    assert serializer.is_valid(), serializer.errors
    assert fast["client_id"] == serializer.validated_data.get("client_id", "")
    for mine, theirs in zip(fast["events"], serializer.validated_data["events"], strict=True):
        for name in s.UsageEventInputSerializer().fields:
            assert mine.get(name) == theirs.get(name), name


def test_plain_batches_do_take_the_fast_path():
    event = {
        "event_id": "e1",
        "kind": "feedback",
        "skill": "pdf",
        "version": 2,
        "rating": "up",
        "at": "2026-03-10T12:00:00Z",
    }
    fast = plain_batch({"events": [event, {**event, "event_id": "e2", "kind": "loaded", "cost": 1}]})
    assert fast is not None and fast["events"][0]["rating"] == 1 and fast["events"][1]["cost"] == 1.0
    assert fast["events"][0]["at"] == dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
    assert plain_batch({"events": [{**event, "rating": None}]}) is None  # the serializer explains it
