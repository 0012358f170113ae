"""Read-side queries. Views and API call these instead of building querysets themselves."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F

from registry.bundle import Bundle, BundleFile
from registry.errors import NotFound
from registry.models import ForceIncludeRule, Label, Skill, SkillVersion, UsageEvent


def dashboard_stats() -> dict:
    return {
        "skills": Skill.objects.count(),
        "enabled_skills": Skill.objects.filter(enabled=True).count(),
        "versions": SkillVersion.objects.count(),
        "rules": ForceIncludeRule.objects.count(),
        "usage_events": UsageEvent.objects.count(),
        "recent_versions": list(SkillVersion.objects.select_related("skill", "author").order_by("-created_at")[:10]),
    }


def version_bundle(version: SkillVersion) -> Bundle:
    """The exact bundle a version was published from (SKILL.md bytes and files with modes)."""
    files = tuple(
        BundleFile(path=f.path, content=bytes(f.blob.content), executable=f.executable)
        for f in version.files.select_related("blob").order_by("path")
    )
    return Bundle(skill_md=version.skill_md.encode("utf-8"), files=files)


@dataclass(frozen=True)
class SkillRow:
    skill: Skill
    version: SkillVersion | None  # the newest version
    shadowed_by: str | None  # source of the skill that wins this name, when it is not this one


def skill_list(*, include_shadowed: bool = False, include_disabled: bool | None = None) -> list[SkillRow]:
    """Skills by name with precedence applied (seed 002: bundled < user < workspace).

    The effective skill of a name is its enabled skill of highest priority. With
    `include_shadowed`, the others are listed too, marked with the source that shadows them;
    disabled skills follow `include_disabled` (default: shown only with `include_shadowed`).
    """
    if include_disabled is None:
        include_disabled = include_shadowed
    skills = list(Skill.objects.order_by("name"))
    newest = {
        v.skill_id: v
        for v in SkillVersion.objects.filter(skill__in=skills).filter(number=F("skill__latest_version"))
    }
    by_name: dict[str, list[Skill]] = {}
    for skill in skills:
        by_name.setdefault(skill.name, []).append(skill)
    rows: list[SkillRow] = []
    for name_skills in by_name.values():
        winner = effective_skill(name_skills)
        for skill in sorted(name_skills, key=lambda s: -s.priority):
            if skill is winner:
                rows.append(SkillRow(skill, newest.get(skill.pk), None))
            elif include_shadowed and (skill.enabled or include_disabled):
                rows.append(SkillRow(skill, newest.get(skill.pk), winner.source if winner and skill.enabled else None))
    return rows


def effective_skill(candidates: list[Skill]) -> Skill | None:
    enabled = [s for s in candidates if s.enabled]
    return max(enabled, key=lambda s: s.priority) if enabled else None


def skill_version_for(*, skill: Skill, label: str | None = None, number: int | None = None) -> SkillVersion:
    """The version a reader gets: an explicit number, a label, else `production` if set, else latest."""
    if number is not None:
        version = skill.versions.filter(number=number).first()
        if version is None:
            raise NotFound(f"'{skill.name}' has no version {number}.")
        return version
    if label and label != "latest":
        found = Label.objects.select_related("version").filter(skill=skill, name=label).first()
        if found is None:
            raise NotFound(f"'{skill.name}' has no label '{label}'.")
        return found.version
    if label is None:
        production = Label.objects.select_related("version").filter(skill=skill, name="production").first()
        if production is not None:
            return production.version
    version = skill.versions.filter(number=skill.latest_version).first()
    if version is None:
        raise NotFound(f"'{skill.name}' has no versions.")
    return version


def skill_get(*, name: str, source: str | None = None) -> Skill:
    """The effective skill for a name, or the one in `source`; NotFound otherwise.

    A name whose skills are all disabled still resolves (to the highest-priority one), so it
    can be inspected and re-enabled.
    """
    candidates = list(Skill.objects.filter(name=name, **({"source": source} if source else {})))
    if not candidates:
        raise NotFound(f"No skill named '{name}'" + (f" in source '{source}'." if source else "."))
    return effective_skill(candidates) or max(candidates, key=lambda s: s.priority)
