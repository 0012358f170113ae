"""`POST /usage` (idempotent batches) and `GET /analytics/skills` (JSON and CSV)."""

from __future__ import annotations

import csv
import io

import pytest

from registry.models import UsageEvent

pytestmark = pytest.mark.django_db


def events(*specs):
    return {
        "events": [
            {"event_id": eid, "kind": kind, "skill": skill, "version": version, **extra}
            for eid, kind, skill, version, extra in specs
        ]
    }


def test_a_batch_is_accepted_and_resending_it_never_double_counts(api):
    batch = events(
        ("e1", "loaded", "pdf", 1, {}),
        ("e2", "succeeded", "pdf", 1, {}),
        ("e3", "feedback", "pdf", 1, {"rating": "up"}),
    )

    first = api.post("/api/v1/usage", batch, format="json")
    again = api.post("/api/v1/usage", batch, format="json")

    assert first.status_code == 200 and first.json()["accepted"] == 3 and first.json()["duplicates"] == 0
    assert again.status_code == 200 and again.json()["accepted"] == 0 and again.json()["duplicates"] == 3
    assert UsageEvent.objects.count() == 3
    assert UsageEvent.objects.get(event_id="e3").rating == 1


def test_a_partly_new_batch_counts_only_the_new_events(api):
    api.post("/api/v1/usage", events(("a", "loaded", "pdf", 1, {})), format="json")
    response = api.post(
        "/api/v1/usage",
        events(("a", "loaded", "pdf", 1, {}), ("b", "failed", "pdf", 1, {}), ("b", "failed", "pdf", 1, {})),
        format="json",
    )
    assert response.json()["accepted"] == 1 and response.json()["duplicates"] == 2
    assert UsageEvent.objects.count() == 2


def test_unknown_kinds_and_bad_events_are_400_and_nothing_is_written(api):
    response = api.post(
        "/api/v1/usage", events(("ok", "loaded", "pdf", 1, {}), ("bad", "exploded", "pdf", 1, {})), format="json"
    )
    assert response.status_code == 400
    assert "events" in response.json()["fields"]
    assert not UsageEvent.objects.exists()
    assert api.post("/api/v1/usage", {"events": []}, format="json").status_code == 400
    assert api.post("/api/v1/usage", events(("f", "feedback", "pdf", 1, {})), format="json").status_code == 400
    assert api.post("/api/v1/usage", events(("v", "loaded", "pdf", 0, {})), format="json").status_code == 400


def test_a_bare_list_of_events_is_accepted(api):
    body = events(("x1", "offered", "pdf", 1, {}))["events"]
    assert api.post("/api/v1/usage", body, format="json").json()["accepted"] == 1


def seed_outcomes(api, skill, version, succeeded, failed, day="2026-03-10"):
    at = {"at": f"{day}T12:00:00Z"}
    specs = [(f"{skill}-{version}-s{i}", "succeeded", skill, version, at) for i in range(succeeded)]
    specs += [(f"{skill}-{version}-f{i}", "failed", skill, version, {"at": f"{day}T12:00:00Z"}) for i in range(failed)]
    api.post("/api/v1/usage", events(*specs), format="json")


def test_analytics_gives_success_rate_with_wilson_interval_and_n(api):
    seed_outcomes(api, "pdf", 1, succeeded=8, failed=2)

    row = api.get("/api/v1/analytics/skills").json()["skills"][0]

    assert (row["skill"], row["succeeded"], row["failed"], row["n"]) == ("pdf", 8, 2, 10)
    assert row["success_rate"] == 0.8
    assert row["ci_low"] == pytest.approx(0.4902, abs=1e-3) and row["ci_high"] == pytest.approx(0.9433, abs=1e-3)


def test_analytics_filters_by_date_range_version_and_label(api):
    from tests.factories import publish

    publish("pdf")
    publish("pdf", description="Second version.")
    api.put("/api/v1/skills/pdf/labels/production", {"version": 2}, format="json")
    seed_outcomes(api, "pdf", 1, succeeded=1, failed=3, day="2026-03-01")
    seed_outcomes(api, "pdf", 2, succeeded=5, failed=0, day="2026-03-20")

    def rows(**params):
        return api.get("/api/v1/analytics/skills", params).json()["skills"]

    assert rows()[0]["n"] == 9
    assert rows(**{"from": "2026-03-10"})[0]["n"] == 5
    assert rows(to="2026-03-10")[0]["n"] == 4
    assert rows(version=1)[0]["succeeded"] == 1
    assert [(r["version"], r["n"]) for r in rows(label="production")] == [(2, 5)]
    assert [(r["version"], r["n"]) for r in rows(by_version="true")] == [(1, 4), (2, 5)]
    assert api.get("/api/v1/analytics/skills", {"from": "2026-03-20", "to": "2026-03-01"}).status_code == 400
    assert api.get("/api/v1/analytics/skills", {"from": "yesterday"}).status_code == 400


def test_analytics_as_csv_by_format_or_accept(api):
    seed_outcomes(api, "pdf", 1, succeeded=1, failed=1)

    by_param = api.get("/api/v1/analytics/skills", {"format": "csv"})
    by_accept = api.get("/api/v1/analytics/skills", HTTP_ACCEPT="text/csv")

    for response in (by_param, by_accept):
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert table[0]["skill"] == "pdf" and table[0]["n"] == "2" and table[0]["success_rate"] == "0.5"


def test_analytics_with_no_outcomes_has_no_rate(api):
    api.post("/api/v1/usage", events(("o", "offered", "pdf", 1, {})), format="json")
    row = api.get("/api/v1/analytics/skills").json()["skills"][0]
    assert row["offered"] == 1 and row["n"] == 0 and row["success_rate"] is None and row["ci_low"] is None
