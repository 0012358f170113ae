"""Description overlap over the ranker's own weights: the pairs found through the inverted index
are those of comparing every pair (the straightforward oracle), scores are symmetric cosines in
0..1, and a skill that only shares words every skill uses overlaps nobody."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

from registry.matching.index import TermIndex
from registry.matching.overlap import catalog_overlaps, overlaps_with


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    tags: tuple[str, ...] = ()


def cosine(index: TermIndex, a: str, b: str) -> float:
    wa, wb = index.weights(a), index.weights(b)
    dot = sum(w * wb.get(t, 0.0) for t, w in wa.items())
    return dot / (math.sqrt(sum(w * w for w in wa.values())) * math.sqrt(sum(w * w for w in wb.values())))


def random_catalog(rng: random.Random, size: int) -> list[Skill]:
    words = [f"w{n}" for n in range(60)] + ["files", "data", "report"]
    return [
        Skill(f"s{i:03d}", " ".join(rng.choices(words, k=rng.randint(3, 12))), tuple(rng.sample(words, 2)))
        for i in range(size)
    ]


def test_the_pairs_are_those_of_comparing_every_pair():
    rng = random.Random(3)
    for _ in range(20):
        index = TermIndex(random_catalog(rng, rng.randint(2, 40)))
        names = sorted(index.keys())
        threshold = rng.choice([0.1, 0.3, 0.5])

        found = {(o.a, o.b): o.score for o in catalog_overlaps(index, threshold=threshold, max_holders=len(names))}

        expected = {
            (a, b): round(cosine(index, a, b), 4)
            for a, b in itertools.combinations(names, 2)
            if round(cosine(index, a, b), 4) >= threshold
        }
        assert found == expected


OTHERS = [
    Skill("sql-query", "Writes and fixes SQL queries.", ("sql",)),
    Skill("git-commit", "Writes commit messages for staged changes.", ("git",)),
    Skill("unit-conversion", "Converts between units of measure.", ("units",)),
    Skill("code-review", "Reviews pull requests for bugs.", ("review",)),
    Skill("meeting-notes", "Turns meeting transcripts into minutes.", ("meetings",)),
]


def test_competing_descriptions_overlap_and_a_distinct_one_does_not():
    # Among a few others: in a catalog of three, any word two of them share is a common word.
    index = TermIndex(
        [
            *OTHERS,
            Skill("invoice-summary", "Summarizes PDF invoices into totals and due dates.", ("invoice", "billing")),
            Skill("invoice-digest", "Condenses PDF invoices into a digest of totals and due dates.", ("invoice",)),
            Skill("haiku-poems", "Writes haiku poems about the seasons.", ("poetry",)),
        ]
    )

    overlaps = catalog_overlaps(index, threshold=0.3)

    assert [(o.a, o.b) for o in overlaps] == [("invoice-digest", "invoice-summary")]
    assert 0.3 <= overlaps[0].score <= 1.0
    assert {"invoice", "totals"} <= set(overlaps[0].shared_terms)  # as `a` first wrote them (a tag)
    assert [o.b for o in overlaps_with(index, "invoice-summary", threshold=0.3)] == ["invoice-digest"]
    assert overlaps_with(index, "haiku-poems", threshold=0.3) == []


def test_one_skill_s_overlaps_are_the_catalog_s_pairs_that_name_it():
    rng = random.Random(5)
    for _ in range(10):
        index = TermIndex(random_catalog(rng, rng.randint(2, 60)))
        limit = rng.choice([2, 5, 50])
        pairs = catalog_overlaps(index, threshold=0.2, max_holders=limit)
        for key in index.keys():
            expected = sorted(((o.b if o.a == key else o.a), o.score) for o in pairs if key in (o.a, o.b))
            found = sorted((o.b, o.score) for o in overlaps_with(index, key, threshold=0.2, max_holders=limit))
            assert found == expected
