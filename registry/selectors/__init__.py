"""Read-side queries. Views and API call these instead of building querysets themselves."""

from __future__ import annotations

import difflib
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from django.db.models import F

from registry.bundle import Bundle, BundleFile
from registry.errors import NotFound
from registry.matching import MatchIndex, match, words
from registry.models import (
    ForceIncludeRule,
    Label,
    LabelHistory,
    Skill,
    SkillFile,
    SkillVersion,
)
from registry.selectors.accounts import AccountRow as AccountRow
from registry.selectors.accounts import account_list as account_list
from registry.selectors.audit import AuditEntry as AuditEntry
from registry.selectors.audit import AuditFilter as AuditFilter
from registry.selectors.audit import audit_log_for_user as audit_log_for_user
from registry.selectors.audit import audit_page as audit_page
from registry.selectors.tokens import TokenRow as TokenRow
from registry.selectors.tokens import api_token_get_for_user as api_token_get_for_user
from registry.selectors.tokens import api_token_list as api_token_list
from registry.selectors.tokens import api_tokens_for_user as api_tokens_for_user


def dashboard_stats() -> dict:
    return {
        "skills": Skill.objects.count(),
        "enabled_skills": Skill.objects.filter(enabled=True).count(),
        "versions": SkillVersion.objects.count(),
        "rules": ForceIncludeRule.objects.count(),
        "recent_versions": list(SkillVersion.objects.select_related("skill", "author").order_by("-created_at")[:10]),
    }


