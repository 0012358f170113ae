"""Resolve through the inverted index and RE2 sets (registry/matching/index.py) gives exactly the
answers of the straightforward matcher (tests/registry/resolve_oracle.py) — MatchIndex over every
skill, every rule pattern searched in turn, the whole ranking sorted — on random registries and
queries; and its ETag is a function of the JSON it is sent as."""

from __future__ import annotations

import hashlib
import json
import pickle

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from registry.matching.index import RuleSet, TermIndex, match
from registry.matching.patterns import compile_pattern, pattern_search
from registry.selectors.resolve import RuleEntry, _resolve, rules_fire
from registry.selectors.skills import EffectiveSkill
from tests.registry.ranking_oracle import MatchIndex
from tests.registry.resolve_oracle import reference_resolve, rules_fire_all, snapshot_of

# Words that exercise the matcher: stems shared by several forms, stop words, camelCase and
# snake_case, digits, a word every skill may share (df = N), and non-ASCII.
VOCABULARY = (
    "pdf csv report reports summary summarize summaries summarizing use the a in commit committing "
    "debug debugging FileSystem file_system data v2 skill tool review reviewer kubernetes café 2026"
).split() + ['say "hi"', "back\\slash", "tab\there", "<xml>&", "\u2028"]

words = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=8).map(" ".join)
names = st.lists(st.sampled_from([w.lower() for w in VOCABULARY if w.isalnum()]), min_size=1, max_size=3).map("-".join)


@st.composite
def skill_entries(draw) -> list[EffectiveSkill]:
    chosen = draw(st.lists(names, min_size=0, max_size=12, unique=True))
    return [
        EffectiveSkill(
            skill_id=0,
            name=name,
            source="user",
            description=draw(words),
            version=1,
            fingerprint=name,
            tags=tuple(draw(st.lists(st.sampled_from(VOCABULARY), max_size=3))),
            model_invocable=draw(st.booleans()) or draw(st.booleans()),
        )
        for name in chosen
    ]


# RE2 syntax pieces that a rule pattern may be built from.
_ATOMS = ["pdf", "report", "summar", "é", "café", ".", r"\b", r"\s", r"\w+", "[a-d]", "[0-9]", "^", "$", "x*", "2026"]


def _patterns():
    leaves = st.sampled_from(_ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map("|".join),
            inner.map(lambda p: f"({p})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
        )

    return st.recursive(leaves, extend, max_leaves=6)


patterns = _patterns()


@st.composite
def rule_entries(draw, skill_names: list[str]) -> tuple[tuple[RuleEntry, object], ...]:
    rules = []
    ids = draw(st.lists(st.integers(1, 300), max_size=8, unique=True))
    for position, rule_id in enumerate(ids):
        pattern = draw(patterns)
        try:
            compiled = compile_pattern(pattern)
        except Exception:
            continue
        rules.append(
            (
                RuleEntry(
                    id=rule_id,
                    name=f"rule-{position}",
                    pattern=pattern,
                    skills=tuple(draw(st.lists(st.sampled_from([*skill_names, "unknown-skill"]), max_size=2))),
                    tools=(),
                    instruction=draw(st.sampled_from(["", f"Instruction {position}."])),
                    auto_invoke=None,
                    priority=draw(st.integers(0, 3)),
                ),
                compiled,
            )
        )
    rules.sort(key=lambda rule: (-rule[0].priority, rule[0].name))
    return tuple(rules)


queries = st.one_of(words, st.text(alphabet="pdf REPORT summar é2026 x\n-_.", max_size=40))


@settings(max_examples=300, deadline=None)
@given(entries=skill_entries(), query=queries)
def test_the_inverted_index_scores_exactly_as_match_index(entries, query):
    invocable = [e for e in entries if e.model_invocable]
    expected = MatchIndex(invocable).score(query)
    found = TermIndex(invocable).score(query)
    assert [(m.skill, m.score, m.reasons) for m in found] == [(m.skill, m.score, m.reasons) for m in expected]


@settings(max_examples=200, deadline=None)
@given(
    entries=skill_entries(),
    query=queries,
    limit=st.one_of(st.none(), st.integers(0, 4)),
    accepted=st.sets(st.sampled_from([w.lower() for w in VOCABULARY if w.isalnum()])),
)
def test_the_top_matches_are_those_of_match_filtered_then_cut(entries, query, limit, accepted):
    # `top` is what the task-match trigger asks for (the skills declaring it, the best first).
    invocable = [e for e in entries if e.model_invocable]

    def where(skill: EffectiveSkill) -> bool:
        return skill.name.split("-")[0] in accepted

    expected = [m for m in match(query, MatchIndex(invocable)) if where(m.skill)][:limit]
    found = TermIndex(invocable).top(query, limit=limit, where=where)
    assert [(m.skill, m.score, m.reasons) for m in found] == [(m.skill, m.score, m.reasons) for m in expected]


@settings(max_examples=200, deadline=None)
@given(before=skill_entries(), after=skill_entries(), query=queries)
def test_an_index_with_changes_equals_one_built_afresh(before, after, query):
    # Given an index of `before`, when the names of both are replaced by `after`'s skills ...
    changed = TermIndex(before).with_changes(removed=[e.name for e in before], added=after)
    # ... then it is the index of `after`, down to its answers.
    fresh = TermIndex(after)
    assert changed.state() == fresh.state()
    assert [(m.skill, m.score, m.reasons) for m in changed.score(query)] == [
        (m.skill, m.score, m.reasons) for m in fresh.score(query)
    ]


@settings(max_examples=300, deadline=None)
@given(rule_patterns=st.lists(patterns, min_size=1, max_size=10), query=queries)
def test_a_rule_set_never_misses_a_rule_whose_pattern_matches(rule_patterns, query):
    compiled = []
    for pattern in rule_patterns:
        try:
            compiled.append(compile_pattern(pattern))
        except Exception:
            compiled.append(None)
    assume(any(compiled))
    rules = [(rule_id, p) for rule_id, (p, c) in enumerate(zip(rule_patterns, compiled, strict=True)) if c]
    candidates = RuleSet(rules).candidates(query)
    matching = {rule_id for rule_id, p in rules if pattern_search(compile_pattern(p), query)}
    assert matching <= candidates


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), query=queries)
def test_resolve_gives_the_answer_of_the_straightforward_matcher(data, query):
    entries = data.draw(skill_entries())
    rules = data.draw(rule_entries([e.name for e in entries]))
    snapshot = snapshot_of(entries, rules)
    inputs = {
        "query": query,
        "forced_skill": data.draw(st.one_of(st.none(), st.sampled_from([e.name for e in entries] or ["none"]))),
        "context": data.draw(st.one_of(st.none(), st.fixed_dictionaries({"taskDescription": words}))),
        "max_skills": data.draw(st.integers(0, 14)),
        "max_chars": data.draw(st.sampled_from([300, 800, 2000, 18_000])),
    }
    found = _resolve(snapshot=snapshot, generation=1, label=None, **inputs)
    assert found == reference_resolve(snapshot, **inputs)
    assert rules_fire(query, rules, candidates=snapshot.rule_set.candidates(query)) == rules_fire_all(query, rules)


