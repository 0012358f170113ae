"""Skillsets for the consumer tests, made through the skillset services."""

from __future__ import annotations

from registry.models import Skill, Skillset
from registry.services.labels import label_move
from registry.services.skillsets import skillset_label_move, skillset_publish, skillset_rollout_set
from tests.factories import publish

# The `data` set of the consumer tests: the members' numbers in its versions 1 and 2.
V1 = {"pdf-tools": 1, "xlsx-tools": 2}
V2 = {"pdf-tools": 2, "xlsx-tools": 3}


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


def data_set_publish(*, pdf_files=()) -> None:
    """`data` v1 = V1, v2 = V2, its `production` (and so its members') at v1; then pdf-tools' own
    `production` moves on alone to 2 (a hotfix, say). `web-fetch` is no member, labelled
    `production` too."""
    publish_versions("pdf-tools", 2, files=pdf_files)
    publish_versions("xlsx-tools", 3)
    web = publish("web-fetch", description="Fetches web pages for the data team.")
    label_move(skill=web.skill, label="production", version_number=1)
    set_version("data", V1)
    set_version("data", V2)
    set_label("data", "production", 1)
    label_move(skill=Skill.objects.get(name="pdf-tools"), label="production", version_number=2)
