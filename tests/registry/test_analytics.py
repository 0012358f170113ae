"""Analytics: counts, rates, Wilson and Newcombe intervals and the Bayesian probability, checked
against values worked out by hand (or published), and rollups checked against the raw events."""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter, defaultdict

import pytest
from django.core.management import call_command
from django.db import IntegrityError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.errors import ApplicationError
from registry.models import DailyRollup, HourlyRollup, QueuedOffer, UsageEvent, WeeklyRollup
from registry.selectors.analytics import (
    AnalyticsFilter,
    SkillStats,
    best_first,
    failing_first,
    funnel_of,
    more_outcomes_to_decide,
    newcombe_difference,
    probability_b_better,
    skill_analytics,
    skill_rankings,
    skill_timeseries,
    skill_versions_compare,
    skills_failing,
    skills_overview,
    usage_funnel,
    wilson_interval,
)
from registry.services.usage import (
    COUNT_COLUMNS,
    UsageEventInput,
    usage_feedback_set,
    usage_offers_roll_up,
    usage_record,
    usage_rollups_rebuild,
)

pytestmark = pytest.mark.django_db

NOON = dt.datetime(2026, 1, 5, 12, tzinfo=dt.UTC)


def outcomes(skill: str, version: int, succeeded: int, failed: int, at=NOON, prefix: str = "", **extra):
    """Events for `succeeded` successful and `failed` failed turns of one skill version."""
    prefix = prefix or f"{skill}-{version}-{at:%Y%m%d%H}"
    return [
        UsageEventInput(event_id=f"{prefix}-s{i}", kind="succeeded", skill=skill, version=version, at=at, **extra)
        for i in range(succeeded)
    ] + [
        UsageEventInput(event_id=f"{prefix}-f{i}", kind="failed", skill=skill, version=version, at=at, **extra)
        for i in range(failed)
    ]


# --- the statistics, by hand --------------------------------------------------------------


def test_wilson_interval_matches_known_values():
    # 8/10: p = 0.8, z = 1.96: centre (0.8 + 0.192) / 1.384 = 0.7168, half 0.2265.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    low, high = wilson_interval(0, 5)
    assert low == 0.0 and high == pytest.approx(0.4345, abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_newcombe_interval_matches_newcombes_published_examples():
    # Newcombe (1998), Statistics in Medicine 17:873, Table II, method 10:
    # 56/70 − 48/80 = 0.2000, 95% CI 0.0524 to 0.3339; 9/10 − 3/10 = 0.6000, 0.1705 to 0.8090.
    estimate, low, high = newcombe_difference(48, 80, 56, 70)
    assert (estimate, low, high) == pytest.approx((0.2, 0.0524, 0.3339), abs=1e-4)
    estimate, low, high = newcombe_difference(3, 10, 9, 10)
    assert (estimate, low, high) == pytest.approx((0.6, 0.1705, 0.8090), abs=1e-4)
    assert newcombe_difference(0, 0, 3, 4) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # Beta(1,1) vs Beta(2,1): P(p_b > p_a) = E[p_b] = 2/3.
        ((0, 0), (1, 0), 2 / 3),
        # Beta(2,1) vs Beta(1,2): ∫ 2(1−y) · y² dy = 2(1/3 − 1/4) = 1/6.
        ((1, 0), (0, 1), 1 / 6),
        # Beta(1,2) vs Beta(1,1): P(p_a < p_b) = E[1 − p_a]... = 1 − 1/3 = 2/3.
        ((0, 1), (0, 0), 2 / 3),
        # Identical posteriors: exactly one half.
        ((3, 2), (3, 2), 0.5),
    ],
)
def test_probability_b_better_matches_hand_computed_integrals(a, b, expected):
    assert probability_b_better(*a, *b) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("s_a", "f_a", "s_b", "f_b"), [(24, 16, 45, 11), (5, 30, 2, 3), (100, 7, 40, 1), (0, 9, 7, 0)])
def test_probability_b_better_agrees_with_seeded_posterior_draws(s_a, f_a, s_b, f_b):
    draws = random.Random(20261123)
    n = 100_000
    wins = sum(draws.betavariate(1 + s_b, 1 + f_b) > draws.betavariate(1 + s_a, 1 + f_a) for _ in range(n))
    # 3 standard errors of a proportion estimated from 100,000 draws is at most 0.0048.
    assert probability_b_better(s_a, f_a, s_b, f_b) == pytest.approx(wins / n, abs=0.005)


# --- counting ------------------------------------------------------------------------------


