"""The simple rankers the product's one ranker (registry/matching/index.py, `TermIndex`) is
checked against: `MatchIndex`, which scores every skill in turn with the same BM25F arithmetic
(the property tests compare TermIndex with it on random registries and queries), and seed 002's
keyword scorer, kept verbatim as the baseline the ranking must beat."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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

# --- seed 002 baseline -------------------------------------------------------------------


def seed002_score(query: str, skill: SkillLike) -> float:
    """Seed 002's `matches_keywords`, verbatim in behaviour (substring tests and all)."""
    query_lower = query.lower()
    query_words = query_lower.split()
    if not query_words:
        return 0.0
    score = 0.0
    if skill.name.lower() in query_lower:
        score += 0.5
    description = (skill.description or "").lower()
    matching = sum(1 for w in query_words if w in description)
    score += 0.3 * (matching / len(query_words))
    for tag in skill.tags or ():
        if tag.lower() in query_lower:
            score += 0.2
            break
    return min(score, 1.0)


def seed002_match(query: str, skills: Iterable[SkillLike], threshold: float = 0.0) -> list[Match]:
    scored = [Match(s, round(seed002_score(query, s), 4)) for s in skills]
    return sorted((m for m in scored if m.score > threshold), key=lambda m: (-m.score, m.skill.name))


# --- the straightforward BM25F ranker --------------------------------------------------------


@dataclass(frozen=True)
class _Doc:
    skill: Any
    fields: dict[str, Counter]
    lengths: dict[str, int]
    name_terms: tuple[str, ...]
    surface: dict[str, str]  # stem -> a word as written in the skill, for reasons


def _doc(skill: SkillLike) -> _Doc:
    per_field, surface = skill_terms(skill)
    counters = {f: Counter(ts) for f, ts in per_field.items()}
    lengths = {f: len(ts) for f, ts in per_field.items()}
    return _Doc(skill, counters, lengths, tuple(per_field["name"]), surface)


class MatchIndex:
    """Every skill scored against the query in turn: BM25F over name, tags and description, the
    arithmetic `TermIndex` does over its inverted index, written the straightforward way.

    With `previous`, a skill that index already held (the very same object) keeps its tokenised
    document."""

    def __init__(self, skills: Iterable[SkillLike], *, previous: MatchIndex | None = None) -> None:
        held = {id(doc.skill): doc for doc in previous.docs} if previous is not None else {}
        self.docs: list[_Doc] = []
        document_frequency: Counter = Counter()
        totals = dict.fromkeys((f for f, _, _ in BM25_FIELDS), 0)
        for skill in skills:
            doc = held.get(id(skill))
            if doc is None or doc.skill is not skill:
                doc = _doc(skill)
            for f, n in doc.lengths.items():
                totals[f] += n
            document_frequency.update(set().union(*doc.fields.values()))
            self.docs.append(doc)
        count = max(len(self.docs), 1)
        self.average = {f: max(totals[f] / count, 1.0) for f in totals}
        self.idf = {t: math.log(1 + (len(self.docs) - df + 0.5) / (df + 0.5)) for t, df in document_frequency.items()}

    def __len__(self) -> int:
        return len(self.docs)

    def score(self, query: str) -> list[Match]:
        query_words = [w for w in words(query) if w not in STOP_WORDS]
        query_terms = list(dict.fromkeys(stem(w) for w in query_words))
        shown: dict[str, str] = {}
        for w in query_words:
            shown.setdefault(stem(w), w)
        query_sequence = [stem(w) for w in query_words]
        matches: list[Match] = []
        for doc in self.docs:
            raw = 0.0
            hits: dict[str, list[str]] = {"name": [], "tags": [], "description": []}
            for t in query_terms:
                idf = self.idf.get(t)
                if idf is None:
                    continue
                weighted = 0.0
                for f, weight, b in BM25_FIELDS:
                    tf = doc.fields[f].get(t, 0)
                    if tf:
                        norm = 1 - b + b * doc.lengths[f] / self.average[f]
                        weighted += weight * tf / norm
                        hits[f].append(shown.get(t, t))
                if weighted:
                    raw += idf * weighted * (BM25_K1 + 1) / (BM25_K1 + weighted)
            if not raw:
                continue
            reasons = []
            score = raw / (raw + SATURATION)
            if doc.name_terms and contains_sequence(query_sequence, doc.name_terms):
                score = min(1.0, score + NAME_PHRASE_BONUS)
                reasons.append(f"name '{doc.skill.name}' appears in the query")
            if hits["name"]:
                reasons.append("name matches: " + ", ".join(hits["name"]))
            if hits["tags"]:
                reasons.append("tags match: " + ", ".join(hits["tags"]))
            if hits["description"]:
                reasons.append("description matches: " + ", ".join(hits["description"]))
            matches.append(Match(doc.skill, round(score, 4), reasons))
        matches.sort(key=lambda m: (-m.score, m.skill.name))
        return matches
