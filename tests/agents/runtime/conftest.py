"""In-memory stand-ins for the registry side: a SkillStore, a trace recorder and a fake model.

No Django and no database: the runtime takes plain data, so its tests build plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.forcing import forced_skill_and_query
from agents.runtime.llm import LLMResponse, ToolCall
from agents.runtime.loop import run_turn
from agents.runtime.tools import ToolRegistry
from agents.runtime.types import RequiredSkill, Resolution, SkillDocument, SkillSummary, TurnRequest, TurnResult


@dataclass
class StoredSkill:
    document: SkillDocument
    files: dict[str, bytes]
    executable: set[str]
    requires: tuple[str, ...] = ()  # names of the skills it requires

    @property
    def summary(self) -> SkillSummary:
        d = self.document
        return SkillSummary(d.name, d.description, d.version, d.tags, d.triggers, d.tools)


class MemoryStore:
    def __init__(self) -> None:
        self.skills: dict[str, StoredSkill] = {}

    def add(
        self,
        name: str,
        body: str = "Do the thing.",
        *,
        description: str = "",
        version: int = 1,
        tools: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
        triggers: tuple[str, ...] = (),
        files: dict[str, bytes | str] | None = None,
        executable: tuple[str, ...] = (),
        requires: tuple[str, ...] = (),
    ) -> SkillDocument:
        encoded = {
            path: content.encode() if isinstance(content, str) else content for path, content in (files or {}).items()
        }
        document = SkillDocument(
            name=name,
            version=version,
            description=description or f"The {name} skill.",
            body=body,
            tools=tools,
            tags=tags,
            triggers=triggers,
            files=tuple(sorted(encoded)),
        )
        self.skills[name] = StoredSkill(document, encoded, set(executable), requires)
        return document

    def load(self, name: str) -> SkillDocument | None:
        stored = self.skills.get(name)
        return stored.document if stored else None

    def missing_reason(self, name: str) -> str:
        return "no enabled skill has that name"

    def read_file(self, name: str, path: str) -> bytes | None:
        stored = self.skills.get(name)
        return stored.files.get(path) if stored else None

    def file_is_executable(self, name: str, path: str) -> bool:
        stored = self.skills.get(name)
        return bool(stored and path in stored.executable)

    def required(self, name: str) -> list[RequiredSkill]:
        """Breadth first, each skill once, the missing left out (as the registry's store)."""
        found: list[RequiredSkill] = []
        queue, seen = [name], {name}
        while queue:
            parent = self.skills.get(queue.pop(0))
            for needed in parent.requires if parent else ():
                if needed not in seen and needed in self.skills:
                    seen.add(needed)
                    queue.append(needed)
                    found.append(
                        RequiredSkill(
                            self.skills[needed].document, parent.document.name, f"required by {parent.document.name}"
                        )
                    )
        return found

    def find_skills(self, trigger: str, context: dict[str, Any]) -> list[SkillSummary]:
        values = " ".join(str(value).lower() for value in context.values())
        found = [s for s in self.skills.values() if trigger in s.document.triggers]

        def hits(stored: StoredSkill) -> int:
            return sum(1 for word in (*stored.document.tags, *stored.document.tools) if word.lower() in values)

        return [s.summary for s in sorted(found, key=hits, reverse=True)]

    def match(
        self, query: str, *, trigger: str | None = None, limit: int | None = None
    ) -> list[tuple[SkillSummary, float]]:
        # seed 002 scoring: name in query 0.5, description word overlap 0.3, tag 0.2
        words = query.lower().split()
        ranked = []
        for stored in self.skills.values():
            d = stored.document
            if trigger is not None and trigger not in d.triggers:
                continue
            score = 0.5 if d.name in query.lower() else 0.0
            score += 0.3 * sum(1 for w in words if w in d.description.lower()) / max(len(words), 1)
            score += 0.2 if any(tag in query.lower() for tag in d.tags) else 0.0
            if score > 0:
                ranked.append((stored.summary, score))
        return sorted(ranked, key=lambda pair: -pair[1])[:limit]


class RecordingTrace:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.events.append((type, data))

    def of(self, type: str) -> list[dict[str, Any]]:
        return [data for kind, data in self.events if kind == type]

    def types(self) -> list[str]:
        return [kind for kind, _ in self.events]


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> ToolCall:
    return ToolCall(id=id or f"call_{name}", name=name, arguments={} if arguments is None else arguments)


@dataclass
class FakeModel:
    """Answers each call with the next scripted LLMResponse (then "done"), recording the calls."""

    steps: list[LLMResponse | Callable[[list[dict[str, Any]]], LLMResponse]]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **options: Any
    ) -> LLMResponse:
        self.calls.append(
            {"model": model, "messages": messages, "tools": [t["function"]["name"] for t in tools], "options": options}
        )
        index = len(self.calls) - 1
        if index >= len(self.steps):
            return LLMResponse(content="done", prompt_tokens=10, completion_tokens=1)
        step = self.steps[index]
        return step(messages) if callable(step) else step


def answer(text: str) -> LLMResponse:
    return LLMResponse(content=text, prompt_tokens=100, completion_tokens=20, cost=0.001, latency_ms=5)


def tool_step(*calls: ToolCall, content: str | None = None) -> LLMResponse:
    return LLMResponse(content=content, tool_calls=list(calls), prompt_tokens=100, completion_tokens=20, cost=0.001)


@dataclass
class Harness:
    store: MemoryStore
    workspace: Path
    tools: ToolRegistry = field(default_factory=default_tool_registry)
    trace: RecordingTrace = field(default_factory=RecordingTrace)

    def run(
        self,
        message: str,
        model: FakeModel | Callable[..., LLMResponse],
        *,
        resolution: Resolution | None = None,
        should_cancel: Callable[[], bool] = lambda: False,
        **request: Any,
    ) -> TurnResult:
        forced_skill, query = forced_skill_and_query(message, request.pop("forced_skill", None))
        turn = TurnRequest(
            message=message,
            query=query,
            forced_skill=forced_skill,
            model=request.pop("model_name", "fake"),
            workspace=self.workspace,
            **request,
        )
        return run_turn(
            turn,
            store=self.store,
            resolution=resolution or Resolution(),
            tools=self.tools,
            trace=self.trace,
            should_cancel=should_cancel,
            complete=model,
        )


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def harness(store: MemoryStore, workspace: Path) -> Harness:
    return Harness(store, workspace)
