"""The catalogue of every skill (any source, enabled or not) that `GET /skills` and the console's
list read: one entry per skill with precedence applied, its newest version and its labels.

Kept per process and moved forward the way resolve's snapshots are (registry/readmodel/snapshot.py):
after a write that names the skills it changed, only those names are read again, so the list right
after a publish costs three small queries rather than reading every skill and version. The search
index over the newest versions is built when a search first asks for it, not with every move.
"""

from __future__ import annotations

import heapq
import operator
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from django.db.models import F

from registry.matching.index import TermIndex
from registry.models import Label, Skill, SkillVersion
from registry.readmodel.effective import skill_representative, skill_winner, skills_by_name
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.snapshot import registry_delta


@dataclass(frozen=True)
class CatalogEntry:
    """One skill with precedence already applied and its versions at hand."""

    skill: Skill
    newest: SkillVersion
    effective: bool  # this skill wins its name
    representative: bool  # listed by default: the winner, or the top-priority one when all are disabled
    shadowed_by: str | None
    label_versions: dict[str, SkillVersion]
    label_numbers: dict[str, int]
    order: tuple[str, int]  # (name, -priority): where it is listed
    doc: CatalogDoc  # what search matches; one object per entry, so a moved-forward index can reuse it


class CatalogDoc:
    """A skill's version as matching sees it (name, description, tags)."""

    __slots__ = ("skill_id", "name", "description", "tags")

    def __init__(self, skill_id: int, version: SkillVersion) -> None:
        self.skill_id = skill_id
        self.name = version.name
        self.description = version.description
        self.tags = version.tags or ()


def search_key(doc: CatalogDoc) -> int:
    return doc.skill_id


class _SearchIndex:
    """The ranker resolve uses (`TermIndex`) over the entries' newest versions, keyed by skill id
    (a name can have a skill per source), built on first use and shared by every catalogue whose
    entries are the same (a change of rules only). Built after a move forward, it reuses what the
    previous catalogue's index tokenised for the entries both hold."""

    _previous: _SearchIndex | None
    _index: TermIndex | None

    def __init__(self, entries: tuple[CatalogEntry, ...], previous: _SearchIndex | None = None) -> None:
        self._entries = entries
        # The newest index built before this one: unbuilt ones in between are skipped, so a run of
        # publishes with no search holds on to one old catalogue, not all of them.
        while previous is not None and previous._index is None:
            previous = previous._previous
        self._previous = previous
        self._index = None
        self._lock = threading.Lock()

    def get(self) -> TermIndex:
        with self._lock:
            if self._index is None:
                docs = (entry.doc for entry in self._entries)
                held = self._previous._index if self._previous is not None else None
                self._index = TermIndex(docs, key=search_key) if held is None else held.moved_to(docs)
                self._previous = None  # nothing more to reuse: let the old catalogue go
            return self._index


@dataclass(frozen=True)
class Catalog:
    """Every skill of one registry generation, by name then priority (highest first)."""

    generation: int
    entries: tuple[CatalogEntry, ...]
    search: _SearchIndex

    @property
    def index(self) -> TermIndex:
        return self.search.get()


_CATALOG: GenerationMemo[Catalog] = GenerationMemo(maxsize=1)


def skill_catalog_entries() -> Catalog:
    """The catalogue as of the current generation: held, moved forward, or built."""
    generation = current_generation()
    found = _CATALOG.get((generation,))
    if found is not None:
        return found
    # Two threads may build it at once: same result.
    catalog = _advanced(generation) or _catalog(generation, _entries(names=None))
    _CATALOG.put((generation,), catalog)
    return catalog


def _catalog(generation: int, entries: Iterable[CatalogEntry]) -> Catalog:
    ordered = tuple(sorted(entries, key=_ORDER))
    return Catalog(generation=generation, entries=ordered, search=_SearchIndex(ordered))


_ORDER = operator.attrgetter("order")


def _advanced(generation: int) -> Catalog | None:
    """The held catalogue with the skills changed since re-read; None when none is held or the
    change log cannot say what changed."""
    previous = _CATALOG.newest_before(generation)
    if previous is None:
        return None
    delta = registry_delta(since=previous.generation, until=generation)
    if delta is None:
        return None
    if not delta.skills:
        return Catalog(generation=generation, entries=previous.entries, search=previous.search)
    kept = (entry for entry in previous.entries if entry.skill.name not in delta.skills)
    # The kept entries are in order already: merging in the few re-read ones costs no sort.
    ordered = tuple(heapq.merge(kept, sorted(_entries(names=delta.skills), key=_ORDER), key=_ORDER))
    return Catalog(generation=generation, entries=ordered, search=_SearchIndex(ordered, previous.search))


def _entries(*, names: Collection[str] | None) -> list[CatalogEntry]:
    """Catalogue entries for every skill, or for the skills of `names` (all their sources)."""
    skills = list(Skill.objects.all() if names is None else Skill.objects.filter(name__in=list(names)))
    versions = SkillVersion.objects.filter(number=F("skill__latest_version"))
    labels = Label.objects.select_related("version")
    if names is not None:
        # By the skills' ids, which their indexes answer, not by a join on the name.
        ids = [skill.pk for skill in skills]
        versions = versions.filter(skill_id__in=ids)
        labels = labels.filter(skill_id__in=ids)
    newest = {v.skill_id: v for v in versions.defer("skill_md", "body", "frontmatter")}
    labelled: dict[int, dict[str, SkillVersion]] = {}
    for item in labels.defer("version__skill_md", "version__body", "version__frontmatter"):
        labelled.setdefault(item.skill_id, {})[item.name] = item.version
    entries = []
    for group in skills_by_name(skills).values():
        winner = skill_winner(group)
        representative = skill_representative(group)
        for skill in group:
            if skill.pk not in newest:
                continue  # a skill row whose first publish has not committed
            versions_by_label = labelled.get(skill.pk, {})
            entries.append(
                CatalogEntry(
                    skill=skill,
                    newest=newest[skill.pk],
                    effective=skill is winner,
                    representative=skill is representative,
                    shadowed_by=winner.source if winner is not None and skill is not winner and skill.enabled else None,
                    label_versions=versions_by_label,
                    label_numbers={name: v.number for name, v in versions_by_label.items()},
                    order=(skill.name, -skill.priority),
                    doc=CatalogDoc(skill.pk, newest[skill.pk]),
                )
            )
    return entries
