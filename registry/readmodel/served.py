"""Which version of which skill a request gets: the one place that answers it.

Which label a request reads a skill at is one rule for every path, `label_applied`
(registry/readmodel/effective.py): a request naming a label gets only the skills that carry it;
one naming none gets `production` where the skill has it, else latest. Two kinds of request ask:

- a request *for the registry's skills* (resolve, matching, the runtime's skill list and its
  `read_skill`, MCP and discovery readers): `skill_served` — the snapshot's entry at the request's
  label and pins (registry/readmodel/effective.py has the rules: precedence, the label rule, a
  pin over the label, `enabled: false` in the SKILL.md leaves it out). A skill resolve offers
  always loads and one it hides never does.
- a request *naming one skill* (the REST reads, SKILL.md by URL): `skill_get` picks the skill
  (the winner, or the top-priority one when all are disabled, so it can be inspected) and
  `skill_version_for` the version (a number, else the label rule's: a 404 for a label the skill
  does not carry); `skill_md_raw` is the bytes of it, kept per generation.

A label's rollout (registry/readmodel/rollouts.py) sends a share of subjects to its canary: for
the registry's skills as pins (`subject_pins`, so the snapshot and every cache are keyed by the
side, not the subject), for one named skill through `skill_version_for(canary=...)`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass

from registry.errors import NotFound
from registry.models import Label, Skill, SkillVersion
from registry.readmodel.effective import (
    LATEST,
    label_applied,
    requested_label,
    skill_representative,
    skill_winner,
    skills_by_name,
)
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.rollouts import subject_canary, subject_pins
from registry.readmodel.skill import EffectiveSkill
from registry.readmodel.snapshot import Pins, registry_snapshot


def skill_served(
    *, name: str, label: str | None = None, pins: Pins | None = None, subject: str | None = None
) -> EffectiveSkill | None:
    """Which version of which skill a request at `label` (with `pins`, for `subject`) gets for
    `name`, or None when no skill of that name is in effect there (every source disabled, the
    SKILL.md at that version says `enabled: false`, or a pinned version the skill does not
    have). Costs no query once the snapshot of this generation is built."""
    generation = current_generation()
    pins = subject_pins(label=label, subject=subject, pins=pins, generation=generation)
    return registry_snapshot(label=label, generation=generation, pins=pins).by_name.get(name)


def skill_version_of(skill: EffectiveSkill | None) -> SkillVersion | None:
    """The stored version an effective skill names (SKILL.md text, files), with its skill. One query."""
    if skill is None:
        return None
    return SkillVersion.objects.select_related("skill").filter(skill_id=skill.skill_id, number=skill.version).first()


def skill_version_for(
    *, skill: Skill, label: str | None = None, number: int | None = None, canary: int | None = None
) -> SkillVersion:
    """The version a request that names this skill gets (the REST reads, `read_skill` by
    source): an explicit number, else the label `label_applied` gives it (NotFound when the
    request names a label the skill does not carry; no label: `production` if set, else latest).
    `canary` is the version the label's rollout gives the request's subject (`subject_canary`),
    read in place of the label's stable one."""
    if number is None and canary is not None:
        number = canary
    if number is not None:
        version = skill.versions.filter(number=number).first()
        if version is None:
            raise NotFound(f"'{skill.name}' has no version {number}.")
        return version
    wanted = requested_label(label)
    labels = Label.objects.select_related("version")
    found = None if wanted == LATEST else labels.filter(skill=skill, name=wanted).first()
    applied = label_applied(label=label, carried=(wanted,) if found is not None else ())
    if applied is None:
        raise NotFound(label_missing_detail(name=skill.name, label=wanted))
    if found is not None and applied == found.name:
        return found.version
    version = skill.versions.filter(number=skill.latest_version).first()
    if version is None:
        raise NotFound(f"'{skill.name}' has no versions.")
    return version


def label_missing_detail(*, name: str, label: str) -> str:
    """What a request naming `label` is told of a skill left out because it does not carry it."""
    return f"'{name}' has no label '{label}'."


def skill_lacks_label(*, name: str, label: str | None) -> bool:
    """Whether the skill that wins `name` is left out of a request at `label` because it does not
    carry that label (rather than being unknown or off): what a refused forced skill names."""
    if label is None or label == LATEST:
        return False
    winner = skill_winner(skills_named(name=name))
    return winner is not None and not Label.objects.filter(skill=winner, name=label).exists()


def skill_not_found(name: str, source: str | None) -> NotFound:
    return NotFound(f"No skill named '{name}'" + (f" in source '{source}'." if source else "."))


def skill_get(*, name: str, source: str | None = None) -> Skill:
    """The effective skill for a name, or the one in `source`; NotFound otherwise.

    A name whose skills are all disabled still resolves (to the highest-priority one), so it
    can be inspected and re-enabled.
    """
    candidates = skills_named(name=name, source=source)
    if not candidates:
        raise skill_not_found(name, source)
    return skill_representative(candidates)


def skills_named(*, name: str, source: str | None = None) -> list[Skill]:
    """Every skill called `name` (one per source), or the one in `source`; [] when none is."""
    return list(Skill.objects.filter(name=name, **({"source": source} if source else {})))


def skill_sources(*, names: Collection[str]) -> dict[str, str]:
    """The source each of `names` resolves to now, as `skill_get` resolves it (names no skill
    has are left out). Every batch of usage events asks: the answer for all names is kept per
    process and registry generation, so a batch naming 500 skills costs no query of its own."""
    generation = current_generation()
    every = _SOURCES.get((generation,))
    if every is None:
        every = {
            name: skill_representative(candidates).source
            for name, candidates in skills_by_name(Skill.objects.only("name", "source", "enabled")).items()
        }
        _SOURCES.put((generation,), every)
    return {name: every[name] for name in names if name in every}


_SOURCES: GenerationMemo[dict[str, str]] = GenerationMemo(maxsize=1)


@dataclass(frozen=True)
class RawSkillMd:
    content: bytes
    etag: str  # strong: the quoted sha256 of the bytes
    name: str
    version: int


_RAW: GenerationMemo[RawSkillMd] = GenerationMemo(maxsize=2048)


def skill_md_raw(
    *,
    name: str,
    source: str | None = None,
    label: str | None = None,
    number: int | None = None,
    generation: int | None = None,
    subject: str | None = None,
) -> RawSkillMd:
    """The exact SKILL.md bytes a reader (`subject`) gets, with their ETag.

    Kept per process, keyed by the current registry generation and the rollout side, never the
    subject: a hit costs no ORM work, and any publish, label move or enable/disable changes the
    key, so a stale answer is impossible across processes.
    """
    generation = current_generation() if generation is None else generation
    canary = None if number is not None else subject_canary(name=name, source=source, label=label, subject=subject)
    key = (generation, name, source, label, number, canary)
    found = _RAW.get(key)
    if found is not None:
        return found
    skill = skill_get(name=name, source=source)
    version = skill_version_for(skill=skill, label=label, number=number, canary=canary)
    content = version.skill_md.encode("utf-8")
    raw = RawSkillMd(
        content=content, etag=f'"{hashlib.sha256(content).hexdigest()}"', name=skill.name, version=version.number
    )
    _RAW.put(key, raw)
    return raw
