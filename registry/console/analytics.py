"""Analytics pages for analysts and up: the overview table and one skill's page.

Everything is read through `registry.selectors.analytics` (rollups only) with the same filters as
the API. Charts are SVG drawn here on the server, each with a text alternative (a title, a
description and the numbers in a table), so the pages read the same without JavaScript.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, replace
from urllib.parse import quote, urlencode

from django import forms
from django.shortcuts import render
from django.urls import path
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from registry.api.serializers import EARLIEST_DAY, LATEST_DAY
from registry.console.access import console_view
from registry.errors import ApplicationError
from registry.models import SkillSource
from registry.selectors import analytics
from registry.selectors.analytics import AnalyticsFilter, SeriesPoint, SkillStats
from registry.services.usage import usage_offers_roll_up
from registry.skillformat.skillmd import ACTIVATION_TRIGGERS

DEFAULT_DAYS = 30
SORTS = {
    "skill": lambda s: s.skill,
    "rate": lambda s: -1 if s.success_rate is None else s.success_rate,
    "low": lambda s: (s.interval or (-1, -1))[0],
    "high": lambda s: (s.interval or (-1, -1))[1],
    "n": lambda s: s.n,
    "loaded": lambda s: s.loaded,
    "cost": lambda s: s.cost,
}


class AnalyticsFilterForm(forms.Form):
    # `from` is a Python keyword: the form field is `date_from`, shown and sent as `from`.
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    label = forms.CharField(required=False, max_length=36, help_text="Version the label points to now")
    trigger = forms.CharField(required=False, max_length=32)
    model = forms.CharField(required=False, max_length=200)
    interval = forms.ChoiceField(required=False, choices=[("day", "Day"), ("week", "Week"), ("hour", "Hour")])
    # Which of the skills of a name (a skill page's `?source=`, as on the skill pages): without
    # it, a skill page is about the one its name resolves to now.
    source = forms.ChoiceField(required=False, choices=[("", "Any"), *SkillSource.choices])

    def __init__(self, params, *args, **kwargs):
        data = params.copy()
        if "from" in data:
            data["date_from"] = data.get("from")
        today = timezone.now().date()
        if "from" not in params and "to" not in params:
            # A first visit shows the last 30 days; an emptied field means "no bound".
            data["date_from"] = (today - dt.timedelta(days=DEFAULT_DAYS - 1)).isoformat()
            data["to"] = today.isoformat()
        super().__init__(data, *args, **kwargs)

    def clean(self):
        cleaned = super().clean()
        for name in ("date_from", "to"):
            day = cleaned.get(name)
            if day and not (EARLIEST_DAY <= day <= LATEST_DAY):
                self.add_error(name, f"Choose a day between {EARLIEST_DAY} and {LATEST_DAY}.")
        if cleaned.get("date_from") and cleaned.get("to") and cleaned["date_from"] > cleaned["to"]:
            self.add_error("date_from", "The first day must not be after the last.")
        return cleaned

    def filters(self) -> AnalyticsFilter:
        data = self.cleaned_data if self.is_valid() else {}
        return AnalyticsFilter(
            date_from=data.get("date_from"),
            date_to=data.get("to"),
            label=data.get("label") or None,
            trigger=data.get("trigger") or None,
            model=data.get("model") or None,
            skill_source=data.get("source") or None,
        )

    def _params(self) -> dict[str, str]:
        """The filter as query parameters, "" for each not set."""
        f = self.filters()
        return {
            "from": f.date_from.isoformat() if f.date_from else "",
            "to": f.date_to.isoformat() if f.date_to else "",
            "label": f.label or "",
            "trigger": f.trigger or "",
            "model": f.model or "",
            "source": f.skill_source or "",
        }

    def query(self, **extra) -> str:
        """The filter as a query string (for links: sorting, CSV, the skill page)."""
        params = {**self._params(), **extra}
        return urlencode({k: v for k, v in params.items() if v != "" or k in ("from", "to")})

    def turns_query(self) -> str:
        """The filter as the turn list's query string (`/turns/?`, a page of the agents app): a
        count links to the turns behind it with the same days, trigger and model."""
        params = self._params()
        return urlencode({k: params[k] for k in ("from", "to", "trigger", "model") if params[k]})


def _interval_for(filters: AnalyticsFilter) -> str:
    """Daily points up to a quarter, weekly beyond (a sparkline of 400 days says nothing)."""
    if filters.date_from and filters.date_to and (filters.date_to - filters.date_from).days > 92:
        return "week"
    return "day" if filters.date_from else "week"


def _sparkline_interval(filters: AnalyticsFilter) -> str:
    """Daily points up to a month, weekly beyond: a 120-pixel sparkline has no room for 90 days,
    and weekly points of 500 skills come from ~13 weekly rows each instead of 90 daily ones."""
    if filters.date_from and filters.date_to and (filters.date_to - filters.date_from).days <= 31:
        return "day"
    return "week"


# --- pages -----------------------------------------------------------------------------------


@dataclass
class OverviewRow:
    stats: SkillStats
    sparkline: SafeString
    show_source: bool  # its name has rows of more than one source in the table


@console_view(scope="analytics:read")
def analytics_overview(request):
    usage_offers_roll_up()  # the selectors only read: count the queued offers in first
    form = AnalyticsFilterForm(request.GET)
    filters = form.filters()
    sort = request.GET.get("sort", "n")
    descending = request.GET.get("dir", "desc" if sort != "skill" else "asc") == "desc"
    interval = _sparkline_interval(filters)
    try:
        overview = analytics.skills_overview(filters=filters, interval=interval)
    except ApplicationError:  # centuries of weeks: the table stands without its trend column
        overview = analytics.SkillsOverview(stats=analytics.skill_analytics(filters=filters), sparklines={})
    stats = sorted(overview.stats, key=SORTS.get(sort, SORTS["n"]), reverse=descending)
    series = overview.sparklines
    names = Counter(s.skill for s in stats)
    rows = [
        OverviewRow(
            stats=s,
            sparkline=sparkline(series.get((s.skill, s.source), []), s.skill, interval),
            show_source=names[s.skill] > 1,
        )
        for s in stats
    ]
    totals = analytics.funnel_of(overview.stats)  # the table's own rows: no third read of the rollups
    headers = [
        (key, title, sort == key, f"?{form.query(sort=key, dir='asc' if sort == key and descending else 'desc')}")
        for key, title in (
            ("skill", "Skill"),
            ("rate", "Success rate"),
            ("low", "95% interval"),
            ("n", "n"),
            ("loaded", "Loaded"),
            ("cost", "Cost"),
        )
    ]
    return render(
        request,
        "registry/analytics/overview.html",
        {
            "form": form,
            "known_triggers": ACTIVATION_TRIGGERS,  # offered in the filter as suggestions
            "rows": rows,
            "headers": headers,
            "descending": descending,
            "funnel": funnel_chart(totals),
            "totals": totals,
            "rankings": analytics.skill_rankings(overview.stats, limit=5),
            "interval": interval,
            "query": form.query(),
            "turns_query": form.turns_query(),
            "csv_url": f"/api/v1/analytics/skills?{form.query(format='csv')}",
        },
    )


@console_view(scope="analytics:read")
def analytics_skill(request, name: str):
    usage_offers_roll_up()
    form = AnalyticsFilterForm(request.GET)
    filters = analytics.one_skill(form.filters(), name)
    interval = (form.cleaned_data.get("interval") if form.is_valid() else "") or _interval_for(filters)
    try:
        points = analytics.skill_timeseries(name=name, filters=filters, interval=interval)
        series_error = ""
    except ApplicationError as error:  # an hourly series over years: say so above the chart
        points, series_error = [], error.detail
    versions = analytics.skill_versions_seen(name=name, filters=filters)
    with_outcomes = [v for v in versions if v.n and v.version]
    compare_a, compare_b = _chosen_versions(request.GET, with_outcomes)
    comparison = (
        analytics.skill_versions_compare(name=name, a=compare_a, b=compare_b, filters=filters)
        if compare_a and compare_b
        else None
    )
    totals = analytics.usage_funnel(filters=filters)
    turns_query = form.turns_query() + "&" + urlencode({"skill": name, "source": filters.skill_source or ""})
    (overall,) = analytics.skill_analytics(filters=filters) or [
        SkillStats(skill=name, source=filters.skill_source or "", version=None)
    ]
    # The same name's other skills with usage in the range: each has a page of its own.
    everywhere = analytics.skill_analytics(filters=replace(filters, skill_source=None))
    query = form.query(interval=interval, source=filters.skill_source or "")
    return render(
        request,
        "registry/analytics/skill.html",
        {
            "name": name,
            "source": filters.skill_source,
            "others": [s for s in everywhere if s.source != filters.skill_source],
            "form": form,
            "known_triggers": ACTIVATION_TRIGGERS,
            "overall": overall,
            "points": [p.as_dict() | {"label": _bucket_label(p.bucket, interval)} for p in points],
            "chart": rate_chart(points, interval, title=f"Success rate of {name} per {interval}"),
            "series_error": series_error,
            "interval": interval,
            "versions": versions,
            "version_choices": [v.version for v in versions if v.version],
            "compare_a": compare_a,
            "compare_b": compare_b,
            "comparison": comparison,
            # Offers are stored one row a turn for every skill it listed: no list of turns behind them.
            "funnel": funnel_chart(
                totals, links={step: f"/turns/?{turns_query}&event={step}" for step in FUNNEL_STEPS[1:]}
            ),
            "totals": totals,
            "turns_query": turns_query,
            "triggers": analytics.skill_analytics(filters=filters, by="trigger"),
            "models": analytics.skill_analytics(filters=filters, by="model"),
            "query": query,
            "csv_versions": f"/api/v1/analytics/skills?"
            f"{form.query(skill=name, source=filters.skill_source, by_version='true', format='csv')}",
            "csv_series": f"/api/v1/analytics/skills/{quote(name, safe='')}/timeseries?"
            f"{form.query(interval=interval, source=filters.skill_source, format='csv')}",
        },
    )


def _chosen_versions(params, with_outcomes: list[SkillStats]) -> tuple[int | None, int | None]:
    """The versions to compare: `a`/`b` from the query, else the two newest with outcomes."""

    def number(key: str) -> int | None:
        value = params.get(key, "")
        return int(value) if value.isdigit() and 0 < int(value) < 2**31 else None

    a, b = number("a"), number("b")
    if a and b:
        return a, b
    if len(with_outcomes) >= 2:
        return with_outcomes[1].version, with_outcomes[0].version
    return None, None


def _bucket_label(bucket: dt.datetime, interval: str) -> str:
    if interval == "hour":
        return f"{bucket:%Y-%m-%d %H}:00"
    return f"week of {bucket:%Y-%m-%d}" if interval == "week" else f"{bucket:%Y-%m-%d}"


# --- charts ----------------------------------------------------------------------------------


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def sparkline(points: list[SeriesPoint], skill: str, interval: str, width: int = 120, height: int = 28) -> SafeString:
    """A small line of the success rate per bucket; buckets without outcomes are skipped."""
    measured = [(i, p.succeeded / p.n) for i, p in enumerate(points) if p.n]
    if not measured:
        return format_html('<span class="muted">{}</span>', "no outcomes")
    step = width / max(1, len(points) - 1)
    coords = " ".join(f"{i * step:.1f},{height - 2 - rate * (height - 4):.1f}" for i, rate in measured)
    first, last = measured[0][1], measured[-1][1]
    text = (
        f"Success rate of {skill} per {interval}: {_percent(first)} at the start, {_percent(last)} at the end, "
        f"{len(measured)} of {len(points)} {interval}s with outcomes."
    )
    dot_x, dot_y = coords.split(" ")[-1].split(",")
    return format_html(
        '<svg class="sparkline" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{t}">'
        '<title>{t}</title><polyline points="{c}" fill="none"/><circle cx="{x}" cy="{y}" r="2"/></svg>',
        w=width,
        h=height,
        t=text,
        c=coords,
        x=dot_x,
        y=dot_y,
    )


CHART_WIDTH, CHART_HEIGHT = 760, 240
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 44, 12, 12, 28


def rate_chart(points: list[SeriesPoint], interval: str, *, title: str) -> SafeString:
    """Success rate per bucket as a line with its 95% Wilson band; empty buckets break both."""
    measured = [p for p in points if p.n]
    if not measured:
        return format_html('<p class="empty">{}</p>', "No outcomes in this range: nothing to chart yet.")
    plot_w = CHART_WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = CHART_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    step = plot_w / max(1, len(points) - 1)

    def x(i: int) -> float:
        return MARGIN_LEFT + (i * step if len(points) > 1 else plot_w / 2)

    def y(rate: float) -> float:
        return MARGIN_TOP + plot_h * (1 - rate)

    bands, lines, dots = [], [], []
    for run in _runs(points):
        upper = [(x(i), y(analytics.wilson_interval(p.succeeded, p.n)[1])) for i, p in run]  # type: ignore[index]
        lower = [(x(i), y(analytics.wilson_interval(p.succeeded, p.n)[0])) for i, p in reversed(run)]  # type: ignore[index]
        bands.append(" ".join(f"{px:.1f},{py:.1f}" for px, py in upper + lower))
        lines.append(" ".join(f"{x(i):.1f},{y(p.succeeded / p.n):.1f}" for i, p in run))
        dots += [(x(i), y(p.succeeded / p.n), p) for i, p in run]
    grid = format_html_join(
        "",
        '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/><text class="axis" x="{}" y="{}">{}%</text>',
        (
            (MARGIN_LEFT, CHART_WIDTH - MARGIN_RIGHT, y(r), y(r), MARGIN_LEFT - 6, y(r) + 4, int(r * 100))
            for r in (0, 0.25, 0.5, 0.75, 1)
        ),
    )
    tick_every = max(1, len(points) // 6)
    ticks = format_html_join(
        "",
        '<text class="axis tick" x="{}" y="{}">{}</text>',
        (
            (x(i), CHART_HEIGHT - 8, _bucket_label(p.bucket, interval).replace("week of ", ""))
            for i, p in enumerate(points)
            if i % tick_every == 0
        ),
    )
    first, last = measured[0], measured[-1]
    description = (
        f"{len(measured)} of {len(points)} {interval}s have outcomes. "
        f"First: {_percent(first.succeeded / first.n)} (n = {first.n}) on {_bucket_label(first.bucket, interval)}; "
        f"last: {_percent(last.succeeded / last.n)} (n = {last.n}) on {_bucket_label(last.bucket, interval)}. "
        "The shaded band is the 95% Wilson interval; the table below has every point."
    )
    return format_html(
        '<svg class="rate-chart" viewBox="0 0 {w} {h}" role="img" aria-labelledby="rate-title rate-desc">'
        '<title id="rate-title">{title}</title><desc id="rate-desc">{desc}</desc>'
        "{grid}{bands}{lines}{dots}{ticks}</svg>",
        w=CHART_WIDTH,
        h=CHART_HEIGHT,
        title=title,
        desc=description,
        grid=grid,
        bands=format_html_join("", '<polygon class="band" points="{}"/>', ((b,) for b in bands)),
        lines=format_html_join("", '<polyline class="line" points="{}" fill="none"/>', ((line,) for line in lines)),
        dots=format_html_join(
            "",
            '<circle class="dot" cx="{}" cy="{}" r="3"><title>{}: {} (n = {})</title></circle>',
            (
                (f"{px:.1f}", f"{py:.1f}", _bucket_label(p.bucket, interval), _percent(p.succeeded / p.n), p.n)
                for px, py, p in dots
            ),
        ),
        ticks=ticks,
    )


def _runs(points: list[SeriesPoint]) -> list[list[tuple[int, SeriesPoint]]]:
    """Consecutive buckets with outcomes: a gap in the data is a gap in the line."""
    runs: list[list[tuple[int, SeriesPoint]]] = [[]]
    for i, point in enumerate(points):
        if point.n:
            runs[-1].append((i, point))
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


FUNNEL_STEPS = ("offered", "loaded", "executed", "succeeded", "failed")


def funnel_chart(totals: dict[str, int], width: int = 420, links: dict[str, str] | None = None) -> SafeString:
    """Horizontal bars offered → loaded → executed → succeeded / failed, each labelled; a step
    with a link in `links` links its bar (to the turns behind it)."""
    top = max(1, *(totals[step] for step in FUNNEL_STEPS))
    bar_h, gap, label_w = 22, 6, 90
    rows = []
    for index, step in enumerate(FUNNEL_STEPS):
        value = totals[step]
        y = index * (bar_h + gap)
        rows.append(
            (
                y + bar_h * 0.7,
                step,
                label_w,
                y,
                f"{max(1.0, (width - label_w - 70) * value / top):.1f}",
                bar_h,
                f"bar {step}",
                f"{label_w + 6 + (width - label_w - 70) * value / top:.1f}",
                y + bar_h * 0.7,
                value,
            )
        )
    height = len(FUNNEL_STEPS) * (bar_h + gap)
    summary = ", ".join(f"{step} {totals[step]}" for step in FUNNEL_STEPS)
    return format_html(
        '<svg class="funnel" viewBox="0 0 {w} {h}" role="img" aria-label="{s}"><title>Funnel: {s}</title>{rows}</svg>',
        w=width,
        h=height,
        s=summary,
        rows=format_html_join("", "{}", ((_funnel_row(row, (links or {}).get(row[1])),) for row in rows)),
    )


def _funnel_row(row: tuple, link: str | None) -> SafeString:
    drawn = format_html(
        '<text class="axis" x="0" y="{}">{}</text><rect x="{}" y="{}" width="{}" height="{}" class="{}"/>'
        '<text class="value" x="{}" y="{}">{}</text>',
        *row,
    )
    if link is None:
        return drawn
    return format_html(
        '<a href="{}" data-step="{}"><title>The turns behind {} {}</title>{}</a>', link, row[1], row[-1], row[1], drawn
    )


urlpatterns = [
    path("analytics/", analytics_overview, name="analytics"),
    path("analytics/skills/<str:name>/", analytics_skill, name="analytics-skill"),
]
