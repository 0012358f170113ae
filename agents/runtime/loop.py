"""The ReAct loop of one agent turn (SPEC §6): prompt → model → tools → ... → answer or failure."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from agents.runtime.auto_invoke import AutoInvoker
from agents.runtime.context import DEFAULT_MAX_INPUT_TOKENS, FittedContext, compact_history, fit_context
from agents.runtime.dispatch import ToolDispatcher
from agents.runtime.forcing import ForcedSkill, UnknownForcedSkill, detect_forced_skill
from agents.runtime.journal import TRACE_CONTENT_CHARS, Checkpoint, TurnJournal
from agents.runtime.llm import CachingTokenCounter, LLMError, LLMResponse, ToolCall, TransientLLMError, max_input_tokens
from agents.runtime.llm import complete as llm_complete
from agents.runtime.prompt import LoadedSkill, SystemPrompt, build_system_prompt, skill_reminder_message
from agents.runtime.replay import Record, model_record, tool_record
from agents.runtime.skill_tools import required_skills
from agents.runtime.tools import Tool, ToolContext, ToolRegistry
from agents.runtime.triggers import triggered_skills
from agents.runtime.types import Resolution, SkillStore, TraceSink, TurnRequest, TurnResult

MAX_TOOL_MESSAGE_CHARS = 100_000
Complete = Callable[..., LLMResponse]


def run_turn(
    request: TurnRequest,
    *,
    store: SkillStore,
    resolution: Resolution,
    tools: ToolRegistry,
    trace: TraceSink,
    should_cancel: Callable[[], bool] = lambda: False,
    complete: Complete = llm_complete,
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
    """The steps of one turn: prepare the prompt, then ask the model and answer its tool calls
    until it answers or a limit stops it. What happened is kept by the journal (trace, checkpoints,
    clock, result); tool calls are answered by the dispatcher, a rule's auto_invoke by the
    auto-invoker."""

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
        self.should_cancel = should_cancel
        self.complete = complete
        self.settle = settle
        self.tool_context = ToolContext(workspace=request.workspace, store=store)
        self.journal = TurnJournal(
            trace=trace,
            checkpoint=checkpoint,
            resume=resume,
            tool_context=self.tool_context,
            max_seconds=request.max_seconds,
        )
        self.result = self.journal.result
        self.forced: ForcedSkill | None = None
        self.message = request.query
        self.offered: list[str] = []
        self.prompt = SystemPrompt(())
        self.conversation: list[dict[str, Any]] = []
        self.current_user_index = 0
        self.input_limit = DEFAULT_MAX_INPUT_TOKENS
        self.count_tokens = CachingTokenCounter(request.model)

    # --- setup ------------------------------------------------------------------------------

    def run(self) -> TurnResult:
        try:
            self.forced = detect_forced_skill(request=self.request, store=self.store, tools=self.tools)
        except UnknownForcedSkill as error:
            return self.journal.finish("failed", error=str(error))
        if self.forced and not self.message:  # a bare "/skill-name": the command is the whole ask
            self.message = f"Run the /{self.forced.document.name} skill."
        self._prepare()
        self.journal.record({"kind": "prepared"})
        dispatcher = ToolDispatcher(
            journal=self.journal,
            store=self.store,
            tools=self.tools,
            offered=self.offered,
            forced=self.forced,
            tool_context=self.tool_context,
            settle=self.settle,
        )
        auto_invoker = AutoInvoker(
            journal=self.journal,
            store=self.store,
            resolution=self.resolution,
            query=self.request.query,
            offered=self.offered,
        )
        return self._loop(dispatcher, auto_invoker)

    def _prepare(self) -> None:
        forced = self.forced
        if forced:
            self.journal.activate(forced.document, "forced")
            # A skill that declares no tools needs none in particular: all of them, without a warning.
            if forced.fallback and forced.document.tools:
                self.journal.emit(
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
            self.journal.emit(
                "rule_fired",
                {  # "name" and "why" as in the API's fired_rules (SPEC §5)
                    "name": rule.name,
                    "why": rule.why,
                    "skills": list(rule.skills),
                    "instruction": rule.instruction,
                    "auto_invoke": rule.auto_invoke,
                },
            )
        self._build_prompt()
        self.input_limit = (
            self.request.max_input_tokens or max_input_tokens(self.request.model) or DEFAULT_MAX_INPUT_TOKENS
        )

    def _build_prompt(self) -> None:
        """The system prompt and the conversation the first model call sees."""
        forced = self.forced
        triggered = triggered_skills(
            message=self.message,
            turn_index=sum(1 for m in self.request.history if m.get("role") == "user"),
            store=self.store,
            forced=forced is not None,
            inject_threshold=self.request.task_match_inject_threshold,
        )
        for item in triggered.loaded:
            self.journal.activate(item.document, item.trigger)
        names = [item.document.name for item in triggered.loaded]
        loaded = [*triggered.loaded, *_required_of([forced.document.name, *names] if forced else names, self.journal)]
        compacted, history = compact_history(self.request.history)
        memory = "\n\n".join(text for text in (self.request.memory_summary, compacted) if text) or None
        self.prompt = build_system_prompt(
            base_prompt=self.request.base_prompt,
            memory=memory,
            forced=forced.document if forced else None,
            tool_lines=[(tool.name, tool.summary) for tool in self._offered_tools()],
            skills_block=self.resolution.prompt_block,
            loaded=loaded,
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

    def _offered_tools(self) -> list[Tool]:
        return [tool for name in self.offered if (tool := self.tools.get(name))]

    # --- the loop ---------------------------------------------------------------------------

    def _loop(self, dispatcher: ToolDispatcher, auto_invoker: AutoInvoker) -> TurnResult:
        finish = self.journal.finish
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
                return finish("failed", error=f"the model call failed: {error}")
            answer = (response.content or "").strip()
            calls = response.tool_calls or auto_invoker.calls(step, answer)
            if not calls:
                if not answer:
                    return finish("failed", error="the model returned an empty answer")
                return finish("succeeded", answer=answer)
            calls, skipped = self._within_call_budget(step, calls)
            self.journal.record(model_record(step, response))
            self.conversation.append(_assistant_message(response.content if response.tool_calls else None, calls))
            for number, call in enumerate(calls, start=1):
                stopped = self._check_limits(step, f"tool call {number} of {len(calls)}")
                if stopped:
                    return stopped
                abort_reason = self._handle_tool_call(dispatcher, step, call)
                if abort_reason is not None:
                    return finish("failed", error=f"aborted: {abort_reason}")
            if skipped:
                # Every call in the assistant message has its answer; the model learns from the
                # last one that the rest were dropped and can ask again in its next step.
                self.conversation[-1]["content"] += (
                    f"\n\n[{skipped} more tool calls in this step were not run: at most "
                    f"{len(calls)} tool calls per step. Call the ones you still need in your next step.]"
                )
        return finish("failed", error=f"stopped after {self.request.max_iterations} iterations without a final answer")

    def _within_call_budget(self, step: int, calls: list[ToolCall]) -> tuple[list[ToolCall], int]:
        limit = self.request.max_tool_calls_per_step
        if limit is None or len(calls) <= limit:
            return calls, 0
        self.journal.emit(
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
            return self.journal.finish("cancelled", error="the turn was cancelled")
        elapsed = self.journal.elapsed()
        if self.request.max_seconds is not None and elapsed >= self.request.max_seconds:
            error = f"stopped: the turn exceeded its time budget of {self.request.max_seconds:g} s"
            return self._over_budget(step, before, "time", self.request.max_seconds, round(elapsed, 3), error)
        used = self.result.prompt_tokens + self.result.completion_tokens
        if self.request.max_total_tokens is not None and used >= self.request.max_total_tokens:
            error = f"stopped: the turn used {used} tokens of its {self.request.max_total_tokens} token budget"
            return self._over_budget(step, before, "tokens", self.request.max_total_tokens, used, error)
        return None

    def _over_budget(self, step: int, before: str, budget: str, limit: float, used: float, error: str) -> TurnResult:
        self.journal.emit(
            "budget_exceeded",
            {"step": step, "budget": budget, "limit": limit, "used": used, "before": before, "message": error},
        )
        return self.journal.finish("failed", error=f"{error} (step {step}, before {before})")

    def _call_model(self, step: int) -> LLMResponse:
        tail = []
        if self.forced and step >= 2:
            # seed 000, fix 4: reinforce the forced skill before every later call; sent, not stored,
            # so reminders do not pile up in the conversation.
            tail.append(skill_reminder_message(self.forced.document.name, self.forced.reminder_tools))
            self.journal.emit("skill_reminder", {"step": step, "skill": self.forced.document.name})
        specs = [tool.spec() for tool in self._offered_tools()]
        fitted = self._fit_context(step, tail, specs)
        response = self.journal.replay.response(step) or self.complete(
            self.request.model, fitted.messages, specs, **self.request.llm_options
        )
        self.result.prompt_tokens += response.prompt_tokens
        self.result.completion_tokens += response.completion_tokens
        self.result.cost += response.cost
        self.journal.emit(
            "llm_call",
            {
                "step": step,
                "model": self.request.model,
                "tools": self.offered,
                "system_prompt": fitted.prompt.text,
                "sections": fitted.prompt.names,
                "message_count": len(fitted.messages),
                "prompt_tokens": response.prompt_tokens,
                "completion_tokens": response.completion_tokens,
                "cost": response.cost,
                "latency_ms": response.latency_ms,
                "content": (response.content or "")[:TRACE_CONTENT_CHARS],
                "tool_calls": [call.name for call in response.tool_calls],
            },
        )
        return response

    def _fit_context(self, step: int, tail: list[dict[str, Any]], specs: list[dict[str, Any]]) -> FittedContext:
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
        if fitted.removed:
            self.journal.emit(
                "context_trimmed",
                {
                    "step": step,
                    "removed": fitted.removed,
                    "limit": self.input_limit,
                    "tokens_after": count(fitted.messages),
                },
            )
        return fitted

    # --- tools ------------------------------------------------------------------------------

    def _handle_tool_call(self, dispatcher: ToolDispatcher, step: int, call: ToolCall) -> str | None:
        """Answer one tool call with a tool message; returns the abort reason if it aborts."""
        content, outcome = dispatcher.answer(step, call)
        if len(content) > MAX_TOOL_MESSAGE_CHARS:
            content = content[:MAX_TOOL_MESSAGE_CHARS] + "\n[... tool result truncated ...]"
        self.conversation.append({"role": "tool", "tool_call_id": call.id, "content": content})
        self.journal.record(tool_record(step, call.id, outcome, list(self.tool_context.todos)))
        return outcome.abort_reason if outcome and outcome.ok else None


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


def _required_of(names: list[str], journal: TurnJournal) -> list[LoadedSkill]:
    """What the forced skill and the skills loaded by triggers require, loaded with them in the
    prompt (a forced skill cannot load them itself: the loaders are not offered beside it)."""
    context = journal.tool_context
    context.loaded.update(names)
    loaded = []
    for name in names:
        for item in required_skills(context, name):
            journal.require(item)
            loaded.append(LoadedSkill(item.document, "required"))
    return loaded