def test_counts_per_kind_and_feedback_split():
    kinds = [("offered", None), ("loaded", None), ("executed", None), ("succeeded", None)]
    kinds += [("failed", None), ("failed", None), ("feedback", 1), ("feedback", -1)]
    usage_record(
        events=[
            UsageEventInput(event_id=f"e{i}", kind=kind, skill="pdf", version=1, rating=rating, at=NOON)
            for i, (kind, rating) in enumerate(kinds)
        ]
    )

    (row,) = skill_analytics()

    assert (row.offered, row.loaded, row.executed, row.succeeded, row.failed) == (1, 1, 1, 1, 2)
    assert (row.feedback_up, row.feedback_down, row.n) == (1, 1, 3)
    assert row.success_rate == pytest.approx(1 / 3)
    assert skill_analytics(filters=AnalyticsFilter(date_from=dt.date(2026, 1, 6))) == []
    assert len(skill_analytics(filters=AnalyticsFilter(date_from=NOON.date(), date_to=NOON.date()))) == 1


def test_duplicates_and_late_events_are_counted_once_in_their_own_bucket():
    usage_record(events=outcomes("pdf", 1, 3, 1, at=NOON))
    # The same batch again, a batch repeating one id inside itself, and an event that arrives
    # today but happened three days ago.
    again = usage_record(events=outcomes("pdf", 1, 3, 1, at=NOON))
    late_at = NOON - dt.timedelta(days=3)
    late = [UsageEventInput(event_id="late-1", kind="failed", skill="pdf", version=1, at=late_at)]
    mixed = usage_record(events=late + late + outcomes("pdf", 1, 1, 0, at=NOON))

    assert (again.accepted, again.duplicates) == (0, 4)
    assert (mixed.accepted, mixed.duplicates) == (1, 2)
    (row,) = skill_analytics()
    assert (row.succeeded, row.failed) == (3, 2)
    daily = {p.bucket.date(): (p.succeeded, p.failed) for p in skill_timeseries(name="pdf") if p.n}
    assert daily == {late_at.date(): (0, 1), NOON.date(): (3, 1)}


def test_a_turn_that_lists_150_skills_stores_one_offer_row_and_counts_each_skill():
    listed = tuple((f"skill-{i:03}", 1 + i % 2) for i in range(150))
    usage_record(events=[UsageEventInput(event_id="t1:offered", kind="offered", skill="", offered_skills=listed)])

    assert UsageEvent.objects.count() == 1
    usage_offers_roll_up()  # as every analytics view does before it reads
    rows = {(r.skill, r.version): r.offered for r in skill_analytics(by_version=True)}
    assert rows == {pair: 1 for pair in listed}
    assert usage_funnel()["offered"] == 150


def test_a_changed_rating_replaces_the_old_one_in_the_rollups():
    usage_record(events=outcomes("pdf", 2, 1, 0))
    vote = dict(event_id="turn-9:feedback:pdf", kind="feedback", skill="pdf", version=2, at=NOON)

    usage_feedback_set(event=UsageEventInput(**vote, rating=1))
    usage_feedback_set(event=UsageEventInput(**vote, rating=1))
    assert [(r.feedback_up, r.feedback_down) for r in skill_analytics()] == [(1, 0)]
    usage_feedback_set(event=UsageEventInput(**vote, rating=-1))
    assert [(r.feedback_up, r.feedback_down) for r in skill_analytics()] == [(0, 1)]


def test_tokens_duration_and_cost_are_summed_per_skill_and_version():
    usage_record(
        events=[
            UsageEventInput(
                event_id="a", kind="succeeded", skill="pdf", version=1, tokens=100, duration_ms=40, cost=0.25
            ),
            UsageEventInput(event_id="b", kind="failed", skill="pdf", version=1, tokens=300, duration_ms=60, cost=0.75),
            UsageEventInput(event_id="c", kind="succeeded", skill="pdf", version=2, tokens=50),
            UsageEventInput(event_id="d", kind="loaded", skill="pdf", version=2),  # reports nothing
        ]
    )
    rows = {r.version: r.as_dict() for r in skill_analytics(by_version=True)}

    assert (rows[1]["tokens"], rows[1]["duration_ms"], rows[1]["cost"]) == (400, 100, 1.0)
    assert (rows[1]["avg_tokens"], rows[1]["avg_duration_ms"], rows[1]["avg_cost"]) == (200, 50, 0.5)
    assert (rows[2]["tokens"], rows[2]["avg_tokens"], rows[2]["avg_cost"]) == (50, 50, 0)


