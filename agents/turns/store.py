"""The registry seen through the runtime's SkillStore protocol (agents/runtime/types.py).

One store serves one turn: what it loads is kept for the rest of the turn, so a skill read
twice costs one query and the turn sees one consistent version of each skill. Which version of
which skill it loads is the read model's answer (registry/readmodel/served.py, through
`selectors.resolve.skill_effective`), and the skills it lists are the read model's effective
skills as they are (the runtime's SkillSummary is that shape): a skill resolve
offers at the store's label and pins always loads, and one it hides never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.runtime.types import RequiredSkill, Resolution, SkillDocument, SkillSummary
from registry.models import SkillVersion
from registry.readmodel.served import skill_lacks_label
from registry.selectors import resolve as registry_resolve
from registry.selectors.dependencies import dependency_closure


def resolution(result: registry_resolve.ResolveResult) -> Resolution:
    """The registry's resolve() answer in the runtime's shape (its skills are the read model's
    effective skills as they are)."""
    return Resolution(
        skills=tuple(offered.skill for offered in result.skills),
        prompt_block=result.prompt_block,
        instructions=result.instructions,
        fired_rules=result.fired_rules,
    )


class RegistrySkillStore:
    def __init__(self, label: str | None = None, pins: Mapping[str, int] | None = None) -> None:
        self.label = label
        self.pins = dict(pins or {})
        self._versions: dict[str, SkillVersion | None] = {}
        self._documents: dict[str, SkillDocument | None] = {}

    def _version(self, name: str) -> SkillVersion | None:
        if name not in self._versions:
            self._versions[name] = registry_resolve.skill_version_effective(name=name, label=self.label, pins=self.pins)
        return self._versions[name]

    def load(self, name: str) -> SkillDocument | None:
        if name not in self._documents:
            version = self._version(name)
            self._documents[name] = None if version is None else _document(version)
        return self._documents[name]

    def missing_reason(self, name: str) -> str:
        # A turn is checked at creation (agent_turn_create); the label may move or go after that.
        if skill_lacks_label(name=name, label=self.label):
            return (
                f"the skill has no label '{self.label}' (a turn at a label reads only the skills that carry it; "
                "the label was removed or moved after the turn was queued)"
            )
        return "no enabled skill has that name"

    def required(self, name: str) -> list[RequiredSkill]:
        """The closure at the turn's label and pins (`dependency_closure`). A skill the turn has
        not read yet is kept at the version its requirement gave, so its files read from that
        version too; one read already keeps the turn's version unless a pin or label asks for
        another."""
        found = []
        for dependency in dependency_closure(name=name, label=self.label, pins=self.pins).found:
            held = self._documents.get(dependency.name)
            if held is None or held.version != dependency.version:
                version = registry_resolve.skill_version_of(dependency.skill)
                if version is None:
                    continue
                held = _document(version)
                if dependency.name not in self._versions:
                    self._versions[dependency.name], self._documents[dependency.name] = version, held
            found.append(RequiredSkill(document=held, required_by=dependency.required_by, why=dependency.why))
        return found

    def read_file(self, name: str, path: str) -> bytes | None:
        version = self._version(name)
        file = version and version.files.select_related("blob").filter(path=path).first()
        return bytes(file.blob.content) if file else None

    def file_is_executable(self, name: str, path: str) -> bool:
        version = self._version(name)
        return bool(version and version.files.filter(path=path, executable=True).exists())

    def find_skills(self, trigger: str, context: dict[str, Any]) -> list[SkillSummary]:
        return [
            found.skill
            for found in registry_resolve.skills_find(
                trigger=trigger, context=context, label=self.label, pins=self.pins
            )
        ]

    def match(
        self, query: str, *, trigger: str | None = None, limit: int | None = None
    ) -> list[tuple[SkillSummary, float]]:
        return [
            (found.skill, found.score)
            for found in registry_resolve.skills_match(
                query=query, label=self.label, trigger=trigger, limit=limit, pins=self.pins
            )
        ]


def _document(version: SkillVersion) -> SkillDocument:
    return SkillDocument(
        name=version.name,
        version=version.number,
        description=version.description,
        body=version.body,
        tools=tuple(version.tools),
        tags=tuple(version.tags),
        triggers=tuple(version.triggers),
        files=tuple(version.files.order_by("path").values_list("path", flat=True)),
        source=version.skill.source,
    )


def resolution_for_turn(
    *, query: str, forced_skill: str | None, label: str | None = None, pins: Mapping[str, int] | None = None
) -> Resolution:
    """The registry's resolve() for a turn's query and forced skill (as its TurnRequest carries
    them), at the turn's label and pins, in the runtime's shapes."""
    return resolution(registry_resolve.resolve(query=query, label=label, forced_skill=forced_skill, pins=pins))
