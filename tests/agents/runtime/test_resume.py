"""Budgets inside a step, and a turn resumed from the checkpoints of an attempt that died."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.loop import run_turn
from agents.runtime.tools import Tool, ToolContext, ToolResult
from agents.runtime.types import Resolution, TurnRequest
from tests.agents.runtime.conftest import FakeModel, answer, call, tool_step

FINAL = "All three notes are written and checked; nothing else is left to do here."


class WorkerDied(BaseException):
    """Stands in for SIGKILL: not an Exception, so nothing in the runtime catches it."""


class CheckpointingTrace:
    """Behaves as the database sink does: events are stored only with the next checkpoint."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, dict[str, Any]]] = []
        self.stored: list[tuple[str, dict[str, Any]]] = []
        self.records: list[dict[str, Any]] = []

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.pending.append((type, data))

    def checkpoint(self, index: int, record: dict[str, Any]) -> None:
        del self.records[index:]
        self.records.append(record)
        self.stored += self.pending
        self.pending.clear()

    def finish(self) -> None:
        self.stored += self.pending
        self.pending.clear()

    def types(self) -> list[str]:
        return [kind for kind, _ in self.stored]


def counting_tools(runs: list[str], *, die_on: str | None = None) -> Any:
    """The default tools plus `note`, which counts its runs (and can kill the 'worker')."""

    def note(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        if arguments["text"] == die_on:
            raise WorkerDied
        runs.append(arguments["text"])
        return ToolResult(ok=True, content=f"noted {arguments['text']}")

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return default_tool_registry((Tool("note", "Write a note.", schema, note),))


def script() -> FakeModel:
    return FakeModel(
        [
            tool_step(call("note", {"text": "a"}, id="1"), call("todowrite", {"todos": []}, id="2")),
            tool_step(
                call("note", {"text": "b"}, id="3"),
                call("missing_tool", {}, id="4"),
                call("note", {"text": "c"}, id="5"),
            ),
            answer(FINAL),
        ]
    )


def attempt(workspace, model, tools, trace, resume=()):
    return run_turn(
        TurnRequest(message="write the notes", query="write the notes", model="fake", workspace=workspace),
        store=_EmptyStore(),
        resolution=Resolution(),
        tools=tools,
        trace=trace,
        complete=model,
        checkpoint=trace.checkpoint,
        resume=resume,
    )


class _EmptyStore:
    def load(self, name):
        return None

    def missing_reason(self, name):
        return "no enabled skill has that name"

    def read_file(self, name, path):
        return None

    def file_is_executable(self, name, path):
        return False

    def required(self, name):
        return []

    def find_skills(self, trigger, context):
        return []

    def match(self, query, *, trigger=None, limit=None):
        return []


def test_a_resumed_turn_replays_completed_tool_calls_and_continues_the_trace(workspace):
    uninterrupted = CheckpointingTrace()
    reference_runs: list[str] = []
    attempt(workspace, script(), counting_tools(reference_runs), uninterrupted)
    uninterrupted.finish()

    # First attempt: dies while running note "c", after "a" and "b" completed.
    trace = CheckpointingTrace()
    runs: list[str] = []
    first_model = script()
    with pytest.raises(WorkerDied):
        attempt(workspace, first_model, counting_tools(runs, die_on="c"), trace)
    trace.pending.clear()  # what the dead worker had not checkpointed is lost with it
    assert runs == ["a", "b"]

    second_model = FakeModel([answer(FINAL)])  # asked only for what was never answered: step 3
    result = attempt(workspace, second_model, counting_tools(runs), trace, resume=list(trace.records))
    trace.finish()

    assert result.status == "succeeded" and result.answer == FINAL
    assert runs == ["a", "b", "c"], "completed tool calls must not run again"
    assert len(second_model.calls) == 1, "recorded model responses are replayed, not asked for again"
    # The replayed model saw the same conversation the first attempt had built.
    assert second_model.calls[0]["messages"][-1]["content"] == "noted c"
    assert result.prompt_tokens == 300 and result.steps == 3, "the first attempt's usage is carried over"
    resumed = [data for kind, data in trace.stored if kind == "resumed"]
    assert resumed == [
        {
            "step": 2,
            "replayed_model_calls": 2,
            "replayed_tool_calls": 3,  # note a, todowrite, note b
            "elapsed_seconds": resumed[0]["elapsed_seconds"],
        }
    ]
    without_resume = [kind for kind in trace.types() if kind != "resumed"]
    assert without_resume == uninterrupted.types(), "no event is lost or stored twice"


def test_a_turn_that_died_before_its_first_checkpoint_starts_over(workspace):
    trace = CheckpointingTrace()
    runs: list[str] = []
    result = attempt(workspace, script(), counting_tools(runs), trace, resume=[])
    assert result.status == "succeeded" and runs == ["a", "b", "c"]
    assert "resumed" not in trace.types()


def test_records_that_no_longer_match_are_dropped_and_the_turn_runs_on(workspace):
    trace = CheckpointingTrace()
    runs: list[str] = []
    with pytest.raises(WorkerDied):
        attempt(workspace, script(), counting_tools(runs, die_on="c"), trace)
    stale = [dict(record, call_id="other") if record.get("call_id") == "3" else record for record in trace.records]

    result = attempt(workspace, FakeModel([answer(FINAL)]), counting_tools(runs), trace, resume=stale)

    assert result.status == "succeeded"
    assert runs == ["a", "b", "b", "c"]  # from the mismatch on, calls run live again
    assert any(kind == "warning" and "no longer match" in data["message"] for kind, data in trace.stored)


def test_a_step_with_ten_thousand_tool_calls_stops_at_the_per_step_budget(harness):
    calls = [call("todoread", id=f"c{i}") for i in range(10_000)]
    model = FakeModel([tool_step(*calls), answer(FINAL)])

    result = harness.run("x", model, max_tool_calls_per_step=25)

    assert result.status == "succeeded"
    assert len(harness.trace.of("tool_call")) == 25
    exceeded = harness.trace.of("budget_exceeded")
    assert exceeded[0]["budget"] == "tool_calls_per_step" and exceeded[0]["used"] == 10_000
    last_tool_message = model.calls[1]["messages"][-1]
    assert "9975 more tool calls in this step were not run" in last_tool_message["content"]
    assert len(model.calls[1]["messages"][-26]["tool_calls"]) == 25


def test_the_time_budget_is_checked_before_every_tool_call(harness):
    def slow(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        time.sleep(0.2)
        return ToolResult(ok=True, content="slept")

    harness.tools.register(Tool("slow", "Sleep.", {"type": "object"}, slow))
    model = FakeModel([tool_step(*[call("slow", id=f"s{i}") for i in range(50)]), answer(FINAL)])

    result = harness.run("x", model, max_seconds=0.5)

    assert result.status == "failed"
    ran = len(harness.trace.of("tool_call"))
    assert 1 <= ran <= 4, f"{ran} of 50 slow calls ran against a 0.5 s budget"
    assert result.error.startswith("stopped: the turn exceeded its time budget of 0.5 s (step 1, before tool call")
    exceeded = harness.trace.of("budget_exceeded")
    assert exceeded[0]["budget"] == "time" and exceeded[0]["before"] == f"tool call {ran + 1} of 50"
    assert len(model.calls) == 1


def test_the_token_budget_stops_a_step_before_its_next_tool_call(harness):
    model = FakeModel([tool_step(call("todoread", id="a"), call("todoread", id="b")), answer(FINAL)])

    result = harness.run("x", model, max_total_tokens=100)

    assert result.status == "failed" and "token budget" in result.error
    assert harness.trace.of("tool_call") == []


def test_the_record_of_each_tool_is_settled_before_the_next_tool_runs(workspace):
    # The worker's sink writes a tool's record while the model is asked for the next step; the
    # loop waits for that write (settle) before any tool runs, including the next one in the
    # same step, so a tool whose record was lost never has a successor that ran.
    log: list[str] = []
    trace = CheckpointingTrace()

    def checkpoint(index: int, record: dict[str, Any]) -> None:
        log.append(f"checkpoint {record['kind']}")
        trace.checkpoint(index, record)

    run_turn(
        TurnRequest(message="write the notes", query="write the notes", model="fake", workspace=workspace),
        store=_EmptyStore(),
        resolution=Resolution(),
        tools=counting_tools(log),
        trace=trace,
        complete=script(),
        checkpoint=checkpoint,
        settle=lambda: log.append("settle"),
    )

    ran = [i for i, entry in enumerate(log) if entry in ("a", "b", "c")]
    assert [log[i] for i in ran] == ["a", "b", "c"]
    assert all(log[i - 1] == "settle" for i in ran), log
    assert log.index("settle", ran[1] + 1) < ran[2], "b's record is settled before c runs in the same step"