def test_rows_split_by_trigger_model_and_label():
    usage_record(events=outcomes("pdf", 1, 2, 1, prefix="x", trigger="read_skill", model="gpt", label="production"))
    usage_record(events=outcomes("pdf", 1, 0, 3, prefix="y", trigger="forced", model="claude", label="staging"))

    by_trigger = {r.group["trigger"]: (r.succeeded, r.failed) for r in skill_analytics(by="trigger")}
    by_model = {r.group["model"]: r.n for r in skill_analytics(by="model")}
    by_label = {r.group["label"]: r.n for r in skill_analytics(by="label")}

    assert by_trigger == {"read_skill": (2, 1), "forced": (0, 3)}
    assert by_model == {"gpt": 3, "claude": 3}
    assert by_label == {"production": 3, "staging": 3}
    assert [r.n for r in skill_analytics(filters=AnalyticsFilter(model="claude"))] == [3]
    with pytest.raises(ApplicationError):
        skill_analytics(by="colour")


# --- series, comparison, funnel, rankings ---------------------------------------------------


def test_daily_weekly_and_hourly_series_with_empty_buckets():
    monday = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)  # a Monday
    usage_record(events=outcomes("pdf", 1, 3, 1, at=monday))
    usage_record(events=outcomes("pdf", 1, 1, 1, at=monday + dt.timedelta(hours=2)))
    usage_record(events=outcomes("pdf", 1, 0, 2, at=monday + dt.timedelta(days=8)))
    window = AnalyticsFilter(date_from=dt.date(2026, 3, 2), date_to=dt.date(2026, 3, 11))

    days = skill_timeseries(name="pdf", filters=window, interval="day")
    weeks = skill_timeseries(name="pdf", filters=window, interval="week")
    hours = skill_timeseries(
        name="pdf", filters=AnalyticsFilter(date_from=dt.date(2026, 3, 2), date_to=dt.date(2026, 3, 2)), interval="hour"
    )

    assert len(days) == 10 and days[0].as_dict()["bucket"] == "2026-03-02T00:00:00Z"
    assert [(p.succeeded, p.failed) for p in days if p.n] == [(4, 2), (0, 2)]
    assert days[1].as_dict()["success_rate"] is None
    first = days[0].as_dict()
    assert first["success_rate"] == pytest.approx(4 / 6, abs=1e-4)
    assert (first["ci_low"], first["ci_high"]) == pytest.approx(wilson_interval(4, 6), abs=1e-4)
    assert [(p.bucket.date().isoformat(), p.n) for p in weeks] == [("2026-03-02", 6), ("2026-03-09", 2)]
    assert len(hours) == 24 and (hours[9].n, hours[11].n, hours[10].n) == (4, 2, 0)


def test_an_hourly_series_over_years_is_refused_with_a_reason():
    with pytest.raises(ApplicationError, match="more than"):
        skill_timeseries(
            name="pdf",
            filters=AnalyticsFilter(date_from=dt.date(2020, 1, 1), date_to=dt.date(2026, 1, 1)),
            interval="hour",
        )


def test_version_comparison_in_numbers_and_words():
    usage_record(events=outcomes("pdf", 1, 48, 32))
    usage_record(events=outcomes("pdf", 2, 56, 14))

    comparison = skill_versions_compare(name="pdf", a=1, b=2)

    assert (comparison.a.n, comparison.b.n) == (80, 70)
    assert comparison.difference == pytest.approx((0.2, 0.0524, 0.3339), abs=1e-4)
    assert comparison.probability_b_better == pytest.approx(probability_b_better(48, 32, 56, 14))
    assert comparison.probability_b_better > 0.99
    assert comparison.summary() == "v2 beats v1 with >99% probability; +20 points [+5, +33], n = 80 and 70"
    reverse = skill_versions_compare(name="pdf", a=2, b=1).summary()
    assert reverse.startswith("v2 beats v1") and "−20 points [−33, −5]" in reverse


def test_the_funnel_counts_events_for_a_skill_and_range():
    usage_record(
        events=[UsageEventInput(event_id=f"o{i}", kind="offered", skill="pdf", version=1, at=NOON) for i in range(5)]
        + [UsageEventInput(event_id=f"l{i}", kind="loaded", skill="pdf", version=1, at=NOON) for i in range(3)]
        + [UsageEventInput(event_id="x", kind="executed", skill="pdf", version=1, at=NOON)]
        + outcomes("pdf", 1, 2, 1)
        + outcomes("other", 1, 9, 9)
    )
    assert usage_funnel(filters=AnalyticsFilter(skill="pdf")) == {
        "offered": 5,
        "loaded": 3,
        "executed": 1,
        "succeeded": 2,
        "failed": 1,
    }
    assert usage_funnel(filters=AnalyticsFilter(skill="pdf", date_from=dt.date(2026, 2, 1)))["loaded"] == 0


