"""Skill analytics (SPEC §8), read from the rollups, never from raw events.

Success rate = succeeded / (succeeded + failed), always with its sample size n and a 95% Wilson
score interval: with few outcomes a raw rate is noise, and the interval says how much. Two
versions are compared by the difference of their rates with Newcombe's hybrid score interval
(method 10) and by the posterior probability that the second is better.

Queries without a trigger, model or event-label dimension read the weekly and daily rollups
(skill and version only: whole weeks from the weekly rows, the days at either end from the daily
ones); the others read the hourly rollups, which carry every dimension.

Turns' offer rows are counted into the rollups in batches, not when a turn finishes. These reads
never write: a caller that wants an answer counting every offer stored before it asked runs
`registry.services.usage.usage_offers_roll_up` first (one EXISTS when nothing is queued), as the
API's and the console's analytics views do.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from django.db import connection
from django.db.models import BigIntegerField, F, Func, Q, QuerySet, Sum
from django.db.models.functions import Trunc

from registry.errors import ApplicationError, NotFound
from registry.models import ROLLUP_COUNT_COLUMNS, DailyRollup, HourlyRollup, Label, RollupCounts, WeeklyRollup
from registry.selectors.skills import skill_sources

Z_95 = 1.959963984540054
SUM_FIELDS = ROLLUP_COUNT_COLUMNS  # every counter a rollup row keeps
GROUP_DIMENSIONS = ("trigger", "model", "label")
INTERVALS = ("hour", "day", "week")
MAX_POINTS = 5000  # an hourly series of ~7 months; more is not a chart, it is an export


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_difference(s_a: int, n_a: int, s_b: int, n_b: int) -> tuple[float, float, float] | None:
    """p_b − p_a with Newcombe's hybrid score interval (1998, method 10), built from the two
    95% Wilson intervals: (estimate, low, high), or None when a side has no outcomes."""
    wilson_a, wilson_b = wilson_interval(s_a, n_a), wilson_interval(s_b, n_b)
    if wilson_a is None or wilson_b is None:
        return None
    p_a, p_b = s_a / n_a, s_b / n_b
    (l_a, u_a), (l_b, u_b) = wilson_a, wilson_b
    estimate = p_b - p_a
    low = estimate - math.sqrt((p_b - l_b) ** 2 + (u_a - p_a) ** 2)
    high = estimate + math.sqrt((u_b - p_b) ** 2 + (p_a - l_a) ** 2)
    return estimate, max(-1.0, low), min(1.0, high)


def probability_b_better(s_a: int, f_a: int, s_b: int, f_b: int) -> float:
    """P(p_b > p_a) for independent Beta(1 + s, 1 + f) posteriors, exactly.

    The closed form for integer parameters (Evan Miller, "Formulas for Bayesian A/B testing")
    sums over one parameter of one side; by the symmetries P(B > A) = 1 − P(A > B) and
    p ↔ 1 − p the sum can run over whichever of the four parameters is smallest."""
    alpha_a, beta_a, alpha_b, beta_b = 1 + s_a, 1 + f_a, 1 + s_b, 1 + f_b
    smallest = min(alpha_a, beta_a, alpha_b, beta_b)
    if smallest == alpha_b:
        return _b_beats_a(alpha_a, beta_a, alpha_b, beta_b)
    if smallest == alpha_a:
        return 1.0 - _b_beats_a(alpha_b, beta_b, alpha_a, beta_a)
    # p_b > p_a  ⇔  (1 − p_a) > (1 − p_b), and 1 − p ~ Beta(β, α).
    if smallest == beta_a:
        return _b_beats_a(beta_b, alpha_b, beta_a, alpha_a)
    return 1.0 - _b_beats_a(beta_a, alpha_a, beta_b, alpha_b)


def _b_beats_a(alpha_a: int, beta_a: int, alpha_b: int, beta_b: int) -> float:
    # Σ_{i=0}^{α_B−1} B(α_A+i, β_A+β_B) / ((β_B+i) · B(1+i, β_B) · B(α_A, β_A)), in logs.
    constant = _log_beta(alpha_a, beta_a)
    total = 0.0
    for i in range(alpha_b):
        total += math.exp(
            _log_beta(alpha_a + i, beta_a + beta_b) - math.log(beta_b + i) - _log_beta(1 + i, beta_b) - constant
        )
    return min(1.0, max(0.0, total))


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


# --- filters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyticsFilter:
    """What every analytics answer can be narrowed by. Dates are whole UTC days, inclusive.

    `label` keeps, per skill, the version the label points to now; `event_label` keeps events
    recorded under that label (what `by=label` groups by). `skill_source` keeps one of the skills
    called `skill` (events and rollups name their skill by name and source: a shadowing skill
    never counts another's history); without it, every source's skill of that name, each in a
    row of its own."""

    date_from: dt.date | None = None
    date_to: dt.date | None = None
    skill: str | None = None
    skill_source: str | None = None
    version: int | None = None
    label: str | None = None
    trigger: str | None = None
    model: str | None = None
    event_label: str | None = None

    @property
    def needs_dimensions(self) -> bool:
        return any(v is not None for v in (self.trigger, self.model, self.event_label))


def skill_source_of(*, name: str, source: str | None = None) -> str:
    """Which skill called `name` a per-skill answer is about: the one in `source`, else the one
    the name resolves to now (as events that name no source are assigned when stored); "" for a
    name no skill has (its events keep that source too)."""
    if source is not None:
        return source
    return skill_sources(names=[name]).get(name, "")


def one_skill(filters: AnalyticsFilter, name: str) -> AnalyticsFilter:
    """The filter narrowed to one skill: `name`, in the filter's source or its resolved one."""
    return replace(filters, skill=name, skill_source=skill_source_of(name=name, source=filters.skill_source))


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def _rollups(
    filters: AnalyticsFilter, *, hourly: bool = False, daily: bool = False
) -> tuple[list[QuerySet], set[tuple[str, str, int]] | None]:
    """Rollup rows whose sums together answer the filter, and (for `label`) the (skill, source,
    version) allowed. Hourly rows when hourly buckets or a dimension only they carry are asked for;
    daily rows for daily buckets; otherwise the whole ISO weeks of the range from the weekly rows
    and the days at either end from the daily rows, which cover the range exactly once."""
    start = _day_start(filters.date_from) if filters.date_from else None
    end = _day_start(filters.date_to) + dt.timedelta(days=1) if filters.date_to else None
    if hourly or filters.needs_dimensions:
        spans: list[tuple[type[RollupCounts], dt.datetime | None, dt.datetime | None]] = [(HourlyRollup, start, end)]
    elif daily:
        spans = [(DailyRollup, start, end)]
    else:
        spans = _weeks_and_days(start, end)
    allowed: set[tuple[str, str, int]] | None = None
    pairs = Q()
    if filters.label:
        pointers = Label.objects.filter(name=filters.label)
        if filters.skill:
            pointers = pointers.filter(skill__name=filters.skill)
        if filters.skill_source is not None:
            pointers = pointers.filter(skill__source=filters.skill_source)
        allowed = set(pointers.values_list("skill__name", "skill__source", "version__number"))
        for name, source, number in allowed:
            pairs |= Q(skill_name=name, skill_source=source, version=number)
    asked = {"trigger": filters.trigger, "model": filters.model, "label": filters.event_label}
    dimensions = {name: value for name, value in asked.items() if value is not None}
    parts = []
    for rollup, since, until in spans:
        rows = rollup._default_manager.order_by()
        if since:
            rows = rows.filter(bucket__gte=since)
        if until:
            rows = rows.filter(bucket__lt=until)
        if filters.skill:
            rows = rows.filter(skill_name=filters.skill)
        if filters.skill_source is not None:
            rows = rows.filter(skill_source=filters.skill_source)
        if filters.version is not None:
            rows = rows.filter(version=filters.version)
        rows = rows.filter(**dimensions)  # only hourly rows have them, and only they get any
        if allowed is not None:
            rows = rows.filter(pairs) if allowed else rows.none()
        parts.append(rows)
    return parts, allowed


def _weeks_and_days(
    start: dt.datetime | None, end: dt.datetime | None
) -> list[tuple[type[RollupCounts], dt.datetime | None, dt.datetime | None]]:
    """[start, end) (midnights, None = open) as whole ISO weeks plus the days before the first
    and after the last of them."""
    first_monday = None if start is None else start + dt.timedelta(days=(7 - start.weekday()) % 7)
    last_monday = None if end is None else end - dt.timedelta(days=end.weekday())
    if first_monday is not None and last_monday is not None and first_monday >= last_monday:
        return [(DailyRollup, start, end)]  # no whole week inside
    spans: list[tuple[type[RollupCounts], dt.datetime | None, dt.datetime | None]] = [
        (WeeklyRollup, first_monday, last_monday)
    ]
    if start is not None and start != first_monday:
        spans.append((DailyRollup, start, first_monday))
    if end is not None and end != last_monday:
        spans.append((DailyRollup, last_monday, end))
    return spans


# --- per-skill table -------------------------------------------------------------------


@dataclass
class SkillStats:
    skill: str
    version: int | None  # None: all versions together
    source: str = ""  # the skill's source ("": a name no skill had when its events came)
    group: dict[str, str] = field(default_factory=dict)  # e.g. {"trigger": "read_skill"} with `by`
    offered: int = 0
    loaded: int = 0
    executed: int = 0
    succeeded: int = 0
    failed: int = 0
    feedback_up: int = 0
    feedback_down: int = 0
    metered: int = 0
    tokens: int = 0
    duration_ms: int = 0
    cost: float = 0.0

    @property
    def n(self) -> int:
        return self.succeeded + self.failed

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.succeeded, self.n)

    def add(self, sums: dict) -> None:
        for name in SUM_FIELDS:
            setattr(self, name, getattr(self, name) + (sums[name] or 0))

    def as_dict(self) -> dict:
        interval = self.interval
        per_event = (lambda total: round(total / self.metered, 6)) if self.metered else (lambda total: None)
        return {
            "skill": self.skill,
            "source": self.source,
            "version": self.version,
            **self.group,
            "offered": self.offered,
            "loaded": self.loaded,
            "executed": self.executed,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "feedback_up": self.feedback_up,
            "feedback_down": self.feedback_down,
            "n": self.n,
            "success_rate": _rounded(self.success_rate),
            "ci_low": None if interval is None else round(interval[0], 4),
            "ci_high": None if interval is None else round(interval[1], 4),
            "tokens": self.tokens,
            "duration_ms": self.duration_ms,
            "cost": round(self.cost, 6),
            "avg_tokens": per_event(self.tokens),
            "avg_duration_ms": per_event(self.duration_ms),
            "avg_cost": per_event(self.cost),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def skill_analytics(
    *,
    filters: AnalyticsFilter = AnalyticsFilter(),
    by_version: bool = False,
    by: str | None = None,
) -> list[SkillStats]:
    """One row per skill (name and source; or per skill and version, and per value of `by`:
    trigger, model or the label events were recorded under), sorted by skill, source, version
    and group."""
    if by is not None and by not in GROUP_DIMENSIONS:
        raise ApplicationError(f"by must be one of {', '.join(GROUP_DIMENSIONS)}.", fields={"by": "unknown"})
    parts, _ = _rollups(filters, hourly=by is not None)
    keep_version = by_version or filters.version is not None or bool(filters.label)
    # The database adds up across versions unless they are kept: a third of the rows to convert.
    group_columns = ["skill_name", "skill_source", *(["version"] if keep_version else []), *([by] if by else [])]
    table: dict[tuple, SkillStats] = {}
    for sums in (
        sums for rows in parts for sums in rows.values(*group_columns).annotate(**{n: Sum(n) for n in SUM_FIELDS})
    ):
        version = (sums["version"] or None) if keep_version else None
        group = {by: sums[by]} if by else {}
        key = (sums["skill_name"], sums["skill_source"], version, tuple(group.values()))
        stats = table.get(key)
        if stats is None:
            stats = table[key] = SkillStats(
                skill=sums["skill_name"], source=sums["skill_source"], version=version, group=group
            )
        stats.add(sums)
    return sorted(table.values(), key=lambda s: (s.skill, s.source, s.version or 0, tuple(s.group.values())))


def skills_failing(
    *, filters: AnalyticsFilter = AnalyticsFilter(), min_n: int = 10, limit: int = 10
) -> list[SkillStats]:
    """Skills most surely failing, from the skill table (see `failing_first`)."""
    return failing_first(skill_analytics(filters=filters), min_n=min_n, limit=limit)


def failing_first(stats: Iterable[SkillStats], *, min_n: int, limit: int) -> list[SkillStats]:
    """Ranked by the Wilson upper bound, lowest first (a skill with a low upper bound fails often
    even in the most favourable reading), among those with n ≥ min_n and at least one failure: a
    skill that never failed is never "failing", however few its outcomes. A page that already
    holds the skill table ranks it here instead of reading it again."""
    return _upper_first(s for s in stats if s.n >= min_n and s.failed > 0)[:limit]


def _upper_first(stats: Iterable[SkillStats]) -> list[SkillStats]:
    # Ties (equal counts give equal bounds) by name, so the list does not depend on the input order.
    return sorted(stats, key=lambda s: ((s.interval or (0.0, 1.0))[1], s.skill, s.source, s.version or 0))


def best_first(stats: Iterable[SkillStats], *, min_n: int, limit: int) -> list[SkillStats]:
    """Ranked by the Wilson lower bound, highest first, among those with n ≥ min_n; ties by name,
    as in `failing_first`."""
    rows = [s for s in stats if s.n >= min_n]
    return sorted(rows, key=lambda s: (-(s.interval or (0.0, 1.0))[0], s.skill, s.source, s.version or 0))[:limit]


RANKING_MIN_N = 5  # outcomes a skill needs before the dashboard and the overview rank it


@dataclass(frozen=True)
class SkillRankings:
    """The skills working best and failing most, as one page shows them side by side: each ranked
    skill in one list only.

    Of the skills with at least `min_n` outcomes, those with a failure in the lower half by the
    Wilson upper bound are "failing" (lowest upper bound first); every other one with a success
    may be "working best" (highest Wilson lower bound first). `unranked` counts the skills with outcomes but fewer
    than `min_n` of them."""

    best: list[SkillStats]
    failing: list[SkillStats]
    min_n: int
    unranked: int


def skill_rankings(stats: Iterable[SkillStats], *, min_n: int = RANKING_MIN_N, limit: int = 5) -> SkillRankings:
    table = [s for s in stats if s.n]
    ranked = [s for s in table if s.n >= min_n]
    lower_half = _upper_first(ranked)[: (len(ranked) + 1) // 2]
    failing = [s for s in lower_half if s.failed > 0]
    best = [s for s in ranked if s.succeeded > 0 and not any(s is f for f in failing)]
    return SkillRankings(
        best=best_first(best, min_n=min_n, limit=limit),
        failing=failing[:limit],
        min_n=min_n,
        unranked=len(table) - len(ranked),
    )


def usage_totals(*, filters: AnalyticsFilter = AnalyticsFilter()) -> dict[str, int]:
    """Event counts over everything the filter selects (the funnel, the dashboard's totals)."""
    totals = dict.fromkeys(SUM_FIELDS, 0)
    for rows in _rollups(filters)[0]:
        sums = rows.aggregate(**{name: Sum(name) for name in SUM_FIELDS})
        for name in SUM_FIELDS:
            totals[name] += sums[name] or 0
    return totals


def usage_event_count(*, filters: AnalyticsFilter = AnalyticsFilter()) -> int:
    """Events counted per skill (a turn's one offer row counts once per skill it listed)."""
    totals = usage_totals(filters=filters)
    return int(sum(totals[name] for name in SUM_FIELDS[: SUM_FIELDS.index("feedback_down") + 1]))


FUNNEL_STAGES = ("offered", "loaded", "executed", "succeeded", "failed")


def usage_funnel(*, filters: AnalyticsFilter = AnalyticsFilter()) -> dict[str, int]:
    """offered → loaded → executed → succeeded / failed, in event counts."""
    totals = usage_totals(filters=filters)
    return {name: int(totals[name]) for name in FUNNEL_STAGES}


def funnel_of(stats: Iterable[SkillStats]) -> dict[str, int]:
    """The funnel of the events a skill table counts: every skill's counts added up, as
    `usage_funnel` answers for the same filter."""
    return {name: sum(getattr(s, name) for s in stats) for name in FUNNEL_STAGES}


# --- time series -----------------------------------------------------------------------


class SeriesPoint(NamedTuple):
    """One bucket of a series. A tuple: the overview makes ~7,000 of them per load, and a frozen
    dataclass takes three times as long to build."""

    bucket: dt.datetime
    succeeded: int
    failed: int

    @property
    def n(self) -> int:
        return self.succeeded + self.failed

    def as_dict(self) -> dict:
        interval = wilson_interval(self.succeeded, self.n)
        return {
            "bucket": self.bucket.isoformat().replace("+00:00", "Z"),
            "succeeded": self.succeeded,
            "failed": self.failed,
            "n": self.n,
            "success_rate": _rounded(self.succeeded / self.n if self.n else None),
            "ci_low": None if interval is None else round(interval[0], 4),
            "ci_high": None if interval is None else round(interval[1], 4),
        }


_STEP_SECONDS = {"hour": 3600, "day": 86_400, "week": 7 * 86_400}


def _second_start(seconds: int, interval: str) -> int:
    """The start of the UTC hour, day or ISO week (from Monday) holding this second since 1970."""
    if interval == "week":
        day = seconds // 86_400
        return (day - (day + 3) % 7) * 86_400  # 1970-01-01 was a Thursday (weekday 3)
    return seconds - seconds % _STEP_SECONDS[interval]


@functools.lru_cache(maxsize=8192)
def _utc(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


class _EpochSeconds(Func):
    """A bucket's start as whole seconds since 1970: thousands of points per overview load, hash
    and shift in a fraction of the time aware datetimes take (which once dominated the page)."""

    output_field = BigIntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="CAST(date_part('epoch', %(expressions)s) AS bigint)")

    def as_sqlite(self, compiler, connection, **extra):
        # Julian days: SQLite's strftime('%s') would put a placeholder-like % in the SQL.
        template = "CAST(ROUND((julianday(%(expressions)s) - 2440587.5) * 86400) AS integer)"
        return self.as_sql(compiler, connection, template=template)


_GRAIN: dict[type[RollupCounts], str] = {HourlyRollup: "hour", DailyRollup: "day", WeeklyRollup: "week"}


def _bucketed_sql(filters: AnalyticsFilter, interval: str) -> tuple[str, list]:
    """The rollup rows that answer the filter at this interval's grain (or finer), as ONE relation
    of skill_name, skill_source, version, point (the start of the row's UTC hour, day or ISO week, in seconds
    since 1970) and every counter: whole weeks and the days at either end come out as one
    relation, so a single GROUP BY gives one point per week."""
    if interval not in INTERVALS:
        raise ApplicationError(f"interval must be one of {', '.join(INTERVALS)}.", fields={"interval": "unknown"})
    parts, _ = _rollups(filters, hourly=interval == "hour", daily=interval == "day")
    q = connection.ops.quote_name
    columns = ", ".join(q(name) for name in ("skill_name", "skill_source", "version", "point", *SUM_FIELDS))
    selects, params = [], []
    for number, rows in enumerate(parts):
        bucket = F("bucket") if _GRAIN[rows.model] == interval else Trunc("bucket", interval, tzinfo=dt.UTC)
        part = rows.annotate(point=_EpochSeconds(bucket)).values_list(
            "skill_name", "skill_source", "version", "point", *SUM_FIELDS
        )
        sql, part_params = part.query.sql_with_params()
        # Named again outside: the ORM may order a SELECT's columns its own way.
        selects.append(f"SELECT {columns} FROM ({sql}) AS part{number}")
        params += part_params
    return " UNION ALL ".join(selects), params


def _sum_of(counter: str) -> str:
    column = connection.ops.quote_name(counter)
    # SUM of a bigint is a numeric, a Decimal per value in Python; the counts fit a bigint.
    return f"SUM({column})" if counter == "cost" else f"CAST(SUM({column}) AS bigint)"


def _filled(counts: dict[int, tuple[int, int]], filters: AnalyticsFilter, interval: str) -> list[SeriesPoint]:
    """Points for every bucket from the start of the range (or the first data) to its end, empty
    ones too, so a chart's x axis is time and a gap shows as a gap. `counts` is keyed by the
    buckets' starts in seconds since 1970."""
    first: int | None = min(counts, default=None)
    last: int | None = max(counts, default=None)
    if filters.date_from:
        first = _second_start(int(_day_start(filters.date_from).timestamp()), interval)
    if filters.date_to:
        end = _day_start(filters.date_to) + dt.timedelta(days=1) - dt.timedelta(hours=1)
        last = _second_start(int(end.timestamp()), interval)
    if first is None or last is None:
        return []
    step = _STEP_SECONDS[interval]
    if (last - first) // step >= MAX_POINTS:
        raise ApplicationError(
            f"That range has more than {MAX_POINTS} {interval}s; choose a longer interval or a shorter range.",
            fields={"interval": "too many buckets for this range"},
        )
    empty = (0, 0)
    return [SeriesPoint(_utc(at), *counts.get(at, empty)) for at in range(first, last + 1, step)]


def skill_timeseries(
    *, name: str, filters: AnalyticsFilter = AnalyticsFilter(), interval: str = "day"
) -> list[SeriesPoint]:
    """Outcomes of one skill per UTC bucket (hour, day or ISO week), with empty buckets."""
    filters = one_skill(filters, name)
    bucketed, params = _bucketed_sql(filters, interval)
    q = connection.ops.quote_name
    succeeded, failed, point = q("succeeded"), q("failed"), q("point")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {point}, {_sum_of('succeeded')}, {_sum_of('failed')} FROM ({bucketed}) AS counted "
            f"WHERE {succeeded} > 0 OR {failed} > 0 GROUP BY {point}",
            params,
        )
        counts = {seconds: (s, f) for seconds, s, f in cursor.fetchall()}
    return _filled(counts, filters, interval)


@dataclass(frozen=True)
class SkillsOverview:
    stats: list[SkillStats]  # as skill_analytics(filters=...) answers
    sparklines: dict[tuple[str, str], list[SeriesPoint]]  # per skill (name, source) with outcomes in the range


def skills_overview(*, filters: AnalyticsFilter, interval: str = "week") -> SkillsOverview:
    """The overview's table and every skill's series (its trend column) in one statement of two
    parts over the same rollup rows: every counter per skill, and outcomes per skill and point.
    (One pass adding up every counter per point, for both, takes longer than the two: the cost is
    in the sums per group, not in reading ~25,000 rows twice.)"""
    bucketed, params = _bucketed_sql(filters, interval)
    keep_version = filters.version is not None or bool(filters.label)  # as skill_analytics keeps them
    q = connection.ops.quote_name
    skill, source, version, point, succeeded, failed = (
        q(c) for c in ("skill_name", "skill_source", "version", "point", "succeeded", "failed")
    )
    totals = ", ".join(_sum_of(name) for name in SUM_FIELDS)
    outcomes = ", ".join(_sum_of(name) if name in ("succeeded", "failed") else "NULL" for name in SUM_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {skill}, {source}, {version if keep_version else 'NULL'}, NULL, {totals} "
            f"FROM ({bucketed}) AS counted GROUP BY {skill}, {source}{f', {version}' if keep_version else ''} "
            f"UNION ALL SELECT {skill}, {source}, NULL, {point}, {outcomes} FROM ({bucketed}) AS counted "
            f"WHERE {succeeded} > 0 OR {failed} > 0 GROUP BY {skill}, {source}, {point}",
            params + params,
        )
        found = cursor.fetchall()
    # Rows are (skill, source, version, point, *counters); a point row carries only the outcomes.
    at_succeeded, at_failed = 4 + SUM_FIELDS.index("succeeded"), 4 + SUM_FIELDS.index("failed")
    stats: list[SkillStats] = []
    series: dict[tuple[str, str], dict[int, tuple[int, int]]] = defaultdict(dict)
    for row in found:
        if row[3] is None:
            skill_stats = SkillStats(skill=row[0], source=row[1], version=(row[2] or None) if keep_version else None)
            skill_stats.add(dict(zip(SUM_FIELDS, row[4:], strict=True)))
            stats.append(skill_stats)
        else:
            series[(row[0], row[1])][row[3]] = (row[at_succeeded], row[at_failed])
    return SkillsOverview(
        stats=sorted(stats, key=lambda s: (s.skill, s.source, s.version or 0)),
        sparklines={key: _filled(counts, filters, interval) for key, counts in series.items()},
    )


# --- version comparison ----------------------------------------------------------------


COMPARISON_MIN_N = 30  # outcomes each version needs before a comparison is stated as a finding
MORE_OUTCOMES_CAP = 1_000_000  # beyond this many more per version, "no number we could name"


@dataclass(frozen=True)
class VersionComparison:
    skill: str
    a: SkillStats
    b: SkillStats
    difference: tuple[float, float, float] | None  # p_b − p_a, low, high
    probability_b_better: float
    min_n: int = COMPARISON_MIN_N

    @property
    def decided(self) -> bool:
        """Both versions have the minimum sample: the comparison may be stated as a finding."""
        return min(self.a.n, self.b.n) >= self.min_n

    @property
    def more_outcomes_needed(self) -> int | None:
        """How many more outcomes each version needs, were their rates so far to hold, for the
        minimum sample and a 95% interval of the difference that leaves out 0: the turns that
        would decide it. None when no number would (equal rates, a version without outcomes)."""
        return more_outcomes_to_decide(self.a.succeeded, self.a.n, self.b.succeeded, self.b.n, min_n=self.min_n)

    def as_dict(self) -> dict:
        estimate = None if self.difference is None else [round(x, 4) for x in self.difference]
        return {
            "skill": self.skill,
            "a": self.a.as_dict(),
            "b": self.b.as_dict(),
            "difference": {
                "estimate": None if estimate is None else estimate[0],
                "ci_low": None if estimate is None else estimate[1],
                "ci_high": None if estimate is None else estimate[2],
            },
            "probability_b_better": round(self.probability_b_better, 4),
            "min_n": self.min_n,
            "decided": self.decided,
            "more_outcomes_needed": None if self.decided else self.more_outcomes_needed,
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """In words: "v3 beats v2 with 94% probability; +12 points [−3, +25], n = 41 and 57"; below
        the minimum sample, no verdict: how far each version is and what would decide it."""
        a, b = f"v{self.a.version}", f"v{self.b.version}"
        if self.difference is None:
            return f"Not enough outcomes to compare {b} with {a} (n = {self.a.n} and {self.b.n})."
        if not self.decided:
            return self._too_few(a, b)
        p = self.probability_b_better
        verb = f"{b} beats {a}" if p >= 0.5 else f"{a} beats {b}"
        sure = max(p, 1 - p)
        # Rounding 99.7% up to "100%" would claim certainty that a posterior never gives.
        certainty = ">99%" if sure > 0.99 else f"{round(100 * sure)}%"
        estimate, low, high = (round(100 * x) for x in self.difference)
        return (
            f"{verb} with {certainty} probability; "
            f"{_signed(estimate)} points [{_signed(low)}, {_signed(high)}], n = {self.a.n} and {self.b.n}"
        )

    def _too_few(self, a: str, b: str) -> str:
        rates = f"{b} {_percent_of(self.b)} (n = {self.b.n}), {a} {_percent_of(self.a)} (n = {self.a.n}) so far"
        more = self.more_outcomes_needed
        if more is None:
            decide = "at these rates no number of turns would tell them apart"
        else:
            decide = f"about {more:,} more outcomes of each version would decide it, if these rates hold"
        return f"Too few outcomes to compare yet (at least {self.min_n} of each version): {rates}; {decide}"


def _signed(points: int) -> str:
    return f"+{points}" if points > 0 else f"−{-points}" if points < 0 else "0"


def _percent_of(stats: SkillStats) -> str:
    return "—" if stats.success_rate is None else f"{round(100 * stats.success_rate)}%"


def more_outcomes_to_decide(s_a: int, n_a: int, s_b: int, n_b: int, *, min_n: int) -> int | None:
    """The fewest more outcomes x of each version for which, at the rates seen so far, both have
    min_n and Newcombe's 95% interval of the difference leaves out 0 (None: no x up to
    MORE_OUTCOMES_CAP does; 0: decided already)."""
    if not n_a or not n_b or s_a * n_b == s_b * n_a:
        return None
    p_a, p_b = s_a / n_a, s_b / n_b

    def decides(extra: int) -> bool:
        if min(n_a, n_b) + extra < min_n:
            return False
        m_a, m_b = n_a + extra, n_b + extra
        # Expected counts at the same rates: Wilson's and Newcombe's formulas take real numbers.
        found = newcombe_difference(p_a * m_a, m_a, p_b * m_b, m_b)  # type: ignore[arg-type]
        return found is not None and (found[1] > 0 or found[2] < 0)

    if decides(0):
        return 0
    if not decides(MORE_OUTCOMES_CAP):
        return None
    low, high = 0, MORE_OUTCOMES_CAP  # decides(low) is False, decides(high) is True
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
    return high


def skill_versions_compare(
    *, name: str, a: int, b: int, filters: AnalyticsFilter = AnalyticsFilter()
) -> VersionComparison:
    """Version b against version a of one skill over the filter's range."""
    filters = replace(one_skill(filters, name), version=None, label=None)
    rows = {s.version: s for s in skill_analytics(filters=filters, by_version=True)}
    if not rows and not any(part.exists() for part in _rollups(replace(filters, date_from=None, date_to=None))[0]):
        raise NotFound(f"No usage recorded for skill '{name}'.")
    stats_a = rows.get(a) or SkillStats(skill=name, source=filters.skill_source or "", version=a)
    stats_b = rows.get(b) or SkillStats(skill=name, source=filters.skill_source or "", version=b)
    return VersionComparison(
        skill=name,
        a=stats_a,
        b=stats_b,
        difference=newcombe_difference(stats_a.succeeded, stats_a.n, stats_b.succeeded, stats_b.n),
        probability_b_better=probability_b_better(stats_a.succeeded, stats_a.failed, stats_b.succeeded, stats_b.failed),
    )


def skill_versions_seen(*, name: str, filters: AnalyticsFilter = AnalyticsFilter()) -> list[SkillStats]:
    """Per-version rows of one skill, newest version first."""
    rows = skill_analytics(filters=one_skill(filters, name), by_version=True)
    return sorted(rows, key=lambda s: -(s.version or 0))


CSV_COLUMNS = (
    "skill",
    "source",
    "version",
    "offered",
    "loaded",
    "executed",
    "succeeded",
    "failed",
    "feedback_up",
    "feedback_down",
    "n",
    "success_rate",
    "ci_low",
    "ci_high",
    "tokens",
    "duration_ms",
    "cost",
    "avg_tokens",
    "avg_duration_ms",
    "avg_cost",
)


def csv_columns(*, by: str | None = None) -> tuple[str, ...]:
    """The CSV columns of `skill_analytics(by=...)`: every key of its JSON rows, the grouping
    column (trigger, model or label, as `skill_analytics` checked it) after the skill, source and
    version it splits."""
    return CSV_COLUMNS if by is None else (*CSV_COLUMNS[:3], by, *CSV_COLUMNS[3:])
