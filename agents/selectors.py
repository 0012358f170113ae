"""Reads for the playground: a turn's trace after a sequence number, its running totals, and the
user's recent conversations. Who may see a turn is `services.agent_turn_get_for_user`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.models import AgentTurn, Conversation, TraceEvent


def turn_trace_events(*, turn: AgentTurn, after: int = 0) -> list[TraceEvent]:
    return list(turn.trace_events.filter(seq__gt=after).order_by("seq"))


@dataclass(frozen=True)
class TurnTotals:
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    model_latency_ms: int
    tool_latency_ms: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def turn_totals(*, turn: AgentTurn) -> TurnTotals:
    """Tokens, cost and latency summed over the trace so far: the turn's row holds them only
    once it has finished, and the playground shows them while it runs. Only the numbers are
    read, never the events' prompts and results."""
    rows = turn.trace_events.filter(type__in=("llm_call", "tool_call")).values_list(
        "type", "data__prompt_tokens", "data__completion_tokens", "data__cost", "data__latency_ms"
    )
    calls = prompt = completion = model_ms = tool_ms = 0
    cost = 0.0
    for kind, prompt_tokens, completion_tokens, call_cost, latency in rows:
        if kind == "llm_call":
            calls += 1
            prompt += int(_number(prompt_tokens))
            completion += int(_number(completion_tokens))
            cost += float(_number(call_cost))
            model_ms += int(_number(latency))
        else:
            tool_ms += int(_number(latency))
    return TurnTotals(calls, prompt, completion, cost, model_ms, tool_ms)


@dataclass(frozen=True)
class SkillRun:
    name: str
    version: Any
    trigger: str


def turn_skills_run(*, turn: AgentTurn) -> list[SkillRun]:
    """Each skill the turn has loaded so far, at the version it ran (its `skill_activated`
    events; the usage events carry the same once the turn ends), first load first."""
    rows = turn.trace_events.filter(type="skill_activated").order_by("seq")
    found: dict[str, SkillRun] = {}
    for skill, version, trigger in rows.values_list("data__skill", "data__version", "data__trigger"):
        found.setdefault(str(skill), SkillRun(str(skill), version, str(trigger or "")))
    return list(found.values())


def conversation_turns(*, user: Any, conversation_id: Any, before: AgentTurn | None = None) -> list[AgentTurn]:
    """The turns of a conversation that `user` may see (their own; an admin's, all), oldest
    first; those before `before` when given."""
    turns = AgentTurn.objects.filter(conversation_id=conversation_id).order_by("created_at")
    if not user.is_superuser:
        turns = turns.filter(user=user)
    if before is not None:
        turns = turns.filter(created_at__lt=before.created_at)
    return list(turns)


def conversations_recent(*, user: Any, limit: int = 8, include: Any = None) -> list[Conversation]:
    """The user's newest conversations, and the one `include` names when it is theirs but older."""
    recent = list(Conversation.objects.filter(user=user).order_by("-created_at")[:limit])
    if include is not None and all(str(conversation.pk) != str(include) for conversation in recent):
        recent += list(Conversation.objects.filter(pk=include, user=user))
    return recent
