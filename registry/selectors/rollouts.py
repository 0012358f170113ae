"""Reads of labels' rollouts: which are active, and each one's state for the API and console."""

from __future__ import annotations

from registry.models import Label, Skill


def rollouts_guarded_ids() -> list[int]:
    """Ids of the labels with an active rollout (a canary with weight above 0): what the guard
    looks at; the guard itself skips those whose label policy sets no guard."""
    return list(
        Label.objects.filter(canary_version__isnull=False, weight__gt=0).order_by("id").values_list("id", flat=True)
    )


def skill_rollouts(skill: Skill) -> list[Label]:
    """The skill's labels that have a canary (active, or rolled back and kept for its figures)."""
    return list(
        skill.labels.filter(canary_version__isnull=False).select_related(
            "version", "canary_version", "rollout_started_by"
        )
    )