def test_failing_skills_rank_by_the_wilson_upper_bound_with_a_minimum_n():
    usage_record(events=outcomes("flaky", 1, 5, 15))  # upper bound 0.47
    usage_record(events=outcomes("broken", 1, 0, 3))  # rate 0 but n = 3: upper 0.56, below min n
    usage_record(events=outcomes("mostly-bad", 1, 2, 8))  # upper 0.51
    usage_record(events=outcomes("fine", 1, 18, 2))

    assert [s.skill for s in skills_failing(min_n=10)] == ["flaky", "mostly-bad", "fine"]
    assert [s.skill for s in skills_failing(min_n=3)][:2] == ["flaky", "mostly-bad"]
    assert [s.skill for s in best_first(skill_analytics(), min_n=10, limit=10)][0] == "fine"


def test_working_skills_rank_by_the_wilson_lower_bound_equal_bounds_by_name():
    usage_record(events=outcomes("zeta", 1, 18, 2))
    usage_record(events=outcomes("alpha", 1, 18, 2))  # the same counts: the same bounds
    usage_record(events=outcomes("sure", 1, 95, 5))  # a lower rate than 0.9 would rank it no higher
    usage_record(events=outcomes("lucky", 1, 4, 0))  # rate 1 but n = 4: below min n

    table = skill_analytics()
    assert [s.skill for s in best_first(table, min_n=10, limit=10)] == ["sure", "alpha", "zeta"]
    # The dashboard ranks one read of the table both ways.
    assert [s.skill for s in best_first(table, min_n=10, limit=2)] == ["sure", "alpha"]
    assert failing_first(table, min_n=10, limit=2) == skills_failing(min_n=10, limit=2)


def stats(name: str, succeeded: int, failed: int) -> SkillStats:
    return SkillStats(skill=name, version=None, source="user", succeeded=succeeded, failed=failed)


def test_a_skill_that_never_failed_is_never_failing_and_no_skill_is_ranked_twice():
    # The dashboard once listed a lone skill with 5 of 5 under both "working best" and "failing most".
    alone = skill_rankings([stats("steady", 5, 0)])
    assert [s.skill for s in alone.best] == ["steady"] and alone.failing == []
    table = [
        stats("steady", 5, 0),
        stats("shaky", 2, 4),  # upper bound 0.70: failing
        stats("solid", 40, 2),
        stats("fine", 9, 1),  # upper bound 0.98: the lower half of four by upper bound, with a failure
        stats("new", 2, 0),  # below the minimum: not ranked, counted as such
        stats("gone", 0, 0),  # no outcomes at all: not counted
    ]
    rankings = skill_rankings(table, min_n=5, limit=5)
    assert [s.skill for s in rankings.failing] == ["shaky", "fine"]
    # By the lower bound: 40 of 42 (0.84) surely works better than 5 of 5 (0.57).
    assert [s.skill for s in rankings.best] == ["solid", "steady"]
    assert rankings.unranked == 1 and rankings.min_n == 5
    assert not {s.skill for s in rankings.best} & {s.skill for s in rankings.failing}
    assert skill_rankings([stats("bad", 0, 5), stats("worse", 0, 9)]).best == []


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=12))
def test_rankings_are_disjoint_and_failing_skills_have_failures(counts):
    table = [stats(f"s{i}", s, f) for i, (s, f) in enumerate(counts)]
    rankings = skill_rankings(table, min_n=5, limit=50)
    best, failing = {s.skill for s in rankings.best}, {s.skill for s in rankings.failing}
    assert not best & failing
    assert all(s.failed > 0 and s.n >= 5 for s in rankings.failing)
    assert all(s.succeeded > 0 and s.n >= 5 for s in rankings.best)
    assert best | failing == {s.skill for s in table if s.n >= 5 and (s.succeeded or s in rankings.failing)}


