"""The catalog eval's confusion matrix (registry/selectors/catalog_evals.py), from outcomes alone:
shares with their Wilson intervals, the collision rule (a pair whose rate's interval excludes
zero), skills without evidence listed and never perfect, and the console's grid of only the
skills in some confusion."""

from __future__ import annotations

from registry.selectors.analytics import wilson_interval
from registry.selectors.catalog_evals import CaseOutcome, catalog_eval_grid, catalog_eval_matrix

SKILLS = [
    {"name": "a", "version": 1, "description": "Alpha things.", "status": "measured", "cases": 2},
    {"name": "b", "version": 3, "description": "Alpha and beta things.", "status": "measured", "cases": 2},
    {"name": "c", "version": 1, "description": "Gamma.", "status": "measured", "cases": 1},
    {"name": "quiet", "version": 1, "description": "No cases.", "status": "no evidence", "cases": 0},
    {"name": "forced-only", "version": 1, "description": "Never offered.", "status": "not offered", "cases": 0},
]


def outcomes() -> list[CaseOutcome]:
    # a: 20 queries, 1 loaded b as well as a, 2 loaded b alone, 1 loaded nothing. b: 20, all b.
    # c: 10, all c.
    found = [CaseOutcome("a", ("a",), f"t-a{n}") for n in range(16)]
    found += [CaseOutcome("a", ("a", "b"), "t-ab"), CaseOutcome("a", ("b",), "t-b1"), CaseOutcome("a", ("b",), "t-b2")]
    found += [CaseOutcome("a", (), "t-none")]
    found += [CaseOutcome("b", ("b",), f"t-b{n}") for n in range(20)]
    found += [CaseOutcome("c", ("c",), f"t-c{n}") for n in range(10)]
    return found


def rounded(interval: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if interval is None else (round(interval[0], 4), round(interval[1], 4))


def test_each_skill_s_queries_split_into_itself_another_and_none_with_wilson_intervals():
    matrix = catalog_eval_matrix(skills=SKILLS, outcomes=outcomes())
    entries = {entry["name"]: entry for entry in matrix["skills"]}

    a = entries["a"]
    assert a["queries"] == 20
    assert (a["loaded_self"]["count"], a["loaded_self"]["rate"]) == (17, 0.85)
    assert (a["loaded_self"]["low"], a["loaded_self"]["high"]) == rounded(wilson_interval(17, 20))
    assert a["loaded_other"] == [{"skill": "b", "count": 3, "rate": 0.15, "low": 0.0524, "high": 0.3604}]
    assert (a["loaded_other"][0]["low"], a["loaded_other"][0]["high"]) == rounded(wilson_interval(3, 20))
    assert (a["loaded_none"]["count"], a["loaded_none"]["rate"]) == (1, 0.05)
    assert entries["c"]["loaded_self"]["rate"] == 1.0 and entries["c"]["loaded_other"] == []
    assert matrix["queries"] == 50 and matrix["loaded_self"]["count"] == 47

    # Worst measured first, then no evidence, then not offered.
    assert [entry["name"] for entry in matrix["skills"]] == ["a", "b", "c", "quiet", "forced-only"]


def test_a_skill_without_trigger_cases_is_no_evidence_never_perfect():
    entries = {e["name"]: e for e in catalog_eval_matrix(skills=SKILLS, outcomes=outcomes())["skills"]}

    for name, status in (("quiet", "no evidence"), ("forced-only", "not offered")):
        assert entries[name]["status"] == status
        assert entries[name]["queries"] == 0
        assert entries[name]["loaded_self"] is None and entries[name]["loaded_none"] is None


def test_a_collision_is_a_pair_whose_rate_s_interval_excludes_zero_with_the_turns_behind_it():
    matrix = catalog_eval_matrix(skills=SKILLS, outcomes=outcomes())

    assert [(c["skill"], c["with"]) for c in matrix["collisions"]] == [("a", "b")]
    collision = matrix["collisions"][0]
    assert collision["low"] > 0 and (collision["count"], collision["queries"]) == (3, 20)
    assert collision["turns"] == ["t-ab", "t-b1", "t-b2"]
    assert (collision["skill_description"], collision["with_description"]) == (
        "Alpha things.",
        "Alpha and beta things.",
    )
    # b's queries never load a: its interval starts at zero, so no collision the other way.
    assert wilson_interval(0, 20)[0] == 0.0


def test_with_the_wilson_interval_one_load_in_many_is_a_collision_already():
    few = [CaseOutcome("a", ("a",)) for _ in range(199)] + [CaseOutcome("a", ("b",))]

    matrix = catalog_eval_matrix(skills=SKILLS, outcomes=few)

    assert [(c["skill"], c["with"], c["count"]) for c in matrix["collisions"]] == [("a", "b", 1)]
    assert 0 < wilson_interval(1, 200)[0] < 0.001
    assert matrix["collisions"][0]["high"] > 0.02  # the interval says how large the rate may be


def test_no_outcomes_no_collisions_and_no_rates():
    matrix = catalog_eval_matrix(skills=SKILLS, outcomes=[])

    assert matrix["collisions"] == [] and matrix["queries"] == 0
    assert matrix["loaded_self"]["rate"] is None
    assert all(entry["loaded_self"] is None for entry in matrix["skills"])


def test_the_grid_shows_only_the_skills_in_some_confusion_most_confused_first():
    found = outcomes() + [CaseOutcome("c", ("b",), "t-cb")]
    grid = catalog_eval_grid(catalog_eval_matrix(skills=SKILLS, outcomes=found))

    assert grid["columns"] == ["b", "a", "c"]  # b is in 4 confusions, a in 3, c in 1
    assert [row["skill"] for row in grid["rows"]] == ["a", "c"]  # the skills whose queries went astray
    a = {cell["with"]: cell for cell in grid["rows"][0]["cells"]}
    assert a["b"]["share"]["count"] == 3 and a["a"]["self"] and a["a"]["share"]["count"] == 17
    assert a["c"]["share"] is None
    assert grid["rows"][0]["none"]["count"] == 1