def version_bundle(version: SkillVersion) -> Bundle:
    """The exact bundle a version was published from (SKILL.md bytes and files with modes)."""
    files = tuple(
        BundleFile(path=f.path, content=bytes(f.blob.content), executable=f.executable, link=f.link)
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
        v.skill_id: v for v in SkillVersion.objects.filter(skill__in=skills).filter(number=F("skill__latest_version"))
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


# --- effective skills as plain rows (resolve, match, prompt blocks) -------------------------

_SUMMARY_FIELDS = (
    "id",
    "skill_id",
    "number",
    "name",
    "description",
    "fingerprint",
    "tags",
    "triggers",
    "tools",
    "frontmatter",
)


@dataclass(frozen=True)
class EffectiveSkillRow:
    """One effective, enabled skill at the version a reader gets, as plain values (no ORM rows)."""

    skill_id: int
    name: str
    source: str
    version: int
    version_id: int
    description: str
    fingerprint: str
    tags: tuple[str, ...]
    triggers: tuple[str, ...]
    tools: tuple[str, ...]
    frontmatter: dict
    labelled: bool  # True when the version came from the requested (or `production`) label


def effective_skill_rows(*, label: str | None = None) -> list[EffectiveSkillRow]:
    """Every effective enabled skill (precedence applied), at `label` where the skill has it.

    Like `skill_version_for`: no label means `production` where it exists, else latest; a named
    label falls back to latest for skills that do not carry it (so a new skill is visible before
    anyone labels it); `latest` means the newest version everywhere. Three queries, whatever the
    number of skills, and no SKILL.md text is loaded.
    """
    skills = list(Skill.objects.filter(enabled=True).only("id", "name", "source", "enabled", "latest_version"))
    by_name: dict[str, list[Skill]] = {}
    for skill in skills:
        by_name.setdefault(skill.name, []).append(skill)
    winners = {winner.pk: winner for group in by_name.values() if (winner := effective_skill(group))}

    label_name = "production" if label is None else label
    labelled: dict[int, dict] = {}
    if label_name != "latest":
        for row in SkillVersion.objects.filter(labels__name=label_name, skill__enabled=True).values(*_SUMMARY_FIELDS):
            if row["skill_id"] in winners:
                labelled[row["skill_id"]] = row
    latest = (
        {
            row["skill_id"]: row
            for row in SkillVersion.objects.filter(skill__enabled=True, number=F("skill__latest_version")).values(
                *_SUMMARY_FIELDS
            )
            if row["skill_id"] in winners and row["skill_id"] not in labelled
        }
        if len(labelled) < len(winners)
        else {}
    )
    rows = []
    for skill_id, skill in winners.items():
        row = labelled.get(skill_id) or latest.get(skill_id)
        if row is None:
            continue  # a skill row whose first publish has not committed
        rows.append(
            EffectiveSkillRow(
                skill_id=skill_id,
                name=skill.name,
                source=skill.source,
                version=row["number"],
                version_id=row["id"],
                description=row["description"],
                fingerprint=row["fingerprint"],
                tags=tuple(map(str, row["tags"] or ())),
                triggers=tuple(map(str, row["triggers"] or ())),
                tools=tuple(map(str, row["tools"] or ())),
                frontmatter=row["frontmatter"] or {},
                labelled=skill_id in labelled,
            )
        )
    rows.sort(key=lambda r: r.name)
    return rows


# --- the API's skill catalogue -------------------------------------------------------------


@dataclass(frozen=True)
class CatalogRow:
    skill: Skill
    version: SkillVersion  # the version shown: the label's with ?label=, else the newest
    effective: bool
    shadowed_by: str | None
    labels: dict[str, int]


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


_CATALOG: dict[int, _CatalogBase] = {}
_CATALOG_LOCK = threading.Lock()


def _catalog_base() -> _CatalogBase:
    """Built once per process and registry generation (every write bumps it), so listing and
    searching 1,000 skills costs no query and no model building on the pages that follow."""
    from registry.services.generation import current_generation

    generation = current_generation()
    with _CATALOG_LOCK:
        found = _CATALOG.get(generation)
    if found is not None:
        return found
    groups: dict[str, list[Skill]] = {}
    for skill in Skill.objects.order_by("name"):
        groups.setdefault(skill.name, []).append(skill)
    versions = {
        v.skill_id: v
        for v in SkillVersion.objects.filter(number=F("skill__latest_version")).defer("skill_md", "frontmatter")
    }
    labels: dict[int, dict[str, SkillVersion]] = {}
    for item in Label.objects.select_related("version").defer("version__skill_md", "version__frontmatter"):
        labels.setdefault(item.skill_id, {})[item.name] = item.version
    entries = []
    for group in groups.values():
        winner = effective_skill(group)
        representative = winner or max(group, key=lambda s: s.priority)
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
    with _CATALOG_LOCK:
        _CATALOG.clear()  # an older generation is never read again
        _CATALOG[generation] = base
    return base


def skill_catalog_cache_clear() -> None:
    with _CATALOG_LOCK:
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


def skill_with_others(*, name: str, source: str | None = None) -> tuple[Skill, list[Skill]]:
    """`skill_get` and `skill_others` in one query: the skill a page is about and the same name
    in the other sources, highest priority first."""
    candidates = list(Skill.objects.filter(name=name))
    chosen = [s for s in candidates if s.source == source] if source else candidates
    if not chosen:
        raise NotFound(f"No skill named '{name}'" + (f" in source '{source}'." if source else "."))
    skill = effective_skill(chosen) or max(chosen, key=lambda s: s.priority)
    return skill, sorted((s for s in candidates if s.pk != skill.pk), key=lambda s: -s.priority)


def skill_others(skill: Skill) -> list[Skill]:
    """The same name in other sources, highest priority first."""
    return sorted(Skill.objects.filter(name=skill.name).exclude(pk=skill.pk), key=lambda s: -s.priority)


# --- raw SKILL.md, cached per generation ---------------------------------------------------


@dataclass(frozen=True)
class RawSkillMd:
    content: bytes
    etag: str  # strong: the quoted sha256 of the bytes
    name: str
    version: int


_RAW_CACHE: OrderedDict[tuple, RawSkillMd] = OrderedDict()
_RAW_CACHE_MAX = 2048
_RAW_LOCK = threading.Lock()


def skill_md_raw(
    *,
    name: str,
    source: str | None = None,
    label: str | None = None,
    number: int | None = None,
    generation: int | None = None,
) -> RawSkillMd:
    """The exact SKILL.md bytes a reader gets, with their ETag.

    Kept in a per-process LRU keyed by the current registry generation: a hit costs no ORM
    work, and any publish, label move or enable/disable changes the key, so a stale answer is
    impossible across processes.
    """
    from registry.services.generation import current_generation

    generation = current_generation() if generation is None else generation
    key = (generation, name, source, label, number)
    with _RAW_LOCK:
        found = _RAW_CACHE.get(key)
        if found is not None:
            _RAW_CACHE.move_to_end(key)
            return found
    skill = skill_get(name=name, source=source)
    version = skill_version_for(skill=skill, label=label, number=number)
    content = version.skill_md.encode("utf-8")
    raw = RawSkillMd(
        content=content, etag=f'"{hashlib.sha256(content).hexdigest()}"', name=skill.name, version=version.number
    )
    with _RAW_LOCK:
        _RAW_CACHE[key] = raw
        while len(_RAW_CACHE) > _RAW_CACHE_MAX:
            _RAW_CACHE.popitem(last=False)
    return raw


def skill_md_raw_cache_clear() -> None:
    with _RAW_LOCK:
        _RAW_CACHE.clear()


# --- versions, labels and diffs (API and console) -----------------------------------------


def skill_labels(skill: Skill) -> dict[str, int]:
    """Label name -> version number."""
    return dict(skill.labels.values_list("name", "version__number"))


def skill_versions(skill: Skill) -> list[SkillVersion]:
    """Every version, newest first, without the SKILL.md text (authors joined)."""
    return list(skill.versions.select_related("author").defer("skill_md", "frontmatter").order_by("-number"))


def skill_label_history(skill: Skill, *, limit: int = 200) -> list[LabelHistory]:
    return list(LabelHistory.objects.filter(skill=skill).select_related("changed_by")[:limit])


def version_files(version: SkillVersion) -> list[SkillFile]:
    return list(version.files.order_by("path"))


def version_file(version: SkillVersion, path: str) -> SkillFile:
    item = version.files.filter(path=path).select_related("blob").first()
    if item is None:
        raise NotFound(f"'{version.name}' v{version.number} has no file '{path}'.")
    return item


DIFF_TEXT_MAX = 256 * 1024


def text_lines(content: bytes) -> list[str] | None:
    """The lines of a text file, or None for binary or oversized content (not diffed)."""
    if len(content) > DIFF_TEXT_MAX or b"\x00" in content:
        return None
    try:
        return content.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_diff(before: str, after: str, *, from_name: str, to_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=from_name, tofile=to_name
        )
    )