def test_below_the_minimum_a_comparison_is_no_verdict_but_how_many_more_turns_decide_it():
    usage_record(events=outcomes("pdf", 2, 2, 2) + outcomes("pdf", 3, 4, 2))  # 50% (n = 4), 67% (n = 6)

    comparison = skill_versions_compare(name="pdf", a=2, b=3)

    assert not comparison.decided
    more = comparison.more_outcomes_needed
    assert more is not None and more > 30
    assert comparison.summary() == (
        "Too few outcomes to compare yet (at least 30 of each version): v3 67% (n = 6), v2 50% (n = 4) so far; "
        f"about {more:,} more outcomes of each version would decide it, if these rates hold"
    )
    assert "beats" not in comparison.summary() and "probability" not in comparison.summary()
    assert comparison.as_dict()["more_outcomes_needed"] == more and comparison.as_dict()["decided"] is False


@pytest.mark.parametrize(("a", "b"), [((2, 4), (4, 6)), ((30, 40), (20, 40)), ((1, 3), (9, 10)), ((45, 50), (40, 50))])
def test_more_outcomes_is_the_fewest_that_decide_at_the_same_rates(a, b):
    more = more_outcomes_to_decide(*a, *b, min_n=30)
    assert more is not None

    def decided(extra: int) -> bool:
        (s_a, n_a), (s_b, n_b) = a, b
        m_a, m_b = n_a + extra, n_b + extra
        _, low, high = newcombe_difference(s_a / n_a * m_a, m_a, s_b / n_b * m_b, m_b)
        return min(m_a, m_b) >= 30 and (low > 0 or high < 0)

    assert decided(more) and (more == 0 or not decided(more - 1))


def test_equal_rates_or_a_version_without_outcomes_decide_at_no_number():
    assert more_outcomes_to_decide(5, 10, 5, 10, min_n=30) is None
    assert more_outcomes_to_decide(5, 10, 0, 0, min_n=30) is None


# --- rollups against raw events ---------------------------------------------------------------


def raw_answer(window: AnalyticsFilter | None = None) -> dict:
    """What the raw events (of the window's days) say per (skill, version): the answer rollups
    must reproduce."""
    counts: dict[tuple[str, int | None], Counter] = defaultdict(Counter)
    for event in UsageEvent.objects.all():
        day = event.at.astimezone(dt.UTC).date()
        if window and ((window.date_from and day < window.date_from) or (window.date_to and day > window.date_to)):
            continue
        targets = event.offered_skills if event.offered_skills else [(event.skill_name, event.version)]
        for name, version, *_ in targets:
            column = (
                event.kind if event.kind != "feedback" else ("feedback_up" if event.rating > 0 else "feedback_down")
            )
            counts[(name, version)][column] += 1
            counts[(name, version)]["tokens"] += event.tokens or 0
    return {key: +value for key, value in counts.items()}


def per_skill(answer: dict) -> dict:
    """A per-(skill, version) answer added up per skill, as tables without versions show it."""
    merged: dict[tuple[str, None], Counter] = defaultdict(Counter)
    for (name, _), counts in answer.items():
        merged[(name, None)] += counts
    return dict(merged)


def raw_outcomes(window: AnalyticsFilter, interval: str) -> dict:
    """Succeeded and failed per (skill, start of the UTC day or ISO week) among the window's days."""
    counts: dict[tuple[str, dt.datetime], list[int]] = defaultdict(lambda: [0, 0])
    for event in UsageEvent.objects.filter(kind__in=["succeeded", "failed"]):
        at = event.at.astimezone(dt.UTC)
        if window.date_from and at.date() < window.date_from or window.date_to and at.date() > window.date_to:
            continue
        day = at.replace(hour=0, minute=0, second=0, microsecond=0)
        bucket = day - dt.timedelta(days=day.weekday()) if interval == "week" else day
        counts[(event.skill_name, bucket)][event.kind == "failed"] += 1
    return {key: tuple(value) for key, value in counts.items()}


def rollup_answer(rows) -> dict:
    columns = ("offered", "loaded", "executed", "succeeded", "failed", "feedback_up", "feedback_down", "tokens")
    return {(r.skill, r.version): +Counter({c: getattr(r, c) for c in columns}) for r in rows}


COUNTS = COUNT_COLUMNS  # every counter of a rollup row
HOURLY_KEY = ("skill_name", "bucket", "version", "label", "trigger", "model", "source")
DAILY_KEY = ("skill_name", "bucket", "version")


