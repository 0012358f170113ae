"""Skillsets for the consumer tests, made through the skillset services."""

from __future__ import annotations

from registry.models import Skillset
from registry.services.skillsets import skillset_label_move, skillset_publish, skillset_rollout_set
from tests.factories import publish


def publish_versions(name: str, count: int, **fields) -> None:
    """`count` versions of `name`, each saying which it is in its description."""
    for number in range(1, count + 1):
        publish(name, description=f"{name} edition {number}. Use when testing skillsets.", **fields)


def set_version(name: str, members: dict[str, int]) -> int:
    """Publish the next version of set `name` with `members` ({skill: number}); its number."""
    version, _ = skillset_publish(name=name, members=members)
    return version.number


def set_label(name: str, label: str, number: int, *, canary: int | None = None, weight: int = 0) -> None:
    """Move set `name`'s `label` (and its members') to version `number`, then, with `canary`,
    roll `weight`% of subjects out to that version."""
    skillset = Skillset.objects.get(name=name)
    skillset_label_move(skillset=skillset, label=label, version_number=number)
    if canary is not None:
        skillset_rollout_set(skillset=skillset, label=label, version_number=canary, weight=weight)