@dataclass(frozen=True)
class FileChange:
    path: str
    change: str  # added | removed | modified | mode
    size_before: int | None
    size_after: int | None
    executable_before: bool | None
    executable_after: bool | None
    link_before: str | None  # the link's target, when the file was a link
    link_after: str | None
    diff: str | None  # unified diff; None for binary files and mode-only changes


@dataclass(frozen=True)
class VersionDiff:
    old: SkillVersion | None  # None: `new` is compared with nothing (the first version)
    new: SkillVersion
    skill_md_diff: str
    files: list[FileChange] = field(default_factory=list)
    unchanged_files: int = 0


def skill_version_diff(*, old: SkillVersion | None, new: SkillVersion) -> VersionDiff:
    """SKILL.md and bundle-file changes from `old` to `new` (unified diffs, text files only)."""
    skill_md_diff = unified_diff(
        old.skill_md if old else "",
        new.skill_md,
        from_name=f"a/SKILL.md (v{old.number})" if old else "/dev/null",
        to_name=f"b/SKILL.md (v{new.number})",
    )
    old_files = {f.path: f for f in old.files.select_related("blob")} if old else {}
    new_files = {f.path: f for f in new.files.select_related("blob")}
    changes, unchanged = [], 0
    for path in sorted(set(old_files) | set(new_files)):
        a, b = old_files.get(path), new_files.get(path)
        if a and b and (a.blob_id, a.executable, a.link) == (b.blob_id, b.executable, b.link):
            unchanged += 1
            continue
        if a is None or b is None:
            change = "added" if a is None else "removed"
        else:
            change = "modified" if (a.blob_id, a.link) != (b.blob_id, b.link) else "mode"
        diff = None
        if change != "mode":
            lines_a = text_lines(bytes(a.blob.content)) if a else []
            lines_b = text_lines(bytes(b.blob.content)) if b else []
            if lines_a is not None and lines_b is not None:
                from_name, to_name = (f"a/{path}" if a else "/dev/null"), (f"b/{path}" if b else "/dev/null")
                diff = "".join(difflib.unified_diff(lines_a, lines_b, fromfile=from_name, tofile=to_name))
        changes.append(
            FileChange(
                path=path,
                change=change,
                size_before=a.size if a else None,
                size_after=b.size if b else None,
                executable_before=a.executable if a else None,
                executable_after=b.executable if b else None,
                link_before=a.link if a else None,
                link_after=b.link if b else None,
                diff=diff,
            )
        )
    return VersionDiff(old=old, new=new, skill_md_diff=skill_md_diff, files=changes, unchanged_files=unchanged)


# Areas with their own modules; re-exported so callers keep writing `selectors.rule_list()`.
from registry.selectors.rules import (  # noqa: E402, F401
    RuleRow,
    RuleSkill,
    SkillChoice,
    rule_get,
    rule_list,
    rule_skill_choices,
)