def raw_rollups(events=None) -> tuple[dict, dict, dict]:
    """The hourly, daily and weekly rollup rows, worked out here from the raw events alone (all,
    or those given)."""
    hourly: dict[tuple, Counter] = defaultdict(Counter)
    daily: dict[tuple, Counter] = defaultdict(Counter)
    weekly: dict[tuple, Counter] = defaultdict(Counter)
    for event in UsageEvent.objects.all() if events is None else events:
        hour = event.at.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
        monday = hour.replace(hour=0) - dt.timedelta(days=hour.weekday())
        compact = event.kind == "offered" and event.offered_skills
        for name, version, *_ in event.offered_skills if compact else [(event.skill_name, event.version)]:
            column = {1: "feedback_up", -1: "feedback_down"}[event.rating] if event.kind == "feedback" else event.kind
            metered = any(value is not None for value in (event.tokens, event.duration_ms, event.cost))
            for rows, key in (
                (hourly, (name, hour, version or 0, event.label, event.trigger, event.model, event.source)),
                (daily, (name, hour.replace(hour=0), version or 0)),
                (weekly, (name, monday, version or 0)),
            ):
                rows[key][column] += 1
                rows[key]["metered"] += metered
                rows[key]["tokens"] += event.tokens or 0
                rows[key]["duration_ms"] += event.duration_ms or 0
                rows[key]["cost"] += event.cost or 0
    return _as_rows(hourly), _as_rows(daily), _as_rows(weekly)


def _as_rows(counts: dict[tuple, Counter]) -> dict:
    return {key: tuple(round(c[name], 6) for name in COUNTS) for key, c in counts.items()}


def stored_rollups() -> tuple[dict, dict, dict]:
    def rows(model, key):
        return {
            values[: len(key)]: tuple(round(v, 6) for v in values[len(key) :])
            for values in model.objects.values_list(*key, *COUNTS)
        }

    return rows(HourlyRollup, HOURLY_KEY), rows(DailyRollup, DAILY_KEY), rows(WeeklyRollup, DAILY_KEY)


def stored_and_queued_rollups() -> tuple[dict, dict, dict]:
    """The rollup rows as stored, plus what the offers still queued will add to them."""
    queued = raw_rollups(UsageEvent.objects.filter(id__in=QueuedOffer.objects.values("offer_id")))
    merged = []
    for stored, pending in zip(stored_rollups(), queued, strict=True):
        rows = dict(stored)
        for key, values in pending.items():
            rows[key] = tuple(round(a + b, 6) for a, b in zip(rows.get(key, (0,) * len(COUNTS)), values, strict=True))
        merged.append(rows)
    return merged[0], merged[1], merged[2]


event_strategy = st.builds(
    dict,
    event_id=st.integers(0, 40).map(lambda i: f"ev-{i}"),  # a small id space: many duplicates
    kind=st.sampled_from(["offered", "loaded", "executed", "succeeded", "failed", "feedback"]),
    skill=st.sampled_from(["pdf", "xlsx", "web"]),
    version=st.sampled_from([None, 1, 2]),
    trigger=st.sampled_from(["", "read_skill", "forced"]),
    label=st.sampled_from(["", "production"]),
    model=st.sampled_from(["", "gpt", "claude"]),
    # Late and out of order: up to 20 days back, at any minute, in any order within and across batches.
    minutes_ago=st.integers(0, 60 * 24 * 20),
    rating=st.sampled_from([1, -1]),
    tokens=st.one_of(st.none(), st.integers(0, 5000)),
    duration_ms=st.one_of(st.none(), st.integers(0, 90_000)),
    cost=st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.001])),
    compact=st.booleans(),
)
# A turn's compact offer row: the skills its prompt listed (queued on write, counted by a roll-up).
turn_offer_strategy = st.builds(
    dict,
    turn=st.integers(0, 15),  # a redelivered turn writes its offer row again
    listed=st.lists(
        st.tuples(st.sampled_from(["pdf", "xlsx", "web", "docx"]), st.sampled_from([None, 1, 2])),
        min_size=1,
        max_size=4,
        unique_by=lambda pair: pair[0],
    ),
    model=st.sampled_from(["", "gpt"]),
    minutes_ago=st.integers(0, 60 * 24 * 20),
)
batch_strategy = st.tuples(
    st.lists(event_strategy, min_size=1, max_size=12),
    st.lists(turn_offer_strategy, max_size=3),
    st.sampled_from(["api", "runtime"]),
    # A batch that breaks at the database (a version below 0 fails its CHECK constraint) after
    # its other events were sent: it must leave nothing behind.
    st.booleans(),
    # Then the queued offers rolled up (as a read or the worker's reaper does), or the rollups
    # rebuilt from the raw events: of everything, or from a day up to 22 days back.
    st.sampled_from(["", "roll up", "rebuild"]),
    st.one_of(st.none(), st.integers(0, 22)),
)


