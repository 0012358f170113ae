"""The one shape of an effective skill, from the read model to the runtime: plain values, no
Django, so the agent runtime (agents/runtime/types.py) lists, matches and offers it as it is."""

from __future__ import annotations

from dataclasses import dataclass

from registry.skillformat.requires import Requirement


@dataclass(frozen=True)
class EffectiveSkill:
    """One effective, enabled skill at the version a request gets: what resolve, matching, the
    prompt block and the runtime's skill list use. The fields the runtime reads come first, so
    the runtime's own tests build one from those alone."""

    name: str
    description: str
    version: int
    tags: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    source: str = ""  # which of the skills of this name (precedence picked it), for analytics
    skill_id: int = 0  # the registry's row; 0 for a skill built outside the registry (runtime tests)
    fingerprint: str = ""  # the version's bundle fingerprint
    model_invocable: bool = True  # false for `disable-model-invocation: true`: listed only when forced
    # `metadata.requires` of this version (registry/skillformat/requires.py): the skills loaded
    # with it, the tools and MCP servers a consumer must have.
    requires: tuple[Requirement, ...] = ()
