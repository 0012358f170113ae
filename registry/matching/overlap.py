"""Which skills compete for the same queries: the cosine similarity of two skills' term weights in
the one ranker's index (`TermIndex.weights`: each term's BM25F contribution, so a rare word in a
name or tag counts for much, a word every description has for little).

Two skills that score high here win each other's queries: whatever a user types that matches one
matches the other about as well, and resolve orders them by small differences. The catalog's
routing report lists every pair at or above a threshold (CATALOG_OVERLAP_THRESHOLD) with the
terms that make most of their similarity; the editor's live check compares the description being
written with the catalog the same way.

Finding the pairs does not compare every skill with every other: candidates are the pairs that
share a term held by at most `max_holders` skills. A term that more skills hold has a low weight
(BM25's idf), and a pair whose only shared terms are such words is not what this looks for;
a candidate's score is then its exact cosine over all its terms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol


class TermIndex(Protocol):
    """What this module reads of registry/matching/index.py's `TermIndex` (named by its methods,
    not imported: this module reads no settings)."""

    def __len__(self) -> int: ...

    def keys(self) -> list[Any]: ...

    def weights(self, key: Any) -> dict[str, float]: ...

    def holding(self, term: str) -> frozenset[Any]: ...

    def surface(self, key: Any, term: str) -> str: ...


SHARED_TERMS_SHOWN = 8


@dataclass(frozen=True)
class Overlap:
    a: str
    b: str
    score: float  # 0..1, the cosine of their weight vectors
    shared_terms: tuple[str, ...]  # as written in `a`, the heaviest first


def max_holders_for(size: int) -> int:
    """A term held by more skills than this does not make a pair a candidate (see the module)."""
    return max(50, math.isqrt(max(size, 0)) * 2)


class _Vectors:
    def __init__(self, index: TermIndex) -> None:
        self.index = index
        self._weights: dict[Any, dict[str, float]] = {}
        self._norms: dict[Any, float] = {}

    def of(self, key: Any) -> tuple[dict[str, float], float]:
        found = self._weights.get(key)
        if found is None:
            found = self._weights[key] = self.index.weights(key)
            self._norms[key] = math.sqrt(sum(w * w for w in found.values()))
        return found, self._norms[key]

    def overlap(self, a: Any, b: Any) -> Overlap:
        (wa, na), (wb, nb) = self.of(a), self.of(b)
        small, large = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
        products = {term: weight * large[term] for term, weight in small.items() if term in large}
        score = sum(products.values()) / (na * nb) if na and nb else 0.0
        heaviest = sorted(products, key=lambda term: (-products[term], term))[:SHARED_TERMS_SHOWN]
        return Overlap(
            a=str(a),
            b=str(b),
            score=round(score, 4),
            shared_terms=tuple(self.index.surface(a, term) for term in heaviest),
        )


def shared_terms(index: TermIndex, a: Any, b: Any) -> tuple[str, ...]:
    """The terms two skills of `index` share, the heaviest first (the confusions list them)."""
    return _Vectors(index).overlap(a, b).shared_terms


def catalog_overlaps(index: TermIndex, *, threshold: float, max_holders: int | None = None) -> list[Overlap]:
    """Every pair of skills in `index` whose similarity is at least `threshold`, most similar
    first (pairs named in key order: `a` < `b`)."""
    limit = max_holders_for(len(index)) if max_holders is None else max_holders
    vectors = _Vectors(index)
    candidates: set[tuple[Any, Any]] = set()
    for key in index.keys():
        for term in vectors.of(key)[0]:
            holders = index.holding(term)
            if 1 < len(holders) <= limit:
                candidates.update((key, other) for other in holders if key < other)
    found = (vectors.overlap(a, b) for a, b in candidates)
    return sorted((o for o in found if o.score >= threshold), key=lambda o: (-o.score, o.a, o.b))


def overlaps_with(index: TermIndex, key: Any, *, threshold: float, max_holders: int | None = None) -> list[Overlap]:
    """The skills of `index` whose similarity with the one keyed `key` (in `index` too) is at least
    `threshold`, most similar first: what `catalog_overlaps` lists for that skill, for one skill
    (the editor's live check)."""
    limit = max_holders_for(len(index)) if max_holders is None else max_holders
    vectors = _Vectors(index)
    candidates = {
        other
        for term in vectors.of(key)[0]
        if len(holders := index.holding(term)) <= limit
        for other in holders
        if other != key
    }
    found = (vectors.overlap(key, other) for other in candidates)
    return sorted((o for o in found if o.score >= threshold), key=lambda o: (-o.score, o.b))
