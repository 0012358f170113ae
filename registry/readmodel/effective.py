"""Which skill wins a name and which of its versions a request reads, straight from the database:
what the read model's snapshots are built and moved forward from (registry/readmodel/snapshot.py).

Precedence (seed 002: bundled < user < workspace) is decided in one place, `skill_winner`; every
read that picks "the" skill of a name goes through it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from django.db.models import F

from registry.models import Skill, SkillVersion
from registry.readmodel.skill import EffectiveSkill
from registry.skillformat.requires import stored_requirements

_EFFECTIVE_FIELDS = ("skill_id", "number", "description", "fingerprint", "tags", "triggers", "tools", "frontmatter")


def skill_winner(candidates: Iterable[Skill]) -> Skill | None:
    """The effective skill among one name's skills: the enabled one of highest priority."""
    enabled = [s for s in candidates if s.enabled]
    return max(enabled, key=lambda s: s.priority) if enabled else None


def skill_representative(candidates: list[Skill]) -> Skill:
    """The winner, or the highest-priority skill when all are disabled (so it can be inspected
    and re-enabled)."""
    return skill_winner(candidates) or max(candidates, key=lambda s: s.priority)


def skills_by_name(skills: Iterable[Skill]) -> dict[str, list[Skill]]:
    groups: dict[str, list[Skill]] = {}
    for skill in skills:
        groups.setdefault(skill.name, []).append(skill)
    return groups


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1"))


PRODUCTION = "production"
LATEST = "latest"  # implicit on every skill: its newest version


def requested_label(label: str | None) -> str:
    """The label a request reads at: `production` when it names none (as `GET /skills/{name}`
    does); `latest` means the newest version everywhere."""
    return PRODUCTION if label is None else label


def label_applied(*, label: str | None, carried: Collection[str]) -> str | None:
    """The one rule for a label a skill may not have, on every read path: which label a request
    at `label` reads a skill at, given the labels the skill carries (`carried`; a collection
    holding only the one that matters will do).

    - a named label: that label when the skill carries it, else None: the skill is absent from
      the request (a read naming it is a 404, resolve, MCP and discovery leave it out, a forced
      skill is refused naming the label);
    - `latest`: carried by every skill (its newest version);
    - no label: `production` when the skill carries it, else `latest`.

    A pin (an explicit version) is not a label and passes over this rule; a label's rollout
    decides which version of the label applied (registry/readmodel/rollouts.py).
    """
    if label is None:
        return PRODUCTION if PRODUCTION in carried else LATEST
    if label == LATEST or label in carried:
        return label
    return None


def effective_skills(
    *, label: str | None = None, names: Collection[str] | None = None, pins: Mapping[str, int] | None = None
) -> list[EffectiveSkill]:
    """Every effective enabled skill (precedence applied) by name, at the label `label_applied`
    gives each: with no label, `production` where the skill has it, else latest; with a named
    label, only the skills that carry it; `latest` is the newest version everywhere (the rule of
    `skill_version_for` too). `pins` ({name: number}) reads those skills at that exact version
    instead, whatever the label says and whether or not the skill carries it (a turn trying a
    version before it is promoted); a pin chooses a version, never a source, so it applies to the
    skill that wins the name, and a pinned number it does not have leaves the skill out. A skill
    whose SKILL.md says `enabled: false` is left out. Three queries (four with pins), whatever
    the number of skills, and no SKILL.md text is loaded. With `names`, only skills of those
    names (what a snapshot re-reads after a change).
    """
    skills = Skill.objects.filter(enabled=True)
    versions = SkillVersion.objects.filter(skill__enabled=True)
    if names is not None:
        skills = skills.filter(name__in=list(names))
        versions = versions.filter(skill__name__in=list(names))
    skills = skills.only("id", "name", "source", "enabled")
    winners = {winner.pk: winner for group in skills_by_name(skills).values() if (winner := skill_winner(group))}
    rows = _version_rows(versions, winners, label=label, pins=pins or {})
    found = [entry for skill_id, row in rows.items() if (entry := _effective(winners[skill_id], row)) is not None]
    found.sort(key=lambda s: s.name)
    return found


def _version_rows(
    versions: Any, winners: dict[int, Skill], *, label: str | None, pins: Mapping[str, int]
) -> dict[int, dict]:
    """{skill id: its version row} for the `winners` a request at `label` with `pins` reads."""
    pinned: dict[int, dict] = {}
    if pins:
        wanted = {skill_id: pins[skill.name] for skill_id, skill in winners.items() if skill.name in pins}
        rows = versions.filter(skill_id__in=list(wanted), number__in=set(wanted.values())).values(*_EFFECTIVE_FIELDS)
        pinned = {row["skill_id"]: row for row in rows if wanted[row["skill_id"]] == row["number"]}
        # A pinned skill is read at its pin or not at all: never at the label's version instead.
        winners = {key: skill for key, skill in winners.items() if skill.name not in pins or key in pinned}
    label_name = requested_label(label)
    labelled: dict[int, dict] = {}
    if label_name != LATEST:
        labelled = {row["skill_id"]: row for row in versions.filter(labels__name=label_name).values(*_EFFECTIVE_FIELDS)}
    chosen: dict[int, dict] = dict(pinned)
    at_latest: set[int] = set()
    for skill_id in winners:
        if skill_id in pinned:
            continue
        applied = label_applied(label=label, carried=(label_name,) if skill_id in labelled else ())
        if applied == LATEST:
            at_latest.add(skill_id)
        elif applied is not None:
            chosen[skill_id] = labelled[skill_id]
    if at_latest:
        for row in versions.filter(number=F("skill__latest_version")).values(*_EFFECTIVE_FIELDS):
            if row["skill_id"] in at_latest:
                chosen[row["skill_id"]] = row
    # A winner without a row is a skill whose first publish has not committed.
    return chosen


def _effective(skill: Skill, row: dict) -> EffectiveSkill | None:
    frontmatter = row["frontmatter"] if isinstance(row["frontmatter"], dict) else {}
    if frontmatter.get("enabled") is False:
        return None  # the SKILL.md itself says it is off
    return EffectiveSkill(
        skill_id=skill.pk,
        name=skill.name,
        source=skill.source,
        version=row["number"],
        description=row["description"],
        fingerprint=row["fingerprint"],
        tags=tuple(map(str, row["tags"] or ())),
        triggers=tuple(map(str, row["triggers"] or ())),
        tools=tuple(map(str, row["tools"] or ())),
        model_invocable=not _is_true(
            frontmatter.get("disable-model-invocation", frontmatter.get("disable_model_invocation"))
        ),
        requires=stored_requirements(frontmatter),
    )