def _content_of(sent: dict) -> dict:
    return {key: value for key, value in sent.items() if key not in ("etag", "generation")}


def etag_of_sent(sent: dict) -> str:
    """The ETag as its documented form says, from nothing but the JSON a client is sent: the
    sha256 of the answer without `etag` and `generation`, as compact JSON in the order served."""
    encoded = json.dumps(_content_of(sent), separators=(",", ":"), ensure_ascii=False).encode()
    return f'"{hashlib.sha256(encoded).hexdigest()}"'


def resolved(snapshot, query: str, max_skills: int):
    return _resolve(
        snapshot=snapshot,
        generation=1,
        label=None,
        query=query,
        forced_skill=None,
        context=None,
        max_skills=max_skills,
        max_chars=18_000,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), query=queries, other=queries)
def test_the_etag_depends_only_on_the_json_sent(data, query, other):
    # Given a result and the JSON a client receives ...
    entries = data.draw(skill_entries())
    snapshot = snapshot_of(entries, data.draw(rule_entries([e.name for e in entries])))
    found = resolved(snapshot, query, data.draw(st.integers(0, 14)))
    sent = json.loads(found.body)
    # ... the body is the content with the ETag and generation after it ...
    assert sent["etag"] == found.etag and sent["generation"] == found.generation
    assert found.body.startswith(found.content[:-1])
    # ... the ETag is computed from that content alone, and a copy of the result has the same one ...
    assert found.etag == etag_of_sent(sent)
    assert pickle.loads(pickle.dumps(found)).etag == found.etag
    # ... and another result has the same ETag exactly when it has the same content.
    again = resolved(snapshot_of(reversed(entries), snapshot.rules), other, len(found.skills))
    assert (again.etag == found.etag) == (again.content == found.content)
    assert (again.content == found.content) == (_content_of(json.loads(again.body)) == _content_of(sent))


def test_the_etag_changes_with_any_value_sent():
    entry = EffectiveSkill(name="pdf", source="user", version=1, description="Reads pdf reports.", fingerprint="f")
    found = resolved(snapshot_of([entry]), "pdf", 5)
    sent = json.loads(found.body)
    skill = sent["skills"][0]
    assert etag_of_sent(sent) == found.etag
    for changed in (
        {**sent, "label": "production"},
        {**sent, "skills": [{**skill, "score": skill["score"] + 0.0001}]},
        {**sent, "skills": [{**skill, "description": "Reads pdf reports!"}]},
        {**sent, "skills": [{**skill, "tags": ["pdf"]}]},
    ):
        assert etag_of_sent(changed) != found.etag


def test_a_rule_set_reuses_the_compiled_buckets_a_change_left_alone():
    rules = [(rule_id, f"word{rule_id}") for rule_id in range(1, 200)]
    before = RuleSet(rules)
    after = RuleSet([*rules[:-1], (199, "changed")], previous=before)
    kept = [b for b in after._buckets if b in before._buckets]
    assert len(kept) == len(after._buckets) - 1  # only the last bucket (ids 192..) was compiled again
    assert after.candidates("changed word5") == {5, 199}


def test_a_word_every_skill_has_scores_zero_and_matches_nothing():
    # Past ~2,500 skills sharing a word its IDF is so small that a skill's score rounds to 0.0,
    # and `match` leaves out scores of 0: they rank as unmatched skills, by name, with no reasons.
    entries = [
        EffectiveSkill(name=f"s{i:04d}", source="user", version=1, description="Writes the report.", fingerprint="f")
        for i in range(3000)
    ]
    entries.append(
        EffectiveSkill(
            name="rare", source="user", version=1, description="Writes the kubernetes report.", fingerprint="f"
        )
    )
    snapshot = snapshot_of(entries)
    inputs = {"forced_skill": None, "context": None, "max_chars": 18_000}
    found = _resolve(snapshot=snapshot, generation=1, label=None, query="kubernetes report", max_skills=5, **inputs)
    assert [(s.skill.name, s.score > 0, bool(s.reasons)) for s in found.skills] == [
        ("rare", True, True),
        *((f"s{i:04d}", False, False) for i in range(4)),
    ]
    assert found == reference_resolve(snapshot, query="kubernetes report", max_skills=5, **inputs)
