"""Skill analytics (SPEC §8): counts per skill (or per version) and the success rate.

Success rate = succeeded / (succeeded + failed), always shown with its sample size n and a 95%
Wilson score interval: with few outcomes a raw rate is noise, and the interval says how much.
The counts are one GROUP BY over UsageEvent's (skill_name, kind, at) index.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from django.db.models import Count, Q

from registry.models import Label, UsageEvent, UsageKind

Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class SkillStats:
    skill: str
    version: int | None  # None: all versions together
    offered: int = 0
    loaded: int = 0
    executed: int = 0
    succeeded: int = 0
    failed: int = 0
    feedback_up: int = 0
    feedback_down: int = 0

    @property
    def n(self) -> int:
        return self.succeeded + self.failed

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.succeeded, self.n)

    def as_dict(self) -> dict:
        interval = self.interval
        return {
            "skill": self.skill,
            "version": self.version,
            "offered": self.offered,
            "loaded": self.loaded,
            "executed": self.executed,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "feedback_up": self.feedback_up,
            "feedback_down": self.feedback_down,
            "n": self.n,
            "success_rate": None if self.success_rate is None else round(self.success_rate, 4),
            "ci_low": None if interval is None else round(interval[0], 4),
            "ci_high": None if interval is None else round(interval[1], 4),
        }


def skill_analytics(
    *,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    label: str | None = None,
    version: int | None = None,
    skill: str | None = None,
    by_version: bool = False,
) -> list[SkillStats]:
    """Per-skill counts for events in [date_from, date_to] (whole UTC days, both inclusive).

    `version` keeps only events of that version number; `label` keeps, per skill, only events of
    the version the label points to now (skills without the label drop out). `by_version` gives
    one row per (skill, version) instead of one per skill.
    """
    events = UsageEvent.objects.all()
    if date_from:
        events = events.filter(at__gte=dt.datetime.combine(date_from, dt.time.min, tzinfo=dt.UTC))
    if date_to:
        events = events.filter(at__lt=dt.datetime.combine(date_to + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC))
    if skill:
        events = events.filter(skill_name=skill)
    if version is not None:
        events = events.filter(version=version)
    allowed: set[tuple[str, int]] | None = None
    if label:
        allowed = set(Label.objects.filter(name=label).values_list("skill__name", "version__number"))
        if not allowed:
            return []
        events = events.filter(skill_name__in={name for name, _ in allowed})
    grouped = (
        events.values("skill_name", "version", "kind")
        .annotate(count=Count("id"), up=Count("id", filter=Q(rating__gt=0)), down=Count("id", filter=Q(rating__lt=0)))
        .order_by()
    )
    rows: dict[tuple[str, int | None], SkillStats] = {}
    for item in grouped:
        if allowed is not None and (item["skill_name"], item["version"]) not in allowed:
            continue
        key = (item["skill_name"], item["version"] if (by_version or version is not None or label) else None)
        stats = rows.setdefault(key, SkillStats(skill=key[0], version=key[1]))
        kind = item["kind"]
        if kind == UsageKind.FEEDBACK:
            stats.feedback_up += item["up"]
            stats.feedback_down += item["down"]
        elif kind in (UsageKind.OFFERED, UsageKind.LOADED, UsageKind.EXECUTED, UsageKind.SUCCEEDED, UsageKind.FAILED):
            setattr(stats, kind, getattr(stats, kind) + item["count"])
    return sorted(rows.values(), key=lambda s: (s.skill, s.version or 0))


CSV_COLUMNS = (
    "skill",
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
)
