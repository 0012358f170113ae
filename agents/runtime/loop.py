"""The ReAct loop of one agent turn (SPEC §6): prompt → model → tools → ... → answer or failure."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from agents.runtime import llm
from agents.runtime.context import DEFAULT_MAX_INPUT_TOKENS, compact_history, fit_context
from agents.runtime.forcing import ForcedSkill, UnknownForcedSkill, detect_forced_skill, refusal_message
from agents.runtime.llm import LLMError, LLMResponse, ToolCall, TransientLLMError
from agents.runtime.prompt import SystemPrompt, build_system_prompt, skill_reminder_message
from agents.runtime.recovery import MAX_TOOL_FAILURES, describe_problem, find_guidance, recovery_message
from agents.runtime.replay import Record, Replay, model_record, tool_record
from agents.runtime.tools import Tool, ToolContext, ToolRegistry, ToolResult, run_tool
from agents.runtime.triggers import triggered_skills
from agents.runtime.types import (
    Resolution,
    SkillActivation,
    SkillDocument,
    SkillStore,
    TraceSink,
    Trigger,
    TurnRequest,
    TurnResult,
    TurnStatus,
)

MAX_TOOL_MESSAGE_CHARS = 100_000
TRACE_RESULT_CHARS = 2_000
TRACE_CONTENT_CHARS = 500
# seed 004 §2: run auto_invoke only when the reply looks unhelpful — short, or saying that no
# tool is available — so a helpful explanation ("how do I ...?") is left alone.
UNHELPFUL_MAX_CHARS = 80
UNHELPFUL_PHRASES = re.compile(
    r"\bno\s+(?:[\w-]+\s+){0,3}tools?\b|\bnot\s+available\b|\bunavailable\b"
    r"|\b(?:don't|do not|cannot|can't)\s+(?:have\s+)?access\b",
    re.IGNORECASE,
)

Complete = Callable[..., LLMResponse]
# checkpoint(index, record): persist `record` as the turn's checkpoint number `index`, together
# with the trace events emitted since the previous one (see agents/runtime/replay.py). A record
# of a tool that ran must be durable once `settle` returns, which the loop calls before the next
# tool runs; the other records may wait for the next tool's.
Checkpoint = Callable[[int, Record], None]


def looks_unhelpful(answer: str) -> bool:
    return len(answer.strip()) < UNHELPFUL_MAX_CHARS or bool(UNHELPFUL_PHRASES.search(answer))


def run_turn(
    request: TurnRequest,
    *,
    store: SkillStore,
    resolution: Resolution,
    tools: ToolRegistry,
    trace: TraceSink,
    should_cancel: Callable[[], bool] = lambda: False,
    complete: Complete = llm.complete,
    checkpoint: Checkpoint | None = None,
    settle: Callable[[], None] = lambda: None,
    resume: Sequence[Record] = (),
) -> TurnResult:
    """Run one turn and return how it ended; every step is reported to `trace` as it happens.

    Non-transient model errors, limits, `abort` and an unknown forced skill end the turn with
    status "failed" and a readable error. Budgets (time, tokens, tool calls per step) are checked
    before every model call and every tool call. A TransientLLMError is raised out of this
    function so the caller can retry with backoff; so is anything `trace`, `checkpoint`, `settle`
    or `should_cancel` raise (e.g. the caller lost the turn to another worker).

    `checkpoint` is told of each completed unit (prepared, model response, tool call) and may
    store a tool's record while the model is asked for the next step: `settle` is called before
    every tool runs and returns once what was checkpointed is durable. A later
    attempt passes those records back as `resume` and continues where they end: recorded model
    responses and tool outcomes are replayed instead of being asked for again, and the events of
    the replayed units are not emitted a second time.
    """
    return _Turn(request, store, resolution, tools, trace, should_cancel, complete, checkpoint, settle, resume).run()


class _Turn:
    def __init__(
        self,
        request: TurnRequest,
        store: SkillStore,
        resolution: Resolution,
        tools: ToolRegistry,
        trace: TraceSink,
        should_cancel: Callable[[], bool],
        complete: Complete,
        checkpoint: Checkpoint | None,
        settle: Callable[[], None],
        resume: Sequence[Record],
    ) -> None:
        self.request = request
        self.store = store
        self.resolution = resolution
        self.tools = tools
        self.trace = trace
        self.should_cancel = should_cancel
        self.complete = complete
        self.checkpoint = checkpoint
        self.settle = settle
        self.replay = Replay(resume)
        self.checkpoints = 0
        self.result = TurnResult(status="failed")
        self.tool_context = ToolContext(workspace=request.workspace, store=store)
        self.started = 0.0
        self._start_clock(0.0)
        self.failures: Counter[str] = Counter()
        self.auto_invoked: set[str] = set()
        self.forced: ForcedSkill | None = None
        self.message = request.query
        self.offered: list[str] = []
        self.prompt = SystemPrompt(())
        self.conversation: list[dict[str, Any]] = []
        self.current_user_index = 0
        self.input_limit = DEFAULT_MAX_INPUT_TOKENS
        self.count_tokens = llm.CachingTokenCounter(request.model)

    # --- setup ------------------------------------------------------------------------------

    def run(self) -> TurnResult:
        try:
            self.forced = detect_forced_skill(request=self.request, store=self.store, tools=self.tools)
        except UnknownForcedSkill as error:
            return self._finish("failed", error=str(error))
        if self.forced and not self.message:  # a bare "/skill-name": the command is the whole ask
            self.message = f"Run the /{self.forced.document.name} skill."
        self._prepare()
        self._checkpoint({"kind": "prepared"})
        return self._loop()

    def _prepare(self) -> None:
        forced = self.forced
        if forced:
            self._activate(forced.document, "forced")
            if forced.fallback:
                self._emit(
                    "warning",
                    {
                        "message": (
                            f"forced skill '{forced.document.name}' declares no available tools "
                            f"({', '.join(forced.document.tools) or 'none'}); "
                            "offering all tools except the skill loaders"
                        )
                    },
                )
        self.offered = list(forced.tools) if forced else self.tools.names()
        self.result.offered = [] if forced else [skill.name for skill in self.resolution.skills]
        self.result.offered_sources = {} if forced else {s.name: s.source for s in self.resolution.skills}
        for rule in self.resolution.fired_rules:
            self._emit(
                "rule_fired",
                {  # "name" and "why" as in the API's fired_rules (SPEC §5)
                    "name": rule.name,
                    "why": rule.why,
                    "skills": list(rule.skills),
                    "instruction": rule.instruction,
                    "auto_invoke": rule.auto_invoke,
                },
            )
        triggered = triggered_skills(
            message=self.message,
            turn_index=sum(1 for m in self.request.history if m.get("role") == "user"),
            store=self.store,
            forced=forced is not None,
            inject_threshold=self.request.task_match_inject_threshold,
        )
        for item in triggered.loaded:
            self._activate(item.document, item.trigger)
        compacted, history = compact_history(self.request.history)
        memory = "\n\n".join(text for text in (self.request.memory_summary, compacted) if text) or None
        self.prompt = build_system_prompt(
            base_prompt=self.request.base_prompt,
            memory=memory,
            forced=forced.document if forced else None,
            tool_lines=[(tool.name, tool.summary) for tool in self._offered_tools()],
            skills_block=self.resolution.prompt_block,
            loaded=triggered.loaded,
            suggestion=triggered.suggestion,
            workspace=self.request.workspace,
            today=datetime.now(UTC).date(),
            language=self.request.language,
            instructions=self.resolution.instructions,
            reminder_tools=forced.reminder_tools if forced else [],
        )
        self.conversation = [dict(message) for message in history]
        self.current_user_index = len(self.conversation)
        self.conversation.append({"role": "user", "content": self.message})
        self.input_limit = (
            self.request.max_input_tokens or llm.max_input_tokens(self.request.model) or DEFAULT_MAX_INPUT_TOKENS
        )

    def _offered_tools(self) -> list[Tool]:
        return [tool for name in self.offered if (tool := self.tools.get(name))]

    # --- the loop ---------------------------------------------------------------------------

    def _loop(self) -> TurnResult:
        for step in range(1, self.request.max_iterations + 1):
            stopped = self._check_limits(step, "model call")
            if stopped:
                return stopped
            self.result.steps = step
            try:
                response = self._call_model(step)
            except TransientLLMError:
                raise  # the caller retries; the turn resumes from its last checkpoint
            except LLMError as error:
                return self._finish("failed", error=f"the model call failed: {error}")
            answer = (response.content or "").strip()
            calls = response.tool_calls or self._auto_invoke_calls(step, answer)
            if not calls:
                if not answer:
                    return self._finish("failed", error="the model returned an empty answer")
                return self._finish("succeeded", answer=answer)
            calls, skipped = self._within_call_budget(step, calls)
            self._checkpoint(model_record(step, response))
            self.conversation.append(_assistant_message(response.content if response.tool_calls else None, calls))
            for number, call in enumerate(calls, start=1):
                stopped = self._check_limits(step, f"tool call {number} of {len(calls)}")
                if stopped:
                    return stopped
                abort_reason = self._handle_tool_call(step, call)
                if abort_reason is not None:
                    return self._finish("failed", error=f"aborted: {abort_reason}")
            if skipped:
                # Every call in the assistant message has its answer; the model learns from the
                # last one that the rest were dropped and can ask again in its next step.
                self.conversation[-1]["content"] += (
                    f"\n\n[{skipped} more tool calls in this step were not run: at most "
                    f"{len(calls)} tool calls per step. Call the ones you still need in your next step.]"
                )
        return self._finish(
            "failed", error=f"stopped after {self.request.max_iterations} iterations without a final answer"
        )

    def _within_call_budget(self, step: int, calls: list[ToolCall]) -> tuple[list[ToolCall], int]:
        limit = self.request.max_tool_calls_per_step
        if limit is None or len(calls) <= limit:
            return calls, 0
        self._emit(
            "budget_exceeded",
            {
                "step": step,
                "budget": "tool_calls_per_step",
                "limit": limit,
                "used": len(calls),
                "message": f"the model asked for {len(calls)} tool calls in one step; the first {limit} run",
            },
        )
        return calls[:limit], len(calls) - limit

    def _check_limits(self, step: int, before: str) -> TurnResult | None:
        if self.should_cancel():
            return self._finish("cancelled", error="the turn was cancelled")
        elapsed = self._elapsed()
        if self.request.max_seconds is not None and elapsed >= self.request.max_seconds:
            error = f"stopped: the turn exceeded its time budget of {self.request.max_seconds:g} s"
            return self._over_budget(step, before, "time", self.request.max_seconds, round(elapsed, 3), error)
        used = self.result.prompt_tokens + self.result.completion_tokens
        if self.request.max_total_tokens is not None and used >= self.request.max_total_tokens:
            error = f"stopped: the turn used {used} tokens of its {self.request.max_total_tokens} token budget"
            return self._over_budget(step, before, "tokens", self.request.max_total_tokens, used, error)
        return None

    def _over_budget(self, step: int, before: str, budget: str, limit: float, used: float, error: str) -> TurnResult:
        self._emit(
            "budget_exceeded",
            {"step": step, "budget": budget, "limit": limit, "used": used, "before": before, "message": error},
        )
        return self._finish("failed", error=f"{error} (step {step}, before {before})")

    def _elapsed(self) -> float:
        # While replaying, the clock stands where the recorded attempt's was, so the same checks
        # pass or fail as they did then.
        return self.replay.clock if self.replay.active else time.monotonic() - self.started

    def _call_model(self, step: int) -> LLMResponse:
        tail = []
        if self.forced and step >= 2:
            # seed 000, fix 4: reinforce the forced skill before every later call; sent, not stored,
            # so reminders do not pile up in the conversation.
            tail.append(skill_reminder_message(self.forced.document.name, self.forced.reminder_tools))
            self._emit("skill_reminder", {"step": step, "skill": self.forced.document.name})
        specs = [tool.spec() for tool in self._offered_tools()]

        def count(messages: list[dict[str, Any]]) -> int:
            return self.count_tokens(messages, specs)

        def bound(messages: list[dict[str, Any]]) -> int:
            return self.count_tokens.upper_bound(messages, specs)

        fitted = fit_context(
            prompt=self.prompt,
            conversation=self.conversation,
            tail=tail,
            current_user_index=self.current_user_index,
            limit=self.input_limit,
            count=count,
            bound=bound,
        )
        messages = fitted.messages
        if fitted.removed:
            self._emit(
                "context_trimmed",
                {
                    "step": step,
                    "removed": fitted.removed,
                    "limit": self.input_limit,
                    "tokens_after": count(messages),
                },
            )
        response = self.replay.response(step) or self.complete(
            self.request.model, messages, specs, **self.request.llm_options
        )
        self.result.prompt_tokens += response.prompt_tokens
        self.result.completion_tokens += response.completion_tokens
        self.result.cost += response.cost
        self._emit(
            "llm_call",
            {
                "step": step,
                "model": self.request.model,
                "tools": self.offered,
                "system_prompt": fitted.prompt.text,
                "sections": fitted.prompt.names,
                "message_count": len(messages),
                "prompt_tokens": response.prompt_tokens,
                "completion_tokens": response.completion_tokens,
                "cost": response.cost,
                "latency_ms": response.latency_ms,
                "content": (response.content or "")[:TRACE_CONTENT_CHARS],
                "tool_calls": [call.name for call in response.tool_calls],
            },
        )
        return response

    # --- tools ------------------------------------------------------------------------------

    def _handle_tool_call(self, step: int, call: ToolCall) -> str | None:
        """Answer one tool call with a tool message; returns the abort reason if it aborts."""
        outcome = self._answer_tool_call(step, call)
        self._checkpoint(tool_record(step, call.id, outcome, list(self.tool_context.todos)))
        return outcome.abort_reason if outcome and outcome.ok else None

    def _answer_tool_call(self, step: int, call: ToolCall) -> ToolResult | None:
        """The tool's outcome when it ran; None when the call was refused or its arguments failed."""
        name = call.name
        if self.forced and name not in self.offered:
            message = refusal_message(name, self.forced)
            self._record_call(step, call, ok=False, result=message, latency_ms=0)
            self._emit(
                "tool_refused",
                {"step": step, "tool": name, "skill": self.forced.document.name, "allowed": self.offered},
            )
            self._add_tool_message(call.id, message)
            return None
        tool = self.tools.get(name) if name in self.offered else None
        if self.failures[name] >= MAX_TOOL_FAILURES:
            self._recover(step, call, tool, f"it already failed {self.failures[name]} times in this request.", [])
            return None
        if tool is None:
            self._recover(step, call, None, f"no tool named '{name}' exists.", [])
            return None
        if isinstance(call.arguments, str):
            self._recover(step, call, tool, f"its arguments are not a valid JSON object: {call.arguments[:200]!r}.", [])
            return None
        errors = tool.validation_errors(call.arguments)
        if errors:
            missing = tool.missing_parameters(call.arguments)
            self._recover(step, call, tool, describe_problem(missing=missing, errors=errors), missing)
            return None
        started = time.monotonic()
        outcome = self._run_tool(step, call, tool)
        latency_ms = int((time.monotonic() - started) * 1000)
        if outcome.activation:
            self._activate_version(outcome.activation)
        if outcome.execution:
            self.result.executions.append(outcome.execution)
        if not outcome.ok:
            self._recover(step, call, tool, outcome.content, [], latency_ms=latency_ms)
            return outcome
        self._record_call(step, call, ok=True, result=outcome.content, latency_ms=latency_ms)
        self._add_tool_message(call.id, outcome.content)
        return outcome

    def _run_tool(self, step: int, call: ToolCall, tool: Tool) -> ToolResult:
        recorded = self.replay.tool_outcome(step, call.id)
        if recorded is None:
            assert isinstance(call.arguments, dict)  # checked by the caller
            self.settle()  # the tool before this one is stored: no side effect can happen twice
            return run_tool(tool, call.arguments, self.tool_context)
        # Ran before this turn was taken over: its side effects happened once, and only once.
        outcome, todos = recorded
        self.tool_context.todos[:] = todos
        return outcome

    def _recover(
        self, step: int, call: ToolCall, tool: Tool | None, problem: str, missing: list[str], latency_ms: int = 0
    ) -> None:
        """seed 001: tool_error event + a structured tool result the model can retry from."""
        if self.failures[call.name] < MAX_TOOL_FAILURES:
            self.failures[call.name] += 1
        guidance = find_guidance(self.store, tool, call.name, problem)
        if guidance and guidance.skill:
            self._activate(guidance.skill, "tool_call_error")
        message = recovery_message(
            tool_name=call.name,
            tool=tool,
            problem=problem,
            guidance=guidance,
            missing=missing,
            available=self.offered,
            failures=self.failures[call.name],
        )
        self._record_call(step, call, ok=False, result=message, latency_ms=latency_ms)
        self._emit(
            "tool_error",
            {
                "step": step,
                "tool": call.name,
                "error": problem,
                "guidance_skill": guidance.skill.name if guidance and guidance.skill else None,
                "failures": self.failures[call.name],
            },
        )
        self._add_tool_message(call.id, message)

    def _record_call(self, step: int, call: ToolCall, *, ok: bool, result: str, latency_ms: int) -> None:
        self._emit(
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

    def _add_tool_message(self, call_id: str, content: str) -> None:
        if len(content) > MAX_TOOL_MESSAGE_CHARS:
            content = content[:MAX_TOOL_MESSAGE_CHARS] + "\n[... tool result truncated ...]"
        self.conversation.append({"role": "tool", "tool_call_id": call_id, "content": content})

    # --- force-include auto_invoke (seed 004) -----------------------------------------------

    def _auto_invoke_calls(self, step: int, answer: str) -> list[ToolCall]:
        if not looks_unhelpful(answer):
            return []
        for rule in self.resolution.fired_rules:
            call = rule.auto_invoke_call(self.request.query)
            if call is None or rule.name in self.auto_invoked:
                continue
            self.auto_invoked.add(rule.name)  # once per rule and turn: no loop of fallbacks
            tool_name, arguments = call["tool"], call["arguments"]
            if tool_name not in self.offered:
                self._emit(
                    "warning",
                    {"message": f"rule '{rule.name}' auto_invoke tool '{tool_name}' is not offered in this turn"},
                )
                continue
            self._emit(
                "auto_invoke",
                {
                    "step": step,
                    "rule": rule.name,
                    "tool": tool_name,
                    "arguments": arguments,
                    "answer": answer[:TRACE_CONTENT_CHARS],
                },
            )
            document = (
                self.store.load(arguments["skill_name"]) if isinstance(arguments.get("skill_name"), str) else None
            )
            if document:
                self._activate(document, "auto_invoke")
            return [ToolCall(id=f"auto_invoke_{step}", name=tool_name, arguments=arguments)]
        return []

    # --- bookkeeping ------------------------------------------------------------------------

    def _activate(self, document: SkillDocument, trigger: Trigger) -> None:
        self._activate_version(SkillActivation(document.name, document.version, trigger, document.source))

    def _activate_version(self, activation: SkillActivation) -> None:
        # One activation per skill and trigger per turn: analytics count loads, not re-reads.
        if activation in self.result.activations:
            return
        self.result.activations.append(activation)
        self._emit(
            "skill_activated", {"skill": activation.name, "version": activation.version, "trigger": activation.trigger}
        )

    def _emit(self, type: str, data: dict[str, Any]) -> None:
        if not self.replay.active:  # a replayed unit's events are stored already
            self.trace.emit(type, data)

    def _checkpoint(self, record: Record) -> None:
        index = self.checkpoints
        self.checkpoints += 1
        if not self.replay.active:
            self._save_checkpoint(index, record)
            return
        if not self.replay.consume(record):
            self._start_clock(self.replay.clock)
            self._emit(
                "warning",
                {
                    "message": "the recorded steps of the earlier attempt no longer match (a skill or rule "
                    "changed meanwhile); the turn runs on live from here"
                },
            )
            self._save_checkpoint(index, record)
        elif not self.replay.active:
            self._start_clock(self.replay.clock)
            self._emit(
                "resumed",
                {
                    "step": record.get("step", 0),
                    "replayed_model_calls": self.replay.model_calls,
                    "replayed_tool_calls": self.replay.tool_calls,
                    "elapsed_seconds": round(self.replay.clock, 3),
                },
            )

    def _start_clock(self, elapsed: float) -> None:
        """The turn's clock reads `elapsed` now; a resumed turn goes on from its earlier attempts' time."""
        self.started = time.monotonic() - elapsed
        # Tools that wait (run_skill) stop at the turn's deadline, not only at their own limit.
        max_seconds = self.request.max_seconds
        self.tool_context.deadline = None if max_seconds is None else self.started + max_seconds

    def _save_checkpoint(self, index: int, record: Record) -> None:
        if self.checkpoint is not None:
            self.checkpoint(index, {**record, "elapsed": round(self._elapsed(), 3)})

    def _finish(self, status: TurnStatus, *, answer: str = "", error: str | None = None) -> TurnResult:
        self.result.status = status
        self.result.answer = answer
        self.result.error = error
        return self.result


def _assistant_message(content: str | None, calls: list[ToolCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                },
            }
            for call in calls
        ],
    }
