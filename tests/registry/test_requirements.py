"""Resolve with requirements (registry/readmodel/requirements.py): on random registries whose
skills require tools, servers and each other, with random entitlements, the answer is the
straightforward one (tests/registry/resolve_oracle.py: every skill's requirements followed afresh);
and the snapshot's graph on the cases that matter by name (cycles, chains, skills not served)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from registry.readmodel.requirements import Entitlements
from registry.selectors.resolve import _resolve
from registry.selectors.skills import EffectiveSkill
from registry.skillformat.requires import Requirement
from tests.registry.resolve_oracle import reference_left_out, reference_resolve, snapshot_of
from tests.registry.test_matching_index import queries, rule_entries, skill_entries, words

TOOLS = ["Bash", "bash", "Read", "Bash(git add:*)"]
SERVERS = ["github", "GitHub", "jira"]


def requirement_lists(names: list[str]):
    entry = st.one_of(
        st.sampled_from(TOOLS).map(lambda tool: Requirement("tool", tool)),
        st.sampled_from(SERVERS).map(lambda server: Requirement("mcp", server)),
        st.sampled_from(names).map(lambda name: Requirement("skill", name)),
        # Every entry is at version 1: a pin at 1 of a skill it holds is the snapshot's own entry,
        # nothing to read from the database.
        st.sampled_from(names[:-1] or ["not-served"]).map(lambda name: Requirement("skill", name, version=1)),
    )
    return st.lists(entry, max_size=3).map(lambda found: tuple(dict.fromkeys(found)))


entitlements = st.builds(
    Entitlements.of,
    tools=st.one_of(st.none(), st.lists(st.sampled_from(TOOLS), max_size=3)),
    mcp_servers=st.one_of(st.none(), st.lists(st.sampled_from(SERVERS), max_size=2)),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # explain traces every line: minutes here
)
@given(data=st.data(), query=queries, given_entitlements=entitlements)
def test_resolve_with_requirements_gives_the_answer_of_the_straightforward_one(data, query, given_entitlements):
    entries = data.draw(skill_entries())
    names = [e.name for e in entries] + ["not-served"]
    entries = [replace(e, requires=data.draw(requirement_lists(names))) for e in entries]
    snapshot = snapshot_of(entries, data.draw(rule_entries([e.name for e in entries])))
    inputs = {
        "query": query,
        "forced_skill": data.draw(st.one_of(st.none(), st.sampled_from(names))),
        "context": data.draw(st.one_of(st.none(), st.fixed_dictionaries({"taskDescription": words}))),
        "max_skills": data.draw(st.integers(0, 14)),
        "max_chars": data.draw(st.sampled_from([300, 800, 2000, 18_000])),
    }
    found = _resolve(snapshot=snapshot, generation=1, label=None, entitlements=given_entitlements, **inputs)
    expected = reference_resolve(snapshot, entitlements=given_entitlements, **inputs)
    assert [_shown(s) for s in found.skills] == [_shown(s) for s in expected.skills]
    assert found == expected
    assert set(snapshot.requirements.left_out(given_entitlements)) == reference_left_out(snapshot, given_entitlements)


def _shown(offered) -> tuple:
    return offered.skill.name, offered.skill.version, offered.score, offered.forced_by, offered.required_by


def skill(name: str, *requires: str) -> EffectiveSkill:
    parsed = []
    for entry in requires:
        kind, _, rest = entry.partition(":")
        parsed.append(Requirement(kind, rest))
    return EffectiveSkill(name=name, description=f"{name} work", version=1, requires=tuple(parsed))


def test_a_cycle_is_cut_where_it_closes_and_its_needs_still_count():
    snapshot = snapshot_of([skill("a", "skill:b"), skill("b", "skill:c"), skill("c", "skill:a", "tool:Bash")])
    graph = snapshot.requirements
    assert [(r.skill.name, r.required_by) for r in graph.closure["a"]] == [("b", "a"), ("c", "b")]
    left_out = graph.left_out(Entitlements.of(tools=["Read"]))
    assert sorted(left_out) == ["a", "b", "c"]
    assert left_out["a"].reasons == (
        "requires skill:b, which requires skill:c, which requires tool:Bash, "
        "which is not among the tools the consumer has",
    )


def test_a_required_skill_not_served_is_reported_and_does_not_leave_its_requirer_out():
    snapshot = snapshot_of([skill("a", "skill:gone", "mcp:github")])
    graph = snapshot.requirements
    assert graph.unserved == {"a": ("a requires skill:gone",)}
    assert graph.left_out(Entitlements.of(mcp_servers=["GITHUB"])) == {}
    assert graph.left_out(Entitlements()) == {}  # nothing said: nothing checked
