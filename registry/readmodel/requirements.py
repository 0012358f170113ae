"""What the skills a request may be offered require: other skills (`skill:` entries of
`metadata.requires`, offered with the skill that names them) and what the consumer must have
(`tool:` and `mcp:` entries, checked against its entitlements). Worked out once per snapshot from
each version's parsed requirements (`EffectiveSkill.requires`), so a request only looks up.

- `skill:NAME` is NAME at the request's label (the snapshot's own entry); `skill:NAME@LABEL` is
  NAME at that label and `skill:NAME@3` that version, read for the snapshot when they are not the
  entry it holds;
- a skill needs its own tools and servers and those of every skill it requires, however deep: a
  consumer that could not use a required skill is not offered the skill that requires it;
- a required skill that is not served (unknown, disabled, without the label, a pin it lacks) is
  reported, and the skill that requires it is still offered.

No Django: the snapshot hands in the reader of the entries it does not hold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from registry.readmodel.skill import EffectiveSkill
from registry.skillformat.requires import Requirement

# A `skill:` entry as the snapshot reads it: (name, label, version); both None means the request's label.
SkillKey = tuple[str, str | None, int | None]
# Reads the entries a snapshot does not hold: {key: the skill at that label or version}, the
# keys that name no served skill left out.
Reader = Callable[[Collection[SkillKey]], Mapping[SkillKey, EffectiveSkill]]

TOOL, MCP, SKILL = "tool", "mcp", "skill"
MAX_DEPTH = 16  # reads of required skills' own requirements; a deeper chain is cut, not followed forever
_KIND_WORDS = {TOOL: "tools", MCP: "MCP servers"}


def entitlement_name(kind: str, name: str) -> str:
    """How a tool or server is compared: without regard to case, and a tool without its argument
    pattern (`tool:Bash(git add:*)` needs `Bash`)."""
    if kind == TOOL:
        name = name.split("(", 1)[0]
    return name.strip().casefold()


@dataclass(frozen=True)
class Entitlements:
    """The tools and MCP servers a consumer says it has; None for what it did not say, which is
    then not checked (a consumer that says nothing is offered everything, as before)."""

    tools: frozenset[str] | None = None
    mcp_servers: frozenset[str] | None = None

    @classmethod
    def of(cls, *, tools: Iterable[str] | None = None, mcp_servers: Iterable[str] | None = None) -> Entitlements:
        return cls(
            tools=None if tools is None else frozenset(entitlement_name(TOOL, t) for t in tools),
            mcp_servers=None if mcp_servers is None else frozenset(entitlement_name(MCP, s) for s in mcp_servers),
        )

    @property
    def said(self) -> bool:
        return self.tools is not None or self.mcp_servers is not None

    def key(self) -> list[list[str] | None]:
        """A cache key's part: equal exactly when the entitlements are."""
        return [None if held is None else sorted(held) for held in (self.tools, self.mcp_servers)]

    def lacks(self, requirement: Requirement) -> bool:
        held = self.tools if requirement.kind == TOOL else self.mcp_servers if requirement.kind == MCP else None
        return held is not None and entitlement_name(requirement.kind, requirement.name) not in held


NO_ENTITLEMENTS = Entitlements()  # a consumer that says nothing: nothing is checked


@dataclass(frozen=True)
class Need:
    """A tool or server a skill needs, itself or through the skills it requires (`through`, from
    the one it names down to the one that declares it)."""

    requirement: Requirement
    through: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        chain = "".join(f"requires skill:{name}, which " for name in self.through)
        kind = _KIND_WORDS[self.requirement.kind]
        return f"{chain}requires {self.requirement}, which is not among the {kind} the consumer has"


@dataclass(frozen=True)
class LeftOut:
    """A skill a consumer is not offered, and why: the requirements it lacks, as written."""

    name: str
    version: int
    missing: tuple[str, ...]
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "missing": list(self.missing),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class Required:
    """A skill offered because another requires it, at the version the requirement names."""

    skill: EffectiveSkill
    required_by: str
    requirement: Requirement


