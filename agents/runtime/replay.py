"""Resuming a turn from the checkpoints of an earlier attempt (a worker died mid-turn).

The loop writes a checkpoint at fixed points: once the turn is prepared, after each model
response, after each tool call. A checkpoint records only what cannot be worked out again — the
model's response, a tool's outcome — so a new attempt re-runs the loop's own logic and takes those
two from the records instead of calling the model or the tool a second time. Everything else (the
prompt, refusals, argument checks, recovery messages, activations) is recomputed, which rebuilds
the conversation exactly as the first attempt had it.

The trace sink persists the events of a unit together with its checkpoint, so the events already
stored are exactly those of the checkpointed units: the loop keeps quiet while it replays them and
speaks again from the first unit it runs for real. Records are plain JSON.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from agents.runtime.llm import LLMResponse, ToolCall
from agents.runtime.tools import ToolResult
from agents.runtime.types import SkillActivation, SkillExecution

Record = dict[str, Any]


def model_record(step: int, response: LLMResponse) -> Record:
    return {
        "kind": "model",
        "step": step,
        "response": {
            "content": response.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls],
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "cost": response.cost,
            "latency_ms": response.latency_ms,
        },
    }


def tool_record(step: int, call_id: str, outcome: ToolResult | None, todos: list[dict[str, Any]]) -> Record:
    """`outcome` is None when the call was answered without running the tool (refused, invalid)."""
    return {
        "kind": "tool",
        "step": step,
        "call_id": call_id,
        "outcome": None
        if outcome is None
        else {
            "ok": outcome.ok,
            "content": outcome.content,
            "activation": list(_astuple(outcome.activation)) if outcome.activation else None,
            "execution": [outcome.execution.skill_name, outcome.execution.ok] if outcome.execution else None,
            "abort_reason": outcome.abort_reason,
        },
        "todos": todos,
    }


def _astuple(activation: SkillActivation) -> tuple[str, int, str, str]:
    return activation.name, activation.version, activation.trigger, activation.source


class Replay:
    """The records of earlier attempts, consumed in the order the loop reaches them."""

    def __init__(self, records: Sequence[Record] = ()) -> None:
        self._records = deque(records)
        self.model_calls = 0
        self.tool_calls = 0
        self.diverged = False
        self.clock = 0.0  # the turn's elapsed seconds at the last record consumed

    @property
    def active(self) -> bool:
        return bool(self._records)

    def _peek(self, kind: str, step: int, call_id: str | None = None) -> Record | None:
        if not self._records:
            return None
        record = self._records[0]
        if record.get("kind") != kind or record.get("step") != step or record.get("call_id") != call_id:
            return None
        return record

    def response(self, step: int) -> LLMResponse | None:
        """The recorded model response of `step`, when this attempt replays it."""
        record = self._peek("model", step)
        if record is None:
            return None
        data = record["response"]
        return LLMResponse(
            content=data["content"],
            tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for c in data["tool_calls"]],
            prompt_tokens=data["prompt_tokens"],
            completion_tokens=data["completion_tokens"],
            cost=data["cost"],
            latency_ms=data["latency_ms"],
        )

    def tool_outcome(self, step: int, call_id: str) -> tuple[ToolResult, list[dict[str, Any]]] | None:
        """The recorded outcome of a tool call that already ran, and the todo list after it."""
        record = self._peek("tool", step, call_id)
        if record is None or record["outcome"] is None:
            return None
        data = record["outcome"]
        activation = data["activation"]
        execution = data["execution"]
        result = ToolResult(
            ok=data["ok"],
            content=data["content"],
            activation=SkillActivation(*activation) if activation else None,  # 3 items in older records
            execution=SkillExecution(execution[0], execution[1]) if execution else None,
            abort_reason=data["abort_reason"],
        )
        return result, list(record["todos"])

    def consume(self, record: Record) -> bool:
        """The loop reached the point where it wrote `record` last time. False when the re-run no
        longer matches the records (a skill or rule changed in between): the rest is dropped and
        the turn runs on live from here."""
        recorded = self._records.popleft() if self._records else None
        key = ("kind", "step", "call_id")
        if recorded is None or any(recorded.get(k) != record.get(k) for k in key):
            self._records.clear()
            self.diverged = True
            return False
        self.clock = float(recorded.get("elapsed", self.clock))
        if recorded["kind"] == "model":
            self.model_calls += 1
        elif recorded["kind"] == "tool" and recorded["outcome"] is not None:
            self.tool_calls += 1
        return True
