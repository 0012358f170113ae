"""The one ranker, and what makes resolve for a new query cheap: an inverted index over the
skills (the resolve snapshot's, and the catalogue the console and `GET /skills` search), RE2
sets over the rule patterns, and a ranking that only orders what a prompt block can list.

An agent resolves once per turn with the user's message, almost never a query it sent before, so
the result cache rarely helps; the work per query has to be small. The answers are exactly those
of the straightforward matcher (every skill scored in turn, every rule pattern searched in turn,
the whole ranking sorted), which tests/registry/ranking_oracle.py and resolve_oracle.py keep as
the oracle that tests/registry/test_matching_index.py compares with on random registries and
queries; only the work differs:

- `TermIndex` scores only the skills that share a term with the query, from per-term
  contributions computed once per snapshot, and builds reasons only for the skills it returns;
- `RuleSet` asks one RE2 set per bucket of rule patterns which of them can match, so only those
  are searched again (for the span the reason quotes);
- `rank_for_block` picks the few best matches with a heap instead of sorting them all.

Both indexes are immutable once built; `with_changes` makes the next one from the previous one
(registry/readmodel/snapshot.py), so a resolve still using the old one is never disturbed.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

import re2

from registry.matching.patterns import query_max_chars
from registry.matching.ranking import (
    BM25_FIELDS,
    BM25_K1,
    NAME_PHRASE_BONUS,
    SATURATION,
    STOP_WORDS,
    Match,
    SkillLike,
    contains_sequence,
    skill_terms,
    stem,
    words,
)

_FIELD_NAMES = tuple(f for f, _, _ in BM25_FIELDS)
# (position in BM25_FIELDS, reason prefix), in the order reasons are given.
_REASONS = tuple(
    (_FIELD_NAMES.index(field_name), label)
    for field_name, label in (
        ("name", "name matches: "),
        ("tags", "tags match: "),
        ("description", "description matches: "),
    )
)

_BY_NAME = attrgetter("name")


@dataclass(frozen=True)
class _Doc:
    skill: Any
    fields: tuple[Counter, ...]  # term counts, in BM25_FIELDS order
    lengths: tuple[int, ...]
    name_terms: tuple[str, ...]
    surface: dict[str, str]  # stem -> a word as written in the skill, for reasons
    terms: dict[str, int]  # stem -> the fields it is in, bit i for BM25_FIELDS[i]

    @classmethod
    def of(cls, skill: SkillLike) -> _Doc:
        per_field, surface = skill_terms(skill)
        terms: dict[str, int] = {}
        for position, field_name in enumerate(_FIELD_NAMES):
            for term in per_field[field_name]:
                terms[term] = terms.get(term, 0) | 1 << position
        return cls(
            skill=skill,
            fields=tuple(Counter(per_field[f]) for f in _FIELD_NAMES),
            lengths=tuple(len(per_field[f]) for f in _FIELD_NAMES),
            name_terms=tuple(per_field["name"]),
            surface=surface,
            terms=terms,
        )


@dataclass(frozen=True)
class _Query:
    terms: tuple[str, ...]  # distinct stems, in query order
    sequence: tuple[str, ...]  # every stem, in query order (for the name-phrase bonus)
    shown: dict[str, str]  # stem -> the word as the query wrote it

    @classmethod
    def parse(cls, text: str) -> _Query:
        query_words = [w for w in words(text) if w not in STOP_WORDS]
        stems = [stem(w) for w in query_words]
        shown: dict[str, str] = {}
        for w, t in zip(query_words, stems, strict=True):
            shown.setdefault(t, w)
        return cls(terms=tuple(dict.fromkeys(stems)), sequence=tuple(stems), shown=shown)


class TermIndex:
    """BM25F scoring over an inverted index (term -> keys of the skills that have it). Skills are
    keyed by name unless `key` says otherwise (the catalogue, where a name can have a skill per
    source, keys by id); keys must be unique.

    BM25's corpus statistics (document frequencies, average field lengths) change with every
    skill added or removed, so what depends on them — each term's contribution to each skill's
    score — is computed the first time a query needs that term and kept for this index's life.
    """

    def __init__(self, skills: Iterable[SkillLike] = (), *, key: Callable[[Any], Any] = _BY_NAME) -> None:
        self._key = key
        self._docs: dict[Any, _Doc] = {}
        self._postings: dict[str, frozenset[Any]] = {}
        self._first_name_terms: dict[str, frozenset[Any]] = {}  # for the name-phrase bonus
        self._totals = [0] * len(BM25_FIELDS)
        self._contributions: dict[str, dict[Any, float]] = {}
        docs = [_Doc.of(skill) for skill in skills]
        postings: dict[str, set[Any]] = {}
        first: dict[str, set[Any]] = {}
        for doc in docs:
            name = key(doc.skill)
            self._docs[name] = doc
            for term in doc.terms:
                postings.setdefault(term, set()).add(name)
            if doc.name_terms:
                first.setdefault(doc.name_terms[0], set()).add(name)
            self._totals = [total + n for total, n in zip(self._totals, doc.lengths, strict=True)]
        self._postings = {term: frozenset(names) for term, names in postings.items()}
        self._first_name_terms = {term: frozenset(names) for term, names in first.items()}
        self._average = self._averages()

    def _averages(self) -> tuple[float, ...]:
        count = max(len(self._docs), 1)
        return tuple(max(total / count, 1.0) for total in self._totals)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, name: object) -> bool:
        return name in self._docs

    def with_changes(self, *, removed: Iterable[Any] = (), added: Iterable[SkillLike] = ()) -> TermIndex:
        """A new index without the skills keyed by `removed` and with `added` (a skill added under
        a key already here replaces it). Only the postings of the terms involved are copied."""
        new = TermIndex.__new__(TermIndex)
        new._key = self._key
        new._docs = dict(self._docs)
        new._postings = dict(self._postings)
        new._first_name_terms = dict(self._first_name_terms)
        new._totals = list(self._totals)
        new._contributions = {}
        added_docs = [_Doc.of(skill) for skill in added]
        for name in {*removed, *(self._key(doc.skill) for doc in added_docs)}:
            old = new._docs.pop(name, None)
            if old is not None:
                new._unlink(old)
        for doc in added_docs:
            new._docs[self._key(doc.skill)] = doc
            new._link(doc)
        new._average = new._averages()
        return new

    def moved_to(self, skills: Iterable[SkillLike]) -> TermIndex:
        """An index of exactly `skills` that keeps the documents of those this one holds (the very
        same objects): moving a catalogue forward tokenises the skills a write changed, not all."""
        skills = list(skills)
        kept = {self._key(s) for s in skills if (doc := self._docs.get(self._key(s))) is not None and doc.skill is s}
        return self.with_changes(
            removed=[name for name in self._docs if name not in kept],
            added=[s for s in skills if self._key(s) not in kept],
        )

    def _link(self, doc: _Doc) -> None:
        name = self._key(doc.skill)
        for term in doc.terms:
            self._postings[term] = self._postings.get(term, frozenset()) | {name}
        if doc.name_terms:
            term = doc.name_terms[0]
            self._first_name_terms[term] = self._first_name_terms.get(term, frozenset()) | {name}
        self._totals = [total + n for total, n in zip(self._totals, doc.lengths, strict=True)]

    def _unlink(self, doc: _Doc) -> None:
        name = self._key(doc.skill)
        for term in doc.terms:
            if remaining := self._postings[term] - {name}:
                self._postings[term] = remaining
            else:
                del self._postings[term]
        if doc.name_terms:
            term = doc.name_terms[0]
            if remaining := self._first_name_terms[term] - {name}:
                self._first_name_terms[term] = remaining
            else:
                del self._first_name_terms[term]
        self._totals = [total - n for total, n in zip(self._totals, doc.lengths, strict=True)]

    def state(self) -> tuple:
        """Everything the index answers from, comparable: an index updated with `with_changes`
        equals one built afresh from the same skills."""
        return (
            {name: (doc.skill, doc.fields, doc.lengths, doc.surface) for name, doc in self._docs.items()},
            self._postings,
            self._first_name_terms,
            tuple(self._totals),
        )

    # --- scoring: the arithmetic of the straightforward ranker (tests/registry/ranking_oracle.py)
    # operation for operation, so that the floats (and so the order of equal-looking scores) come
    # out identical.

    def _contribution(self, term: str) -> dict[str, float]:
        """What `term` adds to the raw score of each skill that has it."""
        found = self._contributions.get(term)
        if found is not None:
            return found
        names = self._postings.get(term, frozenset())
        df = len(names)
        idf = math.log(1 + (len(self._docs) - df + 0.5) / (df + 0.5))
        out = {}
        for name in names:
            doc = self._docs[name]
            weighted = 0.0
            for i, (_, weight, b) in enumerate(BM25_FIELDS):
                tf = doc.fields[i].get(term, 0)
                if tf:
                    norm = 1 - b + b * doc.lengths[i] / self._average[i]
                    weighted += weight * tf / norm
            out[name] = idf * weighted * (BM25_K1 + 1) / (BM25_K1 + weighted)
        self._contributions[term] = out
        return out

    def _scores(self, query: _Query) -> tuple[dict[str, float], set[str]]:
        """Rounded scores of every skill sharing a term with the query (zero ones included), and
        the keys of those that got the name-phrase bonus."""
        raw: dict[str, float] = {}
        for term in query.terms:
            if not raw:
                raw = dict(self._contribution(term))  # 0.0 + x is x: the same floats, added in C
                continue
            for name, contribution in self._contribution(term).items():
                raw[name] = raw.get(name, 0.0) + contribution
        bonus = {
            name
            for term in query.terms
            for name in self._first_name_terms.get(term, ())
            if contains_sequence(query.sequence, self._docs[name].name_terms)
        }
        scores = {}
        for name, value in raw.items():
            score = value / (value + SATURATION)
            if name in bonus:
                score = min(1.0, score + NAME_PHRASE_BONUS)
            scores[name] = round(score, 4)
        return scores, bonus

    def _match(self, name: str, score: float, query: _Query, bonus: set[str]) -> Match:
        doc = self._docs[name]
        reasons = [f"name '{doc.skill.name}' appears in the query"] if name in bonus else []
        found = [(query.shown[t], doc.terms[t]) for t in query.terms if t in doc.terms]
        for position, label in _REASONS:
            hits = [word for word, fields in found if fields >> position & 1]
            if hits:
                reasons.append(label + ", ".join(hits))
        return Match(doc.skill, score, reasons)

    def score(self, query: str) -> list[Match]:
        """Every skill sharing a term with the query, best first (ties by key: the name)."""
        parsed = _Query.parse(query)
        scores, bonus = self._scores(parsed)
        ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [self._match(name, score, parsed, bonus) for name, score in ordered]

    def weights(self, key: Any) -> dict[str, float]:
        """The terms of the skill keyed `key`, each with what it adds to that skill's raw score
        for a query holding it: the BM25F weights this index ranks by, which description overlap
        (registry/matching/overlap.py) compares skills with."""
        return {term: self._contribution(term)[key] for term in self._docs[key].terms}

    def keys(self) -> list[Any]:
        return list(self._docs)

    def holding(self, term: str) -> frozenset[Any]:
        """The keys of the skills that have `term`."""
        return self._postings.get(term, frozenset())

    def surface(self, key: Any, term: str) -> str:
        """`term` as the skill keyed `key` first wrote it."""
        return self._docs[key].surface.get(term, term)

    def top(self, query: str, *, limit: int | None = None, where: Callable[[Any], bool] | None = None) -> list[Match]:
        """As `match(query, index, limit=limit)` over the skills `where` accepts: the runtime's
        task-match trigger wants one skill, not reasons built for the ~500 that share a word."""
        parsed = _Query.parse(query)
        scores, bonus = self._scores(parsed)
        kept = (
            (-score, name)
            for name, score in scores.items()
            if score > 0.0 and (where is None or where(self._docs[name].skill))
        )
        ordered = sorted(kept) if limit is None else heapq.nsmallest(limit, kept)
        return [self._match(name, -negative, parsed, bonus) for negative, name in ordered]

    def best(
        self, query: str, *, forced: Collection[str], limit: int, excluded: Collection[str] = ()
    ) -> tuple[list[Match], list[Match], set[str], Callable[[str], Match | None]]:
        """What resolve uses of `match(query, index)` without ordering all of it: the matches
        (score above 0) among the `forced` names, the `limit` best of the others, best first, and
        the names of all the others that match (the `excluded` names are none of these); and the
        match of any name, for a skill that comes into the head from further down (a required one)."""
        parsed = _Query.parse(query)
        scores, bonus = self._scores(parsed)
        matched = {
            name for name, score in scores.items() if score > 0.0 and name not in forced and name not in excluded
        }
        top = sorted((-scores[name], name) for name in matched)[:limit]  # in C: cheaper than a heap here

        def match_of(name: str) -> Match | None:
            score = scores.get(name, 0.0)
            return self._match(name, score, parsed, bonus) if score > 0.0 else None

        return (
            [self._match(name, scores[name], parsed, bonus) for name in forced if scores.get(name, 0.0) > 0.0],
            [self._match(name, -negative, parsed, bonus) for negative, name in top],
            matched,
            match_of,
        )


@dataclass(frozen=True)
class Ranking:
    ordered: list[Any]  # forced skills, then the best matches, then the rest by name: the head only
    matches: dict[str, Match]  # for the skills in `ordered` that match the text
    total: int  # how many skills the whole ranking holds
    match_of: Callable[[str], Match | None] = lambda name: None  # any skill's match for the text
    matched: Collection[str] = ()  # every skill that matches the text, forced ones aside, in the head or not


def rank_for_block(
    index: TermIndex,
    text: str | None,
    *,
    forced: Sequence[Any],
    skills: Sequence[Any],
    limit: int,
    excluded: Collection[str] = (),
) -> Ranking:
    """The head of resolve's ranking — forced skills first, then matches for `text` best first,
    then the other model-invocable skills in `skills`' order (by name) — as long as a prompt block
    of at most `limit` skills can use, and the length of the whole ranking. The `excluded` names
    (never forced ones) are not in it."""
    forced_names = {s.name for s in forced}
    wanted = max(limit - len(forced), 0)
    total = len(forced) + len(index) - sum(1 for name in forced_names if name in index)
    total -= sum(1 for name in excluded if name in index and name not in forced_names)
    forced_matches, top, matched, match_of = (
        index.best(text, forced=forced_names, limit=wanted, excluded=excluded)
        if text is not None
        else ([], [], set(), Ranking.match_of)
    )
    ordered = [*forced, *(m.skill for m in top)]
    if len(top) < wanted:
        for skill in skills:
            if len(ordered) - len(forced) >= wanted:
                break
            if (
                skill.model_invocable
                and skill.name not in forced_names
                and skill.name not in matched
                and skill.name not in excluded
            ):
                ordered.append(skill)
    return Ranking(
        ordered=ordered,
        matches={m.skill.name: m for m in [*forced_matches, *top]},
        total=total,
        match_of=match_of,
        matched=matched,
    )


@runtime_checkable
class Ranker(Protocol):
    """A prebuilt index: a `TermIndex`, or in the tests the straightforward ranker it is checked
    against."""

    def score(self, query: str) -> list[Match]: ...


def match(
    query: str, skills: Iterable[SkillLike] | Ranker, threshold: float = 0.0, limit: int | None = None
) -> list[Match]:
    """Skills relevant to `query`, best first, each with a 0..1 score and the reasons for it.

    Pass a prebuilt index (`TermIndex`) to rank many queries against one set of skills cheaply.
    Only skills scoring above `threshold` are returned; ties break by name.
    """
    index = skills if isinstance(skills, Ranker) else TermIndex(skills)
    found = [m for m in index.score(query) if m.score > threshold]
    return found[:limit] if limit is not None else found


# --- rules -------------------------------------------------------------------------------

# Rules share a set with the rules whose ids fall in the same bucket, so a rule edit recompiles
# one small set rather than one of every pattern (RE2's compile time grows with a set's patterns).
_BUCKET = 64
_SET_MAX_MEMORY = 8 * 1024 * 1024
_SENTINEL = 0  # index of the empty pattern each set starts with: it matches every query


def _set_options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False  # as each rule's own pattern (registry/matching/patterns.py)
    options.max_mem = _SET_MAX_MEMORY
    options.log_errors = False
    return options


@dataclass(frozen=True)
class _Bucket:
    rules: tuple[tuple[int, str], ...]  # (rule id, pattern)
    compiled: Any  # the re2.Set, or None when RE2 cannot hold these patterns in one set

    @classmethod
    def compile(cls, rules: tuple[tuple[int, str], ...]) -> _Bucket:
        patterns = re2.Set.SearchSet(_set_options())
        try:
            patterns.Add("")
            for _, pattern in rules:
                patterns.Add(pattern)
            patterns.Compile()
        except re2.error:
            return cls(rules, None)  # too large together: these rules are searched one by one
        return cls(rules, patterns)

    def candidates(self, bounded: str) -> Iterable[int]:
        if self.compiled is None:
            return (rule_id for rule_id, _ in self.rules)
        hits = self.compiled.Match(bounded) or ()
        if _SENTINEL not in hits:
            # RE2 reports a set whose DFA ran out of memory as matching nothing; the empty
            # pattern always matches, so its absence says so: search these rules one by one.
            return (rule_id for rule_id, _ in self.rules)
        return (self.rules[hit - 1][0] for hit in hits if hit != _SENTINEL)


class RuleSet:
    """Which rules can match a query, in one pass over it per bucket of patterns.

    A rule not among `candidates(query)` does not match; the candidates are then searched with
    their own pattern as before, which gives the span the reason quotes and keeps the answer
    exactly that of searching every pattern (an RE2 set matches what its patterns match)."""

    def __init__(self, rules: Iterable[tuple[int, str]], *, previous: RuleSet | None = None) -> None:
        grouped: dict[int, list[tuple[int, str]]] = {}
        for rule_id, pattern in sorted(rules):
            grouped.setdefault(rule_id // _BUCKET, []).append((rule_id, pattern))
        reusable = {bucket.rules: bucket for bucket in previous._buckets} if previous else {}
        self._buckets: tuple[_Bucket, ...] = tuple(
            reusable.get(members) or _Bucket.compile(members)
            for members in (tuple(group) for _, group in sorted(grouped.items()))
        )

    def candidates(self, query: str) -> set[int]:
        bounded = query[: query_max_chars()]  # what pattern_search matches against
        return {rule_id for bucket in self._buckets for rule_id in bucket.candidates(bounded)}
