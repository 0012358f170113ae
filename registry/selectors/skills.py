"""Skills: which source wins a name, the version a reader gets, the catalogue and raw SKILL.md.

Precedence (seed 002: bundled < user < workspace) is decided in one place, `skill_winner`; every
read that picks "the" skill of a name goes through it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from django.db.models import F

from registry.errors import NotFound
from registry.matching.ranking import MatchIndex, match, words
from registry.models import Label, Skill, SkillVersion
from registry.selectors.generation import current_generation
from registry.selectors.memo import GenerationMemo


def skill_winner(candidates: Iterable[Skill]) -> Skill | None:
    """The effective skill among one name's skills: the enabled one of highest priority."""
    enabled = [s for s in candidates if s.enabled]
    return max(enabled, key=lambda s: s.priority) if enabled else None


def _representative(candidates: list[Skill]) -> Skill:
    """The winner, or the highest-priority skill when all are disabled (so it can be inspected
    and re-enabled)."""
    return skill_winner(candidates) or max(candidates, key=lambda s: s.priority)


def _by_name(skills: Iterable[Skill]) -> dict[str, list[Skill]]:
    groups: dict[str, list[Skill]] = {}
    for skill in skills:
        groups.setdefault(skill.name, []).append(skill)
    return groups


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
    for name_skills in _by_name(skills).values():
        winner = skill_winner(name_skills)
        for skill in sorted(name_skills, key=lambda s: -s.priority):
            if skill is winner:
                rows.append(SkillRow(skill, newest.get(skill.pk), None))
            elif include_shadowed and (skill.enabled or include_disabled):
                rows.append(SkillRow(skill, newest.get(skill.pk), winner.source if winner and skill.enabled else None))
    return rows


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


def _not_found(name: str, source: str | None) -> NotFound:
    return NotFound(f"No skill named '{name}'" + (f" in source '{source}'." if source else "."))


def skill_get(*, name: str, source: str | None = None) -> Skill:
    """The effective skill for a name, or the one in `source`; NotFound otherwise.

    A name whose skills are all disabled still resolves (to the highest-priority one), so it
    can be inspected and re-enabled.
    """
    candidates = skills_named(name=name, source=source)
    if not candidates:
        raise _not_found(name, source)
    return _representative(candidates)


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
            name: _representative(candidates).source
            for name, candidates in _by_name(Skill.objects.only("name", "source", "enabled")).items()
        }
        _SOURCES.put((generation,), every)
    return {name: every[name] for name in names if name in every}


_SOURCES: GenerationMemo[dict[str, str]] = GenerationMemo(maxsize=1)


def skill_sources_cache_clear() -> None:
    _SOURCES.clear()


def skill_with_others(*, name: str, source: str | None = None) -> tuple[Skill, list[Skill]]:
    """`skill_get` and `skill_others` in one query: the skill a page is about and the same name
    in the other sources, highest priority first."""
    candidates = list(Skill.objects.filter(name=name))
    chosen = [s for s in candidates if s.source == source] if source else candidates
    if not chosen:
        raise _not_found(name, source)
    skill = _representative(chosen)
    return skill, sorted((s for s in candidates if s.pk != skill.pk), key=lambda s: -s.priority)


def skill_others(skill: Skill) -> list[Skill]:
    """The same name in other sources, highest priority first."""
    return sorted(Skill.objects.filter(name=skill.name).exclude(pk=skill.pk), key=lambda s: -s.priority)


# --- effective skills as plain values (resolve, match, prompt blocks, the runtime) ----------

_EFFECTIVE_FIELDS = ("skill_id", "number", "description", "fingerprint", "tags", "triggers", "tools", "frontmatter")


@dataclass(frozen=True)
class EffectiveSkill:
    """One effective, enabled skill at the version a reader gets, as plain values: the one
    shape resolve, matching, the prompt block and (through agents/store.py) the runtime use."""

    skill_id: int
    name: str
    source: str
    version: int
    description: str
    fingerprint: str
    tags: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    model_invocable: bool = True  # false for `disable-model-invocation: true`: listed only when forced


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1"))


