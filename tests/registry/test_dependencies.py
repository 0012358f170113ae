"""The closure of a skill's requirements (`dependency_closure`): each required skill at the
version the request gets — the request's label, the entry's own label, or its pinned version —
followed through, each name once, cycle-safe."""

from __future__ import annotations

import pytest

from registry.models import Skill
from registry.selectors.dependencies import Requirer, dependency_closure, skill_required_by
from registry.services.labels import label_move
from registry.services.skills import skill_set_enabled
from registry.skillformat.requires import Requirement
from tests.factories import publish

pytestmark = pytest.mark.django_db


def requiring(name: str, requires: str = "", **fields):
    """Publish a version of `name` whose `metadata.requires` is `requires`."""
    metadata = {"metadata": f'{{requires: "{requires}"}}'} if requires else {}
    return publish(name, **metadata, **fields).version


def label(name: str, label: str, number: int) -> None:
    label_move(skill=Skill.objects.get(name=name), label=label, version_number=number)


def test_required_skills_come_at_the_request_label_transitively():
    requiring("report", "skill:pdf-tools, tool:Bash, mcp:github")
    requiring("pdf-tools", "skill:fonts, tool:Bash")
    requiring("pdf-tools", "skill:fonts", description="Second version of the PDF tools.")
    requiring("fonts")
    for name, number in (("report", 1), ("pdf-tools", 1), ("fonts", 1)):
        label(name, "production", number)

    closure = dependency_closure(name="report", label="production")

    assert [(d.name, d.version, d.required_by, d.depth) for d in closure.skills] == [
        ("pdf-tools", 1, "report", 1),
        ("fonts", 1, "pdf-tools", 2),
    ]
    assert closure.skills[1].why == "required by pdf-tools"
    assert [(n.kind, n.name, n.required_by) for n in closure.needs] == [
        ("tool", "Bash", ("report", "pdf-tools")),
        ("mcp", "github", ("report",)),
    ]
    latest = dependency_closure(name="report", label="latest")
    assert [(d.name, d.version) for d in latest.skills] == [("pdf-tools", 2), ("fonts", 1)]


def test_an_entry_label_or_pin_wins_over_the_request_label():
    requiring("report", "skill:pdf-tools@stable, skill:fonts@1")
    requiring("pdf-tools")
    requiring("pdf-tools", description="Second version of the PDF tools.")
    requiring("fonts")
    requiring("fonts", description="Second version of the fonts.")
    label("pdf-tools", "stable", 1)

    closure = dependency_closure(name="report", label="latest")

    assert [(d.name, d.version, d.why) for d in closure.skills] == [
        ("pdf-tools", 1, "required by report (skill:pdf-tools@stable)"),
        ("fonts", 1, "required by report (skill:fonts@1)"),
    ]


def test_a_skill_missing_at_the_label_is_listed_as_missing():
    requiring("report", "skill:pdf-tools, skill:nowhere")
    requiring("pdf-tools")
    label("report", "production", 1)

    closure = dependency_closure(name="report", label="production")

    assert [(d.name, d.version, d.missing) for d in closure.skills] == [
        ("pdf-tools", None, True),
        ("nowhere", None, True),
    ]
    assert dependency_closure(name="nowhere").root is None


def test_a_cycle_ends_where_it_closes_and_is_named():
    # A publish refuses a cycle through its skill; one still forms when skills come back on.
    requiring("a", "skill:b")
    skill_set_enabled(skill=Skill.objects.get(name="a"), enabled=False)
    requiring("b", "skill:c, skill:a")
    skill_set_enabled(skill=Skill.objects.get(name="b"), enabled=False)
    requiring("c", "skill:a, skill:b")
    for name in ("a", "b"):
        skill_set_enabled(skill=Skill.objects.get(name=name), enabled=True)

    closure = dependency_closure(name="a", label="latest")

    assert [d.name for d in closure.skills] == ["b", "c"]
    assert closure.cycles == (("a", "b", "a"), ("a", "b", "c", "a"))


def test_required_by_counts_served_versions_of_enabled_skills_and_whole_names():
    requiring("pdf")
    requiring("pdf-tools")
    requiring("report", "skill:pdf-tools")
    requiring("report", "skill:fonts", description="Second version, without PDF tools.")
    requiring("invoice", "skill:pdf-tools@production")
    requiring("retired", "skill:pdf")
    skill_set_enabled(skill=Skill.objects.get(name="retired"), enabled=False)

    assert skill_required_by(name="pdf-tools") == [
        Requirer("invoice", "user", 1, ("latest",), Requirement("skill", "pdf-tools", label="production"))
    ]
    label("report", "production", 1)  # v1 is served again: it counts
    assert [(r.name, r.version, r.labels) for r in skill_required_by(name="pdf-tools")] == [
        ("invoice", 1, ("latest",)),
        ("report", 1, ("production",)),
    ]
    assert skill_required_by(name="pdf") == []  # `pdf-tools` is not `pdf`; the one that is, is disabled