class SnapshotRequirements:
    """The requirements among one snapshot's skills: for each skill with any, the skills it
    requires (its closure, nearest first), the tools and servers it needs, and the entries that
    name no served skill."""

    def __init__(
        self,
        *,
        skills: Sequence[EffectiveSkill],
        by_name: Mapping[str, EffectiveSkill],
        label: str | None,
        read: Reader,
    ) -> None:
        self._by_name = by_name
        self._label = label
        self._elsewhere: dict[SkillKey, EffectiveSkill] = {}
        self._read_elsewhere([s for s in skills if s.requires], read)
        self.closure: dict[str, tuple[Required, ...]] = {}
        self.needs: dict[str, tuple[Need, ...]] = {}
        self.unserved: dict[str, tuple[str, ...]] = {}
        for skill in skills:
            if skill.requires:
                self._walk(skill)
        # Per skill, the skills it requires that a listing does not otherwise hold: not model-
        # invocable, or not at the request's label. They add to the count of skills offered.
        self.beyond_listing: dict[str, frozenset[str]] = {}
        for name, closure in self.closure.items():
            beyond = frozenset(r.skill.name for r in closure if not _listed(by_name.get(r.skill.name)))
            if beyond:
                self.beyond_listing[name] = beyond
        self._left_out: dict[Entitlements, dict[str, LeftOut]] = {}
        self._lock = threading.Lock()

    def target(self, requirement: Requirement) -> EffectiveSkill | None:
        """The skill a `skill:` entry names, at the version a request at this snapshot reads it."""
        held = self._by_name.get(requirement.name)
        if requirement.version is not None:
            if held is not None and held.version == requirement.version:
                return held
        elif requirement.label is None or requirement.label == self._label:
            return held
        return self._elsewhere.get(_key(requirement))

    def _read_elsewhere(self, skills: Sequence[EffectiveSkill], read: Reader) -> None:
        """Read, in a few batches, the required skills the snapshot does not hold, and theirs."""
        asked: set[SkillKey] = set()
        for _ in range(MAX_DEPTH):
            wanted = {
                key
                for skill in skills
                for requirement in skill.requires
                if requirement.kind == SKILL
                and (key := _key(requirement)) not in asked
                and self.target(requirement) is None
                and (requirement.label is not None or requirement.version is not None)
            }
            if not wanted:
                return
            asked |= wanted
            found = read(wanted)
            self._elsewhere.update(found)
            skills = list(found.values())

    def _walk(self, root: EffectiveSkill) -> None:
        """`root`'s closure, breadth first, and what it needs along the way: each name taken once,
        at the first version reached (an agent holds one version of a name), as
        `dependency_closure` takes them (registry/selectors/dependencies.py), and a cycle cut
        where it closes."""
        seen = {root.name}
        queue: list[tuple[EffectiveSkill, tuple[str, ...]]] = [(root, ())]
        closure: list[Required] = []
        needs: list[Need] = []
        unserved: list[str] = []
        while queue:
            node, path = queue.pop(0)
            for requirement in node.requires:
                if requirement.kind != SKILL:
                    needs.append(Need(requirement, path))
                    continue
                target = self.target(requirement)
                if target is None:
                    unserved.append(f"{node.name} requires {requirement}")
                elif target.name not in seen and len(path) < MAX_DEPTH:
                    seen.add(target.name)
                    closure.append(Required(target, node.name, requirement))
                    queue.append((target, (*path, target.name)))
        if closure:
            self.closure[root.name] = tuple(closure)
        if needs:
            self.needs[root.name] = tuple(dict.fromkeys(needs))
        if unserved:
            self.unserved[root.name] = tuple(dict.fromkeys(unserved))

    def left_out(self, entitlements: Entitlements) -> dict[str, LeftOut]:
        """The skills (by name) whose needs `entitlements` do not meet; kept per entitlements, as a
        consumer sends the same ones with every turn."""
        if not entitlements.said or not self.needs:
            return {}
        found = self._left_out.get(entitlements)
        if found is not None:
            return found
        found = {}
        for name, needs in self.needs.items():
            unmet = [need for need in needs if entitlements.lacks(need.requirement)]
            if unmet:
                found[name] = LeftOut(
                    name=name,
                    version=self._by_name[name].version,
                    missing=tuple(dict.fromkeys(str(need.requirement) for need in unmet)),
                    reasons=tuple(need.reason for need in unmet),
                )
        with self._lock:
            if len(self._left_out) >= 64:
                self._left_out.clear()
            self._left_out[entitlements] = found
        return found


def _listed(skill: EffectiveSkill | None) -> bool:
    return skill is not None and skill.model_invocable


def _key(requirement: Requirement) -> SkillKey:
    return (requirement.name, requirement.label, requirement.version)
