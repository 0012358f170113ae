"""Analytics: success rate = succeeded / (succeeded + failed) with a 95% Wilson interval and n."""

from __future__ import annotations

import datetime as dt

import pytest

from registry.models import UsageEvent
from registry.services.analytics import skill_analytics, wilson_interval

pytestmark = pytest.mark.django_db


def test_wilson_interval_matches_known_values():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    low, high = wilson_interval(0, 5)
    assert low == 0.0 and high == pytest.approx(0.4345, abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_counts_per_kind_and_feedback_split():
    at = dt.datetime(2026, 1, 5, 12, tzinfo=dt.UTC)
    for i, (kind, rating) in enumerate(
        [
            ("offered", None),
            ("loaded", None),
            ("executed", None),
            ("succeeded", None),
            ("failed", None),
            ("failed", None),
            ("feedback", 1),
            ("feedback", -1),
        ]
    ):
        UsageEvent.objects.create(event_id=f"e{i}", kind=kind, skill_name="pdf", version=1, rating=rating, at=at)

    (row,) = skill_analytics()

    assert (row.offered, row.loaded, row.executed, row.succeeded, row.failed) == (1, 1, 1, 1, 2)
    assert (row.feedback_up, row.feedback_down, row.n) == (1, 1, 3)
    assert row.success_rate == pytest.approx(1 / 3)
    assert skill_analytics(date_from=dt.date(2026, 1, 6)) == []
    assert len(skill_analytics(date_from=dt.date(2026, 1, 5), date_to=dt.date(2026, 1, 5))) == 1
