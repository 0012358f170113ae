"""Answering the model's tool calls within one turn.

A call is refused when a forced skill does not allow its tool, answered with a recovery message
the model can retry from when it cannot run or fails (seed 001), and otherwise run — or, in a
resumed turn, taken from the earlier attempt's record so its side effects happen only once.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from agents.runtime.forcing import ForcedSkill, refusal_message
from agents.runtime.journal import TRACE_RESULT_CHARS, TurnJournal
from agents.runtime.llm import ToolCall
from agents.runtime.recovery import MAX_TOOL_FAILURES, describe_problem, find_guidance, recovery_message
from agents.runtime.tools import Tool, ToolContext, ToolRegistry, ToolResult, run_tool
from agents.runtime.types import SkillStore


class ToolDispatcher:
    def __init__(
        self,
        *,
        journal: TurnJournal,
        store: SkillStore,
        tools: ToolRegistry,
        offered: list[str],
        forced: ForcedSkill | None,
        tool_context: ToolContext,
        settle: Callable[[], None],
    ) -> None:
        self.journal = journal
        self.store = store
        self.tools = tools
        self.offered = offered
        self.forced = forced
        self.tool_context = tool_context
        self.settle = settle
        self.failures: Counter[str] = Counter()

    def answer(self, step: int, call: ToolCall) -> tuple[str, ToolResult | None]:
        """The tool message's content, and the tool's outcome when it ran (None when the call was
        refused or its arguments failed)."""
        name = call.name
        if self.forced and name not in self.offered:
            return self._refuse(step, call, self.forced), None
        tool = self.tools.get(name) if name in self.offered else None
        if self.failures[name] >= MAX_TOOL_FAILURES:
            return self._recover(
                step, call, tool, f"it already failed {self.failures[name]} times in this request."
            ), None
        if tool is None:
            return self._recover(step, call, None, f"no tool named '{name}' exists."), None
        if isinstance(call.arguments, str):
            problem = f"its arguments are not a valid JSON object: {call.arguments[:200]!r}."
            return self._recover(step, call, tool, problem), None
        errors = tool.validation_errors(call.arguments)
        if errors:
            missing = tool.missing_parameters(call.arguments)
            return self._recover(step, call, tool, describe_problem(missing=missing, errors=errors), missing), None
        started = time.monotonic()
        outcome = self._run(step, call, tool)
        latency_ms = int((time.monotonic() - started) * 1000)
        if outcome.activation:
            self.journal.activate_version(outcome.activation)
        for item in outcome.required:
            self.journal.require(item)
        if outcome.execution:
            self.journal.result.executions.append(outcome.execution)
        if not outcome.ok:
            return self._recover(step, call, tool, outcome.content, latency_ms=latency_ms), outcome
        self._record_call(step, call, ok=True, result=outcome.content, latency_ms=latency_ms)
        return outcome.content, outcome

    def _refuse(self, step: int, call: ToolCall, forced: ForcedSkill) -> str:
        message = refusal_message(call.name, forced)
        self._record_call(step, call, ok=False, result=message, latency_ms=0)
        self.journal.emit(
            "tool_refused",
            {"step": step, "tool": call.name, "skill": forced.document.name, "allowed": self.offered},
        )
        return message

    def _run(self, step: int, call: ToolCall, tool: Tool) -> ToolResult:
        recorded = self.journal.replay.tool_outcome(step, call.id)
        if recorded is None:
            assert isinstance(call.arguments, dict)  # checked by the caller
            self.settle()  # the tool before this one is stored: no side effect can happen twice
            return run_tool(tool, call.arguments, self.tool_context)
        # Ran before this turn was taken over: its side effects happened once, and only once.
        outcome, todos = recorded
        self.tool_context.todos[:] = todos
        return outcome

    def _recover(
        self,
        step: int,
        call: ToolCall,
        tool: Tool | None,
        problem: str,
        missing: list[str] | None = None,
        latency_ms: int = 0,
    ) -> str:
        """seed 001: tool_error event + a structured tool result the model can retry from."""
        if self.failures[call.name] < MAX_TOOL_FAILURES:
            self.failures[call.name] += 1
        guidance = find_guidance(self.store, tool, call.name, problem)
        if guidance and guidance.skill:
            self.journal.activate(guidance.skill, "tool_call_error")
        message = recovery_message(
            tool_name=call.name,
            tool=tool,
            problem=problem,
            guidance=guidance,
            missing=missing or [],
            available=self.offered,
            failures=self.failures[call.name],
        )
        self._record_call(step, call, ok=False, result=message, latency_ms=latency_ms)
        self.journal.emit(
            "tool_error",
            {
                "step": step,
                "tool": call.name,
                "error": problem,
                "guidance_skill": guidance.skill.name if guidance and guidance.skill else None,
                "failures": self.failures[call.name],
            },
        )
        return message

    def _record_call(self, step: int, call: ToolCall, *, ok: bool, result: str, latency_ms: int) -> None:
        self.journal.emit(
            "tool_call",
            {
                "step": step,
                "tool": call.name,
                "arguments": call.arguments,
                "ok": ok,
                "result": result[:TRACE_RESULT_CHARS],
                "latency_ms": latency_ms,
            },
        )
