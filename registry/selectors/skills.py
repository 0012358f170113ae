"""Skills as the API and the console list them: the skill list with precedence, the others of a
name, and the catalogue filtered and searched.

Which skill wins a name and which version a request gets are the read model's answers
(registry/readmodel/); the names most callers know are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F

from registry.matching.index import TermIndex, match
from registry.matching.ranking import words
from registry.models import Skill, SkillVersion
from registry.readmodel.catalog import CatalogDoc, search_key, skill_catalog_entries
from registry.readmodel.effective import effective_skills as effective_skills
from registry.readmodel.effective import label_applied, skill_representative, skills_by_name
from registry.readmodel.effective import skill_winner as skill_winner
from registry.readmodel.served import RawSkillMd as RawSkillMd
from registry.readmodel.served import skill_get as skill_get
from registry.readmodel.served import skill_md_raw as skill_md_raw
from registry.readmodel.served import skill_not_found
from registry.readmodel.served import skill_sources as skill_sources
from registry.readmodel.served import skill_version_for as skill_version_for
from registry.readmodel.served import skills_named as skills_named
from registry.readmodel.skill import EffectiveSkill as EffectiveSkill
from registry.skillformat.skillmd import tag_list


@dataclass(frozen=True)
class SkillRow:
    skill: Skill
    version: SkillVersion | None  # the newest version
    shadowed_by: str | None  # source of the skill that wins this name, when it is not this one


def skill_list(*, include_shadowed: bool = False, include_disabled: bool | None = None) -> list[SkillRow]:
    """Skills by name with precedence applied.

    The effective skill of a name is its enabled skill of highest priority. With
    `include_shadowed`, the others are listed too, marked with the source that shadows them;
    disabled skills follow `include_disabled` (default: shown only with `include_shadowed`).
    """
    if include_disabled is None:
        include_disabled = include_shadowed
    skills = list(Skill.objects.order_by("name"))
    newest = {
        v.skill_id: v for v in SkillVersion.objects.filter(skill__in=skills).filter(number=F("skill__latest_version"))
    }
    rows: list[SkillRow] = []
    for name_skills in skills_by_name(skills).values():
        winner = skill_winner(name_skills)
        for skill in sorted(name_skills, key=lambda s: -s.priority):
            if skill is winner:
                rows.append(SkillRow(skill, newest.get(skill.pk), None))
            elif include_shadowed and (skill.enabled or include_disabled):
                rows.append(SkillRow(skill, newest.get(skill.pk), winner.source if winner and skill.enabled else None))
    return rows


def skill_with_others(*, name: str, source: str | None = None) -> tuple[Skill, list[Skill]]:
    """`skill_get` and `skill_others` in one query: the skill a page is about and the same name
    in the other sources, highest priority first."""
    candidates = list(Skill.objects.filter(name=name))
    chosen = [s for s in candidates if s.source == source] if source else candidates
    if not chosen:
        raise skill_not_found(name, source)
    skill = skill_representative(chosen)
    return skill, sorted((s for s in candidates if s.pk != skill.pk), key=lambda s: -s.priority)


def skill_others(skill: Skill) -> list[Skill]:
    """The same name in other sources, highest priority first."""
    return sorted(Skill.objects.filter(name=skill.name).exclude(pk=skill.pk), key=lambda s: -s.priority)


# --- the API's and the console's skill catalogue --------------------------------------------


@dataclass(frozen=True)
class CatalogRow:
    skill: Skill
    version: SkillVersion  # the version shown: the label's with ?label=, else the newest
    effective: bool
    shadowed_by: str | None
    labels: dict[str, int]

    @property
    def served(self) -> int:
        """The version number `skill_version_for` gives a reader who names no label or version:
        production where it is set, else the newest (property-tested against it)."""
        applied = label_applied(label=None, carried=self.labels)
        return self.labels[applied] if applied in self.labels else self.skill.latest_version


def skill_catalog(
    *,
    q: str = "",
    tag: str | None = None,
    trigger: str | None = None,
    source: str | None = None,
    enabled: bool | None = None,
    label: str | None = None,
    shadowed: bool = False,
) -> list[CatalogRow]:
    """Skills for `GET /skills` and the console list: one row per name (the effective skill, or
    the highest-priority one when all are disabled), or every source's row with
    `shadowed`/`source`. Metadata only: SKILL.md text is never loaded. With `q`, rows are
    ordered by match relevance."""
    base = skill_catalog_entries()
    tag, trigger = (tag or "").lower(), (trigger or "").lower()
    rows: list[CatalogRow] = []
    for entry in base.entries:
        skill = entry.skill
        if source is not None and skill.source != source:
            continue
        if not (shadowed or source is not None or entry.representative):
            continue
        if enabled is not None and skill.enabled != enabled:
            continue
        version = entry.newest
        if label:
            applied = label_applied(label=label, carried=entry.label_versions)
            if applied is None:
                continue
            version = entry.label_versions.get(applied, version)
        if tag and tag not in {t.lower() for t in tag_list(version.tags or ())}:
            continue
        if trigger and trigger not in {str(t).lower() for t in version.triggers or ()}:
            continue
        rows.append(CatalogRow(skill, version, entry.effective, entry.shadowed_by, entry.label_numbers))

    if q and q.strip():
        # Search as you type: every typed word is a prefix/substring of the skill's text, or the
        # skill matches by relevance (stems, stop words); relevance orders the result.
        typed = words(q)
        if label:  # rows show the label's version: rank what is shown
            found = match(q, TermIndex((CatalogDoc(r.skill.pk, r.version) for r in rows), key=search_key))
        else:
            found = match(q, base.index)
        ranked = {m.skill.skill_id: m.score for m in found}

        def haystack(row: CatalogRow) -> str:
            return " ".join([row.skill.name, row.version.description, *map(str, row.version.tags or ())]).lower()

        rows = [r for r in rows if r.skill.pk in ranked or all(w in haystack(r) for w in typed)]
        rows.sort(key=lambda r: (-ranked.get(r.skill.pk, 0.0), r.skill.name))
    return rows
