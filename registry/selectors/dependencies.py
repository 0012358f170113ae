"""What a skill requires (`metadata.requires`, registry/skillformat/requires.py), followed
through: the skills loaded with it, and the tools and MCP servers its consumer must have.

Which version of a required skill a request gets is `skill_served`'s answer, as for any skill
the request reads: `skill:NAME` at the request's label (and its pins and rollout side),
`skill:NAME@LABEL` at that label, `skill:NAME@3` at version 3. A required skill's own
requirements are followed the same way, breadth first; a skill reached twice is taken once, at
the first version reached (the nearest requirement wins, as an agent can hold one version of a
name), and a cycle ends where it closes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import F, Q

from registry.models import SkillVersion
from registry.readmodel.effective import LATEST, skill_winner
from registry.readmodel.served import skill_served, skills_named
from registry.readmodel.skill import EffectiveSkill
from registry.readmodel.snapshot import Pins
from registry.selectors.versions import label_names_in_use
from registry.skillformat.requires import Requirement, requirement_lines, stored_requirements
from registry.skillformat.skillmd import Issue, ParsedSkill

REQUIRES_FIELD = "metadata.requires"
NO_SKILL = "no enabled skill is named"

# Deeper than this, a chain of requirements is a mistake rather than a design.
MAX_DEPTH = 16
# Past this many skills a closure is cut short (and says so): what one agent turn can hold.
MAX_SKILLS = 100

Lookup = Callable[[Requirement], EffectiveSkill | None]


@dataclass(frozen=True)
class Dependency:
    """A required skill as the request gets it (`skill` None: not found there)."""

    name: str
    version: int | None
    required_by: str  # the skill whose `requires` named it
    requirement: Requirement  # the entry, as written there
    depth: int  # 1 for the root's own requirements
    skill: EffectiveSkill | None = None

    @property
    def why(self) -> str:
        at = f" ({self.requirement})" if self.requirement.label or self.requirement.pinned else ""
        return f"required by {self.required_by}{at}"

    @property
    def missing(self) -> bool:
        return self.skill is None


@dataclass(frozen=True)
class Needed:
    """A tool or MCP server some skill of the closure requires."""

    kind: str  # "tool" | "mcp"
    name: str
    required_by: tuple[str, ...]


@dataclass(frozen=True)
class DependencyClosure:
    root: EffectiveSkill | None  # None: the skill is not served at the request's label
    skills: tuple[Dependency, ...] = ()  # breadth first, the root left out
    needs: tuple[Needed, ...] = ()  # tools and MCP servers, of the root and every skill found
    truncated: bool = False  # MAX_SKILLS or MAX_DEPTH cut it short
    # Each a path from the root back to it (root, …, root): what a publish refuses. Cycles among
    # the others are cut where they close, unreported: they do not run through this skill.
    cycles: tuple[tuple[str, ...], ...] = field(default=())

    @property
    def found(self) -> tuple[Dependency, ...]:
        return tuple(dep for dep in self.skills if not dep.missing)

    @property
    def missing(self) -> tuple[Dependency, ...]:
        return tuple(dep for dep in self.skills if dep.missing)


def dependency_closure(
    *, name: str, label: str | None = None, pins: Pins | None = None, subject: str | None = None
) -> DependencyClosure:
    """Every skill `name` requires, directly or through others, at the versions a request at
    `label` (with `pins`, for `subject`) gets; its tools and MCP servers. The root is read as
    the request reads it (None when it is not served there: an empty closure). No query once
    the snapshots of this generation are built."""
    root = skill_served(name=name, label=label, pins=pins, subject=subject)
    if root is None:
        return DependencyClosure(root=None)
    return closure_walk(root, request_lookup(label=label, pins=pins, subject=subject))


def request_lookup(*, label: str | None, pins: Pins | None = None, subject: str | None = None) -> Lookup:
    """How a request at `label` (with `pins`, for `subject`) reads a required skill."""

    def lookup(requirement: Requirement) -> EffectiveSkill | None:
        if requirement.version is not None:
            return skill_served(
                name=requirement.name, label=label, pins={**(pins or {}), requirement.name: requirement.version}
            )
        return skill_served(
            name=requirement.name,
            label=requirement.label or label,
            pins=None if requirement.label else pins,
            subject=subject,
        )

    return lookup


def closure_walk(root: EffectiveSkill, lookup: Lookup) -> DependencyClosure:
    """The closure from `root`, reading each required skill through `lookup` (the request's
    rule, or a publish check's): breadth first, each name once, cycles through the root recorded."""
    taken: dict[str, Dependency] = {}
    parents: dict[str, str] = {}  # a skill name -> the name that first required it
    needs: dict[tuple[str, str], list[str]] = {}
    cycles: list[tuple[str, ...]] = []
    truncated = False
    queue: deque[tuple[EffectiveSkill, int]] = deque([(root, 0)])
    while queue:
        skill, depth = queue.popleft()
        for requirement in skill.requires:
            if requirement.kind != "skill":
                needs.setdefault((requirement.kind, requirement.name), []).append(skill.name)
                continue
            if requirement.name == root.name:
                # Every skill taken is reached from the root, so this closes a cycle through it.
                cycles.append((*_path(skill.name, parents, root.name), root.name))
                continue
            if requirement.name in taken:
                continue
            if depth + 1 > MAX_DEPTH or len(taken) >= MAX_SKILLS:
                truncated = True
                continue
            found = lookup(requirement)
            taken[requirement.name] = Dependency(
                name=requirement.name,
                version=found.version if found else None,
                required_by=skill.name,
                requirement=requirement,
                depth=depth + 1,
                skill=found,
            )
            parents[requirement.name] = skill.name
            if found is not None:
                queue.append((found, depth + 1))
    return DependencyClosure(
        root=root,
        skills=tuple(taken.values()),
        needs=tuple(Needed(kind, name, tuple(dict.fromkeys(by))) for (kind, name), by in needs.items()),
        truncated=truncated,
        cycles=tuple(cycles),
    )


def _path(name: str, parents: dict[str, str], root: str) -> list[str]:
    """root → … → name, along the first requirement that reached each."""
    path = [name]
    while path[-1] != root:
        path.append(parents[path[-1]])
    return path[::-1]


# --- the checks a publish makes -----------------------------------------------------------


@dataclass(frozen=True)
class RequirementsCheck:
    warnings: tuple[Issue, ...] = ()  # a required skill, version or label the registry lacks
    cycles: tuple[Issue, ...] = ()  # errors: each requirement cycle through the skill, named


def requirements_check(reading: ParsedSkill) -> RequirementsCheck:
    """What a publish of `reading` finds in its `metadata.requires`: a skill the registry does
    not have (or a pinned version, or a label, it lacks) is a warning, as it may be published
    next; a cycle through this skill — directly, or through others at the versions any label in
    use, `latest` or the default serves — is an error naming its path. The new version is taken
    as what its name serves everywhere (it becomes latest, and labels may move to it)."""
    skill_requirements = [r for r in reading.requires if r.kind == "skill"]
    if not skill_requirements:
        return RequirementsCheck()
    lines = dict(
        zip(
            reading.requires,
            requirement_lines(reading.raw, reading.field_lines.get("metadata"), reading.requires),
            strict=True,
        )
    )
    warnings = [
        Issue("warning", lines[requirement], f"`{requirement}`: {problem}", REQUIRES_FIELD)
        for requirement in skill_requirements
        if (problem := _missing(requirement))
    ]
    root = EffectiveSkill(name=reading.name, description=reading.description, version=0, requires=reading.requires)
    cycles: dict[tuple[str, ...], str] = {}
    for label in (None, LATEST, *label_names_in_use()):
        for cycle in closure_walk(root, request_lookup(label=label)).cycles:
            cycles.setdefault(cycle, "the default label" if label is None else f"label '{label}'")
    errors = [
        Issue(
            "error",
            lines[_first_step(skill_requirements, cycle)],
            f"`metadata.requires` makes a cycle: {' → '.join(cycle)} (at {where}). A skill cannot require "
            "itself, directly or through others: remove one of these requirements.",
            REQUIRES_FIELD,
        )
        for cycle, where in cycles.items()
    ]
    return RequirementsCheck(warnings=tuple(warnings), cycles=tuple(errors))


def _first_step(requirements: list[Requirement], cycle: tuple[str, ...]) -> Requirement:
    """The root's own entry a cycle leaves it by (the first naming that skill)."""
    return next(r for r in requirements if r.name == cycle[1])


def _missing(requirement: Requirement) -> str | None:
    """Why the registry cannot serve `requirement` now, or None when it can."""
    winner = skill_winner(skills_named(name=requirement.name))
    if winner is None:
        return f"{NO_SKILL} '{requirement.name}' (yet): agents go without it until one is."
    if requirement.version is not None and not winner.versions.filter(number=requirement.version).exists():
        return f"'{requirement.name}' has no version {requirement.version} (yet)."
    if requirement.label and requirement.label != LATEST and not winner.labels.filter(name=requirement.label).exists():
        return f"'{requirement.name}' has no label '{requirement.label}' (yet): agents go without it until it has."
    return None


# --- who requires a skill -------------------------------------------------------------------


@dataclass(frozen=True)
class Requirer:
    """A skill whose served version (its newest, or one a label points to) requires another."""

    name: str
    source: str
    version: int
    labels: tuple[str, ...]  # the labels on that version ("latest" when it is the newest)
    requirement: Requirement


def skill_required_by(*, name: str) -> list[Requirer]:
    """The enabled skills whose newest or labelled versions require `name`, by name then version.

    Read from the stored frontmatter rather than a table of parsed requirements: only versions
    someone is served (newest or labelled, a few per skill) count, SQL narrows them to those whose
    `metadata.requires` mentions the name, and parsing the few left is cheap; a table would have to
    follow every publish, label move and enable to give the same answer."""
    versions = (
        SkillVersion.objects.filter(skill__enabled=True, frontmatter__metadata__requires__icontains=name)
        .filter(Q(number=F("skill__latest_version")) | Q(labels__isnull=False))
        .exclude(skill__name=name)
        .select_related("skill")
        .prefetch_related("labels")
        .distinct()
        .order_by("skill__name", "number")
    )
    found = []
    for version in versions:
        requirement = next(
            (r for r in stored_requirements(version.frontmatter) if r.kind == "skill" and r.name == name), None
        )
        if requirement is None:
            continue
        labels = [label.name for label in version.labels.all()]
        if version.number == version.skill.latest_version:
            labels.append(LATEST)
        found.append(
            Requirer(
                name=version.skill.name,
                source=version.skill.source,
                version=version.number,
                labels=tuple(labels),
                requirement=requirement,
            )
        )
    return found


@dataclass(frozen=True)
class RequirementRow:
    """One entry of a version's `metadata.requires` as a page shows it."""

    requirement: Requirement
    problem: str | None  # why the registry cannot serve it now (skills only)
    known: bool  # a skill the registry has (enabled), so a page can link to it


def version_requirements(version: SkillVersion) -> list[RequirementRow]:
    """The version's requirements, each skill one checked against what the registry has."""
    rows = []
    for requirement in stored_requirements(version.frontmatter):
        problem = _missing(requirement) if requirement.kind == "skill" else None
        known = requirement.kind == "skill" and (problem is None or not problem.startswith(NO_SKILL))
        rows.append(RequirementRow(requirement, problem, known))
    return rows