def effective_skills(
    *, label: str | None = None, names: Collection[str] | None = None, pins: Mapping[str, int] | None = None
) -> list[EffectiveSkill]:
    """Every effective enabled skill (precedence applied) by name, at `label` where it has it.

    Like `skill_version_for`: no label means `production` where it exists, else latest; a named
    label falls back to latest for skills that do not carry it (so a new skill is visible before
    anyone labels it); `latest` means the newest version everywhere. `pins` ({name: number})
    reads those skills at that exact version instead, whatever the label says (a turn trying a
    version before it is promoted); a pin chooses a version, never a source, so it applies to the
    skill that wins the name, and a pinned number it does not have leaves the skill out. A skill
    whose SKILL.md says `enabled: false` is left out. Three queries (four with pins), whatever
    the number of skills, and no SKILL.md text is loaded. With `names`, only skills of those
    names (what a resolve snapshot re-reads after a change, registry/selectors/snapshot_delta.py).
    """
    skills = Skill.objects.filter(enabled=True)
    versions = SkillVersion.objects.filter(skill__enabled=True)
    if names is not None:
        skills = skills.filter(name__in=list(names))
        versions = versions.filter(skill__name__in=list(names))
    skills = skills.only("id", "name", "source", "enabled")
    winners = {winner.pk: winner for group in _by_name(skills).values() if (winner := skill_winner(group))}

    pinned: dict[int, dict] = {}
    if pins:
        wanted = {skill_id: pins[skill.name] for skill_id, skill in winners.items() if skill.name in pins}
        rows = versions.filter(skill_id__in=list(wanted), number__in=set(wanted.values())).values(*_EFFECTIVE_FIELDS)
        pinned = {row["skill_id"]: row for row in rows if wanted[row["skill_id"]] == row["number"]}
        # A pinned skill is read at its pin or not at all: never at the label's version instead.
        winners = {key: skill for key, skill in winners.items() if skill.name not in pins or key in pinned}

    label_name = "production" if label is None else label
    labelled: dict[int, dict] = dict(pinned)
    if label_name != "latest":
        for row in versions.filter(labels__name=label_name).values(*_EFFECTIVE_FIELDS):
            if row["skill_id"] in winners and row["skill_id"] not in pinned:
                labelled[row["skill_id"]] = row
    latest = (
        {
            row["skill_id"]: row
            for row in versions.filter(number=F("skill__latest_version")).values(*_EFFECTIVE_FIELDS)
            if row["skill_id"] in winners and row["skill_id"] not in labelled
        }
        if len(labelled) < len(winners)
        else {}
    )
    found = []
    for skill_id, skill in winners.items():
        row = labelled.get(skill_id) or latest.get(skill_id)
        if row is None:
            continue  # a skill row whose first publish has not committed
        frontmatter = row["frontmatter"] if isinstance(row["frontmatter"], dict) else {}
        if frontmatter.get("enabled") is False:
            continue  # the SKILL.md itself says it is off
        found.append(
            EffectiveSkill(
                skill_id=skill_id,
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
            )
        )
    found.sort(key=lambda s: s.name)
    return found


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
        return self.labels.get("production", self.skill.latest_version)


@dataclass(frozen=True)
class _CatalogEntry:
    """One skill with precedence already applied and its versions at hand."""

    skill: Skill
    newest: SkillVersion
    effective: bool  # this skill wins its name
    representative: bool  # listed by default: the winner, or the top-priority one when all are disabled
    shadowed_by: str | None
    label_versions: dict[str, SkillVersion]
    label_numbers: dict[str, int]


@dataclass(frozen=True)
class _CatalogBase:
    """Every skill of one registry generation, by name then priority, and a search index."""

    entries: list[_CatalogEntry]
    index: MatchIndex  # over every skill's newest version, for `q` without `label`


_CATALOG: GenerationMemo[_CatalogBase] = GenerationMemo(maxsize=1)