def turn_offer_input(offer: dict, now: dt.datetime) -> UsageEventInput:
    return UsageEventInput(
        event_id=f"turn-{offer['turn']}:offered:list",
        kind="offered",
        skill="",
        model=offer["model"],
        at=now - dt.timedelta(minutes=offer["minutes_ago"]),
        offered_skills=tuple(offer["listed"]),
    )


def as_input(e: dict, now: dt.datetime) -> UsageEventInput:
    compact_offer = e["kind"] == "offered" and e["compact"]
    return UsageEventInput(
        event_id=e["event_id"],
        kind=e["kind"],
        skill="" if compact_offer else e["skill"],
        version=e["version"],
        trigger=e["trigger"],
        label=e["label"],
        model=e["model"],
        rating=e["rating"] if e["kind"] == "feedback" else None,
        tokens=e["tokens"],
        duration_ms=e["duration_ms"],
        cost=e["cost"],
        at=now - dt.timedelta(minutes=e["minutes_ago"]),
        offered_skills=((e["skill"], e["version"]), ("web", 1)) if compact_offer else None,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(batch_strategy, min_size=1, max_size=6),
    rating_changes=st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1, -1])), max_size=4),
    # Days back from `now` to the first and last day of a range (empty when first < last).
    date_ranges=st.lists(st.tuples(st.integers(0, 22), st.integers(0, 22)), max_size=3),
)
def test_rollups_equal_the_raw_events_after_any_mix_of_batches(batches, rating_changes, date_ranges):
    UsageEvent.objects.all().delete()
    for rollup in (HourlyRollup, DailyRollup, WeeklyRollup):
        rollup.objects.all().delete()
    now = dt.datetime(2026, 4, 1, 12, 30, tzinfo=dt.UTC)

    def queue() -> list[int]:
        return sorted(QueuedOffer.objects.values_list("offer_id", flat=True))

    for events, turn_offers, source, breaks, then, since_days_ago in batches:
        inputs = [as_input(e, now) for e in events] + [turn_offer_input(offer, now) for offer in turn_offers]
        if breaks:
            before = stored_rollups(), queue(), UsageEvent.objects.count()
            inputs.append(UsageEventInput(event_id="negative", kind="loaded", skill="pdf", version=-1, at=now))
            with pytest.raises(IntegrityError):
                usage_record(events=inputs, source=source)
            assert (stored_rollups(), queue(), UsageEvent.objects.count()) == before
        else:
            usage_record(events=inputs, source=source)
        if then == "roll up":
            usage_offers_roll_up()
            assert queue() == []
        elif then == "rebuild":
            since = None if since_days_ago is None else now.date() - dt.timedelta(days=since_days_ago)
            usage_rollups_rebuild(since=since)
        # Every offer is counted into the rollups or waits in the queue, never both, never neither.
        assert stored_and_queued_rollups() == raw_rollups()
    for number, rating in rating_changes:  # a person changes their mind about a turn
        usage_feedback_set(
            event=UsageEventInput(event_id=f"fb-{number}", kind="feedback", skill="pdf", rating=rating, at=now)
        )

    # Every hourly, daily and weekly row, with every counter, is what the raw events add up to:
    # once the queued offers are rolled up (as an analytics view does first), the rows alone.
    usage_offers_roll_up()
    expected_rollups = raw_rollups()
    assert stored_and_queued_rollups() == expected_rollups
    # What the service answers from them agrees too: per version, over any range of days (whole
    # weeks from weekly rows, the ends from daily ones), and summed over hourly rows.
    expected = raw_answer()
    assert rollup_answer(skill_analytics(by_version=True)) == expected
    assert queue() == []
    assert stored_rollups() == expected_rollups
    for first, last in date_ranges:
        window = AnalyticsFilter(
            date_from=now.date() - dt.timedelta(days=first), date_to=now.date() - dt.timedelta(days=last)
        )
        assert rollup_answer(skill_analytics(filters=window, by_version=True)) == raw_answer(window)
        for interval in ("week", "day"):  # the overview page's table and sparklines, in one query
            overview = skills_overview(filters=window, interval=interval)
            assert rollup_answer(overview.stats) == per_skill(raw_answer(window))
            points = {
                (name, p.bucket): (p.succeeded, p.failed) for (name, _), ps in overview.sparklines.items() for p in ps
            }
            assert {key: value for key, value in points.items() if value != (0, 0)} == raw_outcomes(window, interval)
            # The page ranks and adds up its table rather than reading the rollups twice more.
            assert funnel_of(overview.stats) == usage_funnel(filters=window)
            assert failing_first(overview.stats, min_n=1, limit=5) == skills_failing(filters=window, min_n=1, limit=5)
    merged: dict = defaultdict(Counter)
    for row in skill_analytics(by_version=True, by="model"):
        merged[(row.skill, row.version)] += rollup_answer([row])[(row.skill, row.version)]
    assert dict(merged) == expected
    for skill in {name for name, _ in expected}:
        series = skill_timeseries(name=skill, interval="day")
        outcomes_total = sum(c["succeeded"] + c["failed"] for (name, _), c in expected.items() if name == skill)
        assert sum(p.n for p in series) == outcomes_total
    # A rebuild from the raw events changes nothing.
    usage_rollups_rebuild()
    assert stored_rollups() == expected_rollups


