"""Plain data that crosses the boundary between the runtime and the Django side.

Nothing here imports Django or litellm: the registry adapts its models to these shapes and
persists what comes back (trace events, activations, executions, usage).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from registry.matching.fired_rule import FiredRule
from registry.readmodel.skill import EffectiveSkill
from registry.skillformat.skillmd import ActivationTrigger as Trigger  # values of `skill_activated.trigger`

TurnStatus = Literal["succeeded", "failed", "cancelled"]


# A skill as the runtime lists and matches it is the registry's effective skill itself (plain
# values, no Django): one shape from the read model to the prompt, no copy in between.
SkillSummary = EffectiveSkill


@dataclass(frozen=True)
class SkillDocument:
    name: str
    version: int
    description: str
    body: str
    tools: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # bundle paths, SKILL.md excluded
    source: str = ""  # as SkillSummary.source


@dataclass(frozen=True)
class RequiredSkill:
    """A skill loaded with another because that one requires it (`metadata.requires`), at the
    version the turn's label, or the requirement's own label or pin, gives."""

    document: SkillDocument
    required_by: str
    why: str  # "required by pdf-report", as the trace says it


class SkillStore(Protocol):
    def load(self, name: str) -> SkillDocument | None:
        """The effective, enabled skill called `name`."""
        ...

    def missing_reason(self, name: str) -> str:
        """Why `load(name)` found nothing, for a turn's error (e.g. "no enabled skill has that name")."""
        ...

    def read_file(self, name: str, path: str) -> bytes | None:
        """A bundled file of skill `name`, or None when there is no such file."""
        ...

    def file_is_executable(self, name: str, path: str) -> bool: ...

    def required(self, name: str) -> list[RequiredSkill]:
        """The skills `name` requires, directly or through others, that the turn can load
        (breadth first; missing ones left out)."""
        ...

    def find_skills(self, trigger: str, context: dict[str, Any]) -> list[SkillSummary]:
        """Seed 001 findSkills: skills declaring `trigger`, most relevant to `context` first."""
        ...

    def match(
        self, query: str, *, trigger: str | None = None, limit: int | None = None
    ) -> list[tuple[SkillSummary, float]]:
        """Skills ranked by relevance to `query` (seed 002 scoring or better), best first; with
        `trigger`, only those declaring it; at most `limit` of them."""
        ...


@dataclass(frozen=True)
class Resolution:
    """What the registry resolved for this turn before it starts (force-include rules applied)."""

    skills: tuple[SkillSummary, ...] = ()
    prompt_block: str = ""  # the lazy "## Skills (mandatory)" + <available_skills> block
    instructions: tuple[str, ...] = ()
    fired_rules: tuple[FiredRule, ...] = ()


@dataclass(kw_only=True)
class TurnRequest:
    """One turn as the runtime takes it. Build it with `forcing.forced_skill_and_query`'s answer:
    the slash command is read once, where the turn comes in."""

    message: str  # as the user sent it
    query: str  # what the user asks: the message without a command naming the forced skill
    forced_skill: str | None = None  # the request's forced skill, else the one a `/command` names
    model: str
    workspace: Path
    history: list[dict[str, Any]] = field(default_factory=list)  # prior user/assistant messages
    max_iterations: int = 10
    max_input_tokens: int | None = None
    max_total_tokens: int | None = None
    max_seconds: float | None = None
    max_tool_calls_per_step: int | None = None  # calls beyond it in one model response are not run
    llm_options: dict[str, Any] = field(default_factory=dict)  # passed through to litellm
    base_prompt: str | None = None
    memory_summary: str | None = None
    language: str | None = None
    # seed 001 task_match: inject the best skill's body when its score reaches this; None = suggest only.
    task_match_inject_threshold: float | None = None


class TraceSink(Protocol):
    def emit(self, type: str, data: dict[str, Any]) -> None:
        """Record one trace event; the Django side assigns seq and at."""
        ...


@dataclass(frozen=True)
class SkillActivation:
    name: str
    version: int
    trigger: Trigger
    source: str = ""  # the loaded document's


@dataclass(frozen=True)
class SkillExecution:
    skill_name: str
    ok: bool


@dataclass
class TurnResult:
    status: TurnStatus
    answer: str = ""
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    steps: int = 0
    activations: list[SkillActivation] = field(default_factory=list)
    executions: list[SkillExecution] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)  # skills listed in the prompt block
    offered_sources: dict[str, str] = field(default_factory=dict)  # their sources, by name