def _catalog_base() -> _CatalogBase:
    """Built once per process and registry generation (every write bumps it), so listing and
    searching 1,000 skills costs no query and no model building on the pages that follow."""
    generation = current_generation()
    found = _CATALOG.get((generation,))
    if found is not None:
        return found
    versions = {
        v.skill_id: v
        for v in SkillVersion.objects.filter(number=F("skill__latest_version")).defer("skill_md", "body", "frontmatter")
    }
    labels: dict[int, dict[str, SkillVersion]] = {}
    text_fields = ("version__skill_md", "version__body", "version__frontmatter")
    for item in Label.objects.select_related("version").defer(*text_fields):
        labels.setdefault(item.skill_id, {})[item.name] = item.version
    entries = []
    for group in _by_name(Skill.objects.order_by("name")).values():
        winner = skill_winner(group)
        representative = _representative(group)
        for skill in sorted(group, key=lambda s: -s.priority):
            if skill.pk not in versions:
                continue  # a skill row whose first publish has not committed
            labelled = labels.get(skill.pk, {})
            entries.append(
                _CatalogEntry(
                    skill=skill,
                    newest=versions[skill.pk],
                    effective=skill is winner,
                    representative=skill is representative,
                    shadowed_by=winner.source if winner is not None and skill is not winner and skill.enabled else None,
                    label_versions=labelled,
                    label_numbers={name: v.number for name, v in labelled.items()},
                )
            )
    index = MatchIndex(_CatalogDoc(entry.skill.pk, entry.newest) for entry in entries)
    base = _CatalogBase(entries, index)
    _CATALOG.put((generation,), base)
    return base


def skill_catalog_cache_clear() -> None:
    _CATALOG.clear()


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
    base = _catalog_base()
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
        if label and label != "latest":
            if label not in entry.label_versions:
                continue
            version = entry.label_versions[label]
        if tag and tag not in {str(t).lower() for t in version.tags or ()}:
            continue
        if trigger and trigger not in {str(t).lower() for t in version.triggers or ()}:
            continue
        rows.append(CatalogRow(skill, version, entry.effective, entry.shadowed_by, entry.label_numbers))

    if q and q.strip():
        # Search as you type: every typed word is a prefix/substring of the skill's text, or the
        # skill matches by relevance (stems, stop words); relevance orders the result.
        typed = words(q)
        if label:  # rows show the label's version: rank what is shown
            found = match(q, [_CatalogDoc(r.skill.pk, r.version) for r in rows])
        else:
            found = match(q, base.index)
        ranked = {m.skill.skill_id: m.score for m in found}

        def haystack(row: CatalogRow) -> str:
            return " ".join([row.skill.name, row.version.description, *map(str, row.version.tags or ())]).lower()

        rows = [r for r in rows if r.skill.pk in ranked or all(w in haystack(r) for w in typed)]
        rows.sort(key=lambda r: (-ranked.get(r.skill.pk, 0.0), r.skill.name))
    return rows


class _CatalogDoc:
    """A skill's version as matching sees it (name, description, tags)."""

    __slots__ = ("skill_id", "name", "description", "tags")

    def __init__(self, skill_id: int, version: SkillVersion) -> None:
        self.skill_id = skill_id
        self.name = version.name
        self.description = version.description
        self.tags = version.tags or ()


# --- raw SKILL.md, cached per generation ---------------------------------------------------


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
) -> RawSkillMd:
    """The exact SKILL.md bytes a reader gets, with their ETag.

    Kept per process, keyed by the current registry generation: a hit costs no ORM work, and
    any publish, label move or enable/disable changes the key, so a stale answer is impossible
    across processes.
    """
    generation = current_generation() if generation is None else generation
    key = (generation, name, source, label, number)
    found = _RAW.get(key)
    if found is not None:
        return found
    skill = skill_get(name=name, source=source)
    version = skill_version_for(skill=skill, label=label, number=number)
    content = version.skill_md.encode("utf-8")
    raw = RawSkillMd(
        content=content, etag=f'"{hashlib.sha256(content).hexdigest()}"', name=skill.name, version=version.number
    )
    _RAW.put(key, raw)
    return raw


def skill_md_raw_cache_clear() -> None:
    _RAW.clear()
