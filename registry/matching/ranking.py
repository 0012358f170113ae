"""How a skill and a query are read for ranking (SPEC §4, seed 002): words, stems, the BM25F
fields and weights, and the `Match` a ranking returns. The one ranker that scores with them is
`TermIndex` (registry/matching/index.py); finding skills by trigger (seed 001) is
registry/matching/triggers.py.

Pure functions over plain skill summaries: anything with `name`, `description`, `tags` works —
`agents.runtime.types.SkillSummary`, the resolve snapshot's rows, or a test's dataclass. No ORM
here, so the agent runtime and the API share it.

Seed 002's scoring (name in query 0.5, description word overlap 0.3, tag 0.2) lives on in the
tests (tests/registry/ranking_oracle.py) as the baseline. The ranking improves on it cheaply:
- tokens, not substrings: "a" and "in" do not match every description;
- stop words are dropped, and a light suffix stemmer makes "summarise", "summaries" and
  "summarizing" meet "summarize";
- BM25F weighting over name, tags and description: rare words count more than words every
  description has ("use", "file"), and a hit in the name or tags counts more than one in prose;
- every score comes with the reasons for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class SkillLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def tags(self) -> Sequence[str]: ...


@dataclass
class Match:
    skill: Any
    score: float
    reasons: list[str] = field(default_factory=list)


# --- text --------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below between both
but by can could did do does doing done down during each few for from further get gets got had has have having he her
here hers him his how i if in into is it its itself just let lets like me more most my myself need needs no nor not now
of off on once only or other our ours out over own please same she should so some such than that the their theirs them
then there these they this those through to too under until up us use used uses using very want wants was we were what
when where which while who whom why will with would you your yours yourself help thing things something way ok okay
""".split()
)

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_VOWELS = set("aeiouy")

# Longest first; applied once. Same stemmer on both sides, so over-stemming only has to be
# consistent, not linguistically right ("summarize" and "summary" both become "summar").
_SUFFIXES = (
    "izations",
    "isations",
    "ization",
    "isation",
    "ational",
    "fulness",
    "iveness",
    "izing",
    "ising",
    "ations",
    "ation",
    "ments",
    "ment",
    "ness",
    "ings",
    "ing",
    "ized",
    "ised",
    "izes",
    "ises",
    "ize",
    "ise",
    "ies",
    "ied",
    "ers",
    "ed",
    "er",
    "es",
    "ly",
    "s",
    "y",
    "e",
)


def stem(word: str) -> str:
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            root = word[: -len(suffix)]
            if not _VOWELS & set(root):
                continue  # "bus" -> "bu" would merge unrelated words; keep roots with a vowel
            if (
                suffix in ("ing", "ed", "er", "ers", "ings")
                and len(root) >= 4
                and root[-1] == root[-2]
                and root[-1] not in "lsz"
            ):
                root = root[:-1]  # committing -> committ -> commit, debugging -> debug
            return root
    return word


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words; camelCase and snake_case/kebab-case are split."""
    return _WORD.findall(_CAMEL.sub(" ", text or "").lower())


def terms(text: str) -> list[str]:
    """Stemmed content words (stop words dropped) — what BM25 counts."""
    return [stem(w) for w in words(text) if w not in STOP_WORDS]


# --- BM25F -------------------------------------------------------------------------------

# Field weights and length normalisation: a word in the name says more than one in the tags,
# which says more than one in a 1,000-character description.
BM25_FIELDS = (("name", 3.0, 0.3), ("tags", 2.0, 0.3), ("description", 1.0, 0.75))
BM25_K1 = 1.2
# Maps the unbounded BM25 sum to 0..1: a query whose rarest word hits one name scores ~0.5.
SATURATION = 4.0
NAME_PHRASE_BONUS = 0.3


def skill_terms(skill: SkillLike) -> tuple[dict[str, list[str]], dict[str, str]]:
    """A skill's stemmed terms per BM25F field, and for each stem the word as first written in
    the skill (name, then tags, then description), which reasons show."""
    surface: dict[str, str] = {}

    def field_terms(text: str) -> list[str]:
        out = []
        for w in words(text):
            if w in STOP_WORDS:
                continue
            t = stem(w)
            surface.setdefault(t, w)
            out.append(t)
        return out

    per_field = {
        "name": field_terms(skill.name),
        "tags": [t for tag in (skill.tags or ()) for t in field_terms(str(tag))],
        "description": field_terms(skill.description or ""),
    }
    return per_field, surface


def contains_sequence(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return any(tuple(haystack[i : i + n]) == tuple(needle) for i in range(len(haystack) - n + 1))
