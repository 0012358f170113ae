"""Tools the model can call: a schema, a function, and a registry that validates arguments.

Arguments are checked against the tool's JSON schema before the tool runs (seed 001), so a tool
function can trust the shape of what it receives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from agents.runtime.types import RequiredSkill, SkillActivation, SkillExecution, SkillStore

MAX_VALIDATION_ERRORS = 5


class ToolFailure(Exception):
    """Raised by a tool for an expected failure; the message is shown to the model."""


@dataclass
class ToolContext:
    """What a tool may touch during one turn."""

    workspace: Path
    store: SkillStore
    todos: list[dict[str, Any]] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() by which the turn must end (its time budget)
    # Skills whose body the turn has been given: a required skill is given once, not again with
    # every skill that requires it.
    loaded: set[str] = field(default_factory=set)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: str
    activation: SkillActivation | None = None  # the tool loaded a skill body (read_skill, use_skill)
    execution: SkillExecution | None = None  # the tool ran a skill's code (run_skill, use_skill)
    abort_reason: str | None = None  # the abort tool ends the turn as failed with this reason
    required: tuple[RequiredSkill, ...] = ()  # loaded with the skill: what it requires


ToolFunction = Callable[[dict[str, Any], ToolContext], ToolResult]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object
    run: ToolFunction

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.parameters)

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.parameters)

    @property
    def summary(self) -> str:
        return self.description.strip().splitlines()[0] if self.description.strip() else self.name

    def spec(self) -> dict[str, Any]:
        """The OpenAI function-calling shape litellm sends to every provider."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def validation_errors(self, arguments: dict[str, Any]) -> list[str]:
        errors = sorted(self.validator.iter_errors(arguments), key=lambda error: list(error.path))
        return [_describe(error) for error in errors[:MAX_VALIDATION_ERRORS]]

    def missing_parameters(self, arguments: dict[str, Any]) -> list[str]:
        return [name for name in self.parameters.get("required", []) if name not in arguments]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())


def run_tool(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Run a tool whose arguments already passed validation; failures become results."""
    try:
        return tool.run(arguments, context)
    except ToolFailure as failure:
        return ToolResult(ok=False, content=str(failure))
    except Exception as error:  # a broken tool must not end the turn; the model sees what happened
        return ToolResult(ok=False, content=f"{tool.name} failed unexpectedly: {type(error).__name__}: {error}")


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error.path)
    return f"{where}: {error.message}" if where else error.message
