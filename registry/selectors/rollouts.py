"""Reads of labels' rollouts: which are active, each one's live comparison (canary against
stable, the analytics version comparison), and the state the console shows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from registry.errors import NotFound
from registry.models import Label, Skill
from registry.selectors.analytics import AnalyticsFilter, SkillStats, skill_versions_compare


def rollouts_guarded_ids() -> list[int]:
    """Ids of the labels with an active rollout (a canary with weight above 0): what the guard
    looks at; the guard itself skips those whose label policy sets no guard."""
    return list(
        Label.objects.filter(canary_version__isnull=False, weight__gt=0).order_by("id").values_list("id", flat=True)
    )


def skill_rollouts(skill: Skill) -> list[Label]:
    """The skill's labels that have a canary (active, or rolled back and kept for its figures)."""
    found = skill.labels.filter(canary_version__isnull=False)
    return list(found.select_related("skill", "version", "canary_version", "rollout_started_by"))


def rollouts_active_by_skill(skill_ids: list[int]) -> dict[int, list[Label]]:
    """Skill id -> its labels with a running rollout (canary weight above 0), for lists that
    badge each skill's canary."""
    found: dict[int, list[Label]] = {}
    labels = Label.objects.filter(skill_id__in=skill_ids, canary_version__isnull=False, weight__gt=0)
    for label in labels.select_related("canary_version").order_by("skill_id", "name"):
        found.setdefault(label.skill_id, []).append(label)
    return found


@dataclass(frozen=True)
class RolloutSide:
    version: int
    stats: SkillStats

    def as_dict(self) -> dict:
        interval = self.stats.interval
        rate = self.stats.success_rate
        return {
            "version": self.version,
            "n": self.stats.n,
            "succeeded": self.stats.succeeded,
            "success_rate": None if rate is None else round(rate, 4),
            "ci_low": None if interval is None else round(interval[0], 4),
            "ci_high": None if interval is None else round(interval[1], 4),
        }


@dataclass(frozen=True)
class RolloutComparison:
    """Canary against stable on live outcomes since the rollout began."""

    stable: RolloutSide
    canary: RolloutSide
    p_worse: float | None  # P(canary's success rate < stable's); None before any outcome
    summary: str

    def as_dict(self) -> dict:
        return {
            "stable": self.stable.as_dict(),
            "canary": self.canary.as_dict(),
            "p_worse": None if self.p_worse is None else round(self.p_worse, 4),
            "summary": self.summary,
        }


def rollout_comparison(*, label: Label) -> RolloutComparison:
    """The label's canary against its stable version on outcomes since the rollout began (whole
    UTC days from its start: the finest grain the version comparison reads), in the label's
    skill's source."""
    started = label.rollout_started_at or timezone.now()
    filters = AnalyticsFilter(date_from=started.astimezone(dt.UTC).date(), skill_source=label.skill.source)
    stable, canary = label.version.number, label.canary_number
    if canary is None:
        raise NotFound(f"Label '{label.name}' has no rollout.")
    try:
        compared = skill_versions_compare(name=label.skill.name, a=stable, b=canary, filters=filters)
    except NotFound:  # no usage recorded for the skill yet
        empty = RolloutSide(stable, SkillStats(skill=label.skill.name, version=stable))
        return RolloutComparison(
            stable=empty,
            canary=RolloutSide(canary, SkillStats(skill=label.skill.name, version=canary)),
            p_worse=None,
            summary="No outcomes recorded yet.",
        )
    seen = compared.a.n + compared.b.n > 0
    return RolloutComparison(
        stable=RolloutSide(stable, compared.a),
        canary=RolloutSide(canary, compared.b),
        p_worse=1.0 - compared.probability_b_better if seen else None,
        summary=compared.summary(),
    )


@dataclass(frozen=True)
class RolloutPanel:
    label: Label
    comparison: RolloutComparison


def skill_rollout_panels(skill: Skill) -> list[RolloutPanel]:
    """Each of the skill's rollouts with its live comparison: the versions page's rollout box."""
    return [RolloutPanel(label=label, comparison=rollout_comparison(label=label)) for label in skill_rollouts(skill)]


def skill_rollbacks(skill: Skill) -> list[Label]:
    """The skill's labels whose canary the guard rolled back (and nobody has promoted or
    aborted since): the banner on every page of the skill."""
    return list(skill.labels.filter(rolled_back_at__isnull=False).select_related("version", "canary_version"))
