"""Ranking skills for a query (SPEC §4, seed 002) and finding them by trigger (seed 001).

Pure functions over plain skill summaries: anything with `name`, `description`, `tags` (and, for
`find_skills`, `triggers` and `tools`) works — `agents.runtime.types.SkillSummary`, the resolve
snapshot's rows, or a test's dataclass. No ORM here, so the agent runtime and the API share it.

Seed 002's scoring (name in query 0.5, description word overlap 0.3, tag 0.2) is kept as
`seed002_score` for comparison. `match` improves on it cheaply:
- tokens, not substrings: "a" and "in" do not match every description;
- stop words are dropped, and a light suffix stemmer makes "summarise", "summaries" and
  "summarizing" meet "summarize";
- BM25F weighting over name, tags and description: rare words count more than words every
  description has ("use", "file"), and a hit in the name or tags counts more than one in prose;
- every score comes with the reasons for it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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
    """Tokenised skills plus corpus statistics; build once per registry generation, query often.

    With `previous`, a skill that index already held (the very same object) keeps its tokenised
    document: an index over a catalogue that one publish moved forward tokenises one skill, not
    all of them (tokenising is most of the cost; the statistics are summed again)."""

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


def contains_sequence(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return any(tuple(haystack[i : i + n]) == tuple(needle) for i in range(len(haystack) - n + 1))


@runtime_checkable
class Ranker(Protocol):
    """A prebuilt index: `MatchIndex`, or the resolve snapshot's inverted index that gives the
    same answers (registry/matching/index.py)."""

    def score(self, query: str) -> list[Match]: ...


def match(
    query: str, skills: Iterable[SkillLike] | Ranker, threshold: float = 0.0, limit: int | None = None
) -> list[Match]:
    """Skills relevant to `query`, best first, each with a 0..1 score and the reasons for it.

    Pass a prebuilt index (`MatchIndex`) to rank many queries against one set of skills cheaply.
    Only skills scoring above `threshold` are returned; ties break by name.
    """
    index = skills if isinstance(skills, Ranker) else MatchIndex(skills)
    found = [m for m in index.score(query) if m.score > threshold]
    return found[:limit] if limit is not None else found


# --- seed 001: findSkills(trigger, context) ----------------------------------------------

# The context fields seed 001 passes, in camelCase as written there and in snake_case.
CONTEXT_FIELDS = ("toolName", "tool_name", "error", "taskDescription", "task_description", "command")


def _compact(text: str) -> str:
    return "".join(words(text))


def find_skills(trigger: str, context: Mapping[str, Any] | None, skills: Iterable[Any]) -> list[Match]:
    """Seed 001 `findSkills`: skills declaring `trigger`, most relevant to `context` first.

    Relevance is the number of the skill's tags and tool names found in the context values
    (`toolName`, `error`, `taskDescription`, `command`): a tag matches when its words all occur
    there or it appears inside a value once separators are ignored (`filesystem` in
    `FileSystemTool_list_files`). A `command` naming the skill outranks everything. Skills that
    declare the trigger but match nothing are still returned, last. Ties: description relevance
    to the context, then name.
    """
    context = context or {}
    values = [str(context[key]) for key in CONTEXT_FIELDS if context.get(key)]
    compact_values = [_compact(v) for v in values]
    context_terms = {t for v in values for t in terms(v)}
    context_words = {w for v in values for w in words(v)}
    tool_name = str(context.get("toolName") or context.get("tool_name") or "")
    command = _compact(str(context.get("command") or ""))
    trigger = (trigger or "").strip().lower()

    candidates = [s for s in skills if trigger in {str(t).lower() for t in (getattr(s, "triggers", None) or ())}]
    text_rank = {id(m.skill): m.score for m in match(" ".join(values), candidates)} if values else {}
    results: list[Match] = []
    for skill in candidates:
        score = 0.0
        reasons: list[str] = [f"declares the '{trigger}' trigger"]
        if command and command == _compact(skill.name):
            score += 10
            reasons.append("the command names this skill")
        matched_tags = []
        for tag in skill.tags or ():
            tag_terms = terms(str(tag))
            tag_compact = _compact(str(tag))
            if (tag_terms and set(tag_terms) <= context_terms) or (
                len(tag_compact) >= 3 and any(tag_compact in v for v in compact_values)
            ):
                matched_tags.append(str(tag))
        matched_tools = []
        for tool in getattr(skill, "tools", None) or ():
            tool_text = str(tool)
            if (
                (tool_name and tool_text.lower() == tool_name.lower())
                or _compact(tool_text) in context_words
                or (len(_compact(tool_text)) >= 4 and any(_compact(tool_text) in v for v in compact_values))
            ):
                matched_tools.append(tool_text)
        if matched_tags:
            reasons.append("tags match the context: " + ", ".join(matched_tags))
        if matched_tools:
            reasons.append("tools match the context: " + ", ".join(matched_tools))
        score += len(matched_tags) + len(matched_tools)
        results.append(Match(skill, score, reasons))
    results.sort(key=lambda m: (-m.score, -text_rank.get(id(m.skill), 0.0), m.skill.name))
    return results