def test_rebuild_since_a_day_recounts_only_from_that_day(capsys):
    usage_record(events=outcomes("pdf", 1, 2, 0, at=NOON - dt.timedelta(days=2)) + outcomes("pdf", 1, 1, 1, at=NOON))
    # Rows lost or damaged by hand: the rebuild recounts them from the raw events.
    HourlyRollup.objects.filter(bucket__gte=NOON.replace(hour=0)).update(succeeded=99)
    DailyRollup.objects.filter(bucket__gte=NOON.replace(hour=0)).update(succeeded=99)
    DailyRollup.objects.filter(bucket__lt=NOON.replace(hour=0)).update(failed=7)

    call_command("analytics", "rebuild", "--since", NOON.date().isoformat())

    assert "2 events" in capsys.readouterr().out
    daily = {p.bucket.date(): (p.succeeded, p.failed) for p in skill_timeseries(name="pdf") if p.n}
    assert daily[NOON.date()] == (1, 1)
    assert daily[NOON.date() - dt.timedelta(days=2)] == (2, 7)  # before --since: left alone
    call_command("analytics", "rebuild")
    assert skill_analytics()[0].failed == 1


def test_rebuild_since_mid_week_recounts_that_whole_week_once():
    monday, wednesday = NOON, NOON + dt.timedelta(days=2)  # NOON is a Monday
    offer = UsageEventInput(
        event_id="offer-wed", kind="offered", skill="", offered_skills=(("pdf", 1), ("docx", 1)), at=wednesday
    )
    usage_record(events=outcomes("pdf", 1, 2, 0, at=monday) + outcomes("pdf", 1, 1, 1, at=wednesday) + [offer])
    DailyRollup.objects.filter(bucket__lt=wednesday.replace(hour=0)).update(failed=7)  # before --since

    usage_rollups_rebuild(since=wednesday.date())

    week = WeeklyRollup.objects.get(skill_name="pdf")
    assert (week.succeeded, week.failed, week.offered) == (3, 1, 1)  # Monday's outcomes counted once
    assert WeeklyRollup.objects.get(skill_name="docx").offered == 1
    daily = {row.bucket.date(): (row.succeeded, row.failed) for row in DailyRollup.objects.filter(skill_name="pdf")}
    assert daily == {monday.date(): (2, 7), wednesday.date(): (1, 1)}  # days before --since: left alone


def test_rebuild_since_mid_week_counts_an_offer_still_queued_from_before_that_day_once():
    tuesday, wednesday = NOON + dt.timedelta(days=1), NOON + dt.timedelta(days=2)  # NOON is a Monday
    offer = UsageEventInput(event_id="offer-tue", kind="offered", skill="", offered_skills=(("pdf", 1),), at=tuesday)
    usage_record(events=[offer] + outcomes("pdf", 1, 1, 0, at=wednesday))
    assert QueuedOffer.objects.count() == 1  # not counted yet

    usage_rollups_rebuild(since=wednesday.date())

    # The rebuild recounts the whole week, Tuesday included; Tuesday's hour and day rows, which
    # it keeps, never had the queued offer: it is counted into them too, and leaves the queue.
    assert not QueuedOffer.objects.exists()
    assert WeeklyRollup.objects.get(skill_name="pdf").offered == 1
    assert DailyRollup.objects.get(skill_name="pdf", bucket=tuesday.replace(hour=0)).offered == 1
    assert HourlyRollup.objects.get(skill_name="pdf", bucket=tuesday).offered == 1
    assert stored_rollups() == raw_rollups()
