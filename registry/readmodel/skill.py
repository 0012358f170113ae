"""The one shape of an effective skill, from the read model to the runtime: plain values, no
Django, so the agent runtime (agents/runtime/) reads it as it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EffectiveSkill:
    """One effective, enabled skill at the version a request gets, as plain values: what resolve,
    matching, the prompt block and the runtime's skill list use."""

    skill_id: int
    name: str
    source: str
    version: int
    description: str
    fingerprint: str
    tags: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    model_invocable: bool = True  # false for `disable-model-invocation: true`: listed only when forced
