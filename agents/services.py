"""Turn lifecycle: create (web), claim and run (worker), cancel and feedback (web).

The runtime in `agents/runtime/` knows nothing of Django; this module feeds it registry state
and persists what comes back. A turn row moves queued -> running -> succeeded | failed |
cancelled. Running is a lease, renewed while the turn makes progress: a message redelivered
after a worker died can take the turn over once the lease has lapsed, and never while it is
still held, so a turn is never run twice at the same time.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import jsonschema
import kombu.exceptions
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.models import AgentTurn, Conversation, TraceEvent, TurnStatus
from agents.runtime.types import TurnRequest, TurnResult
from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import UsageEvent, UsageKind

# SPEC §6.9: the scripted model's request contract.
SCRIPT_SCHEMA = {
    "type": "array",
    "maxItems": 200,
    "items": {
        "type": "object",
        "properties": {
            "content": {"type": ["string", "null"]},
            "tool_calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}, "arguments": {"type": "object"}},
                    "required": ["name"],
                },
            },
        },
        "additionalProperties": True,
    },
}


def agent_turn_create(
    *,
    user: Any,
    message: str,
    conversation_id: str | None = None,
    model: str | None = None,
    forced_skill: str | None = None,
    script: list[dict] | None = None,
    max_input_tokens: int | None = None,
) -> AgentTurn:
    """Queue a turn; the worker is told only after the row is committed."""
    from agents.tasks import agent_turn_run_task

    model = (model or settings.AGENT_MODEL).strip()
    if model == "scripted":
        if not settings.AGENT_ALLOW_SCRIPTED:
            raise ApplicationError(
                "The scripted model is disabled here (AGENT_ALLOW_SCRIPTED is false).",
                fields={"model": "scripted is not allowed"},
            )
        _validate_script(script)
    elif script is not None:
        raise ApplicationError('A script is only used with "model": "scripted".', fields={"script": "remove it"})

    with transaction.atomic():
        conversation = _conversation_for(user=user, conversation_id=conversation_id, message=message)
        turn = AgentTurn.objects.create(
            conversation=conversation,
            user=user if getattr(user, "is_authenticated", False) else None,
            message=message,
            model=model,
            forced_skill=forced_skill or "",
            script=script,
            max_input_tokens=max_input_tokens,
        )
        transaction.on_commit(lambda: _enqueue(agent_turn_run_task, str(turn.id)))
    return turn


def _enqueue(task, turn_id: str) -> None:
    try:
        task.delay(turn_id)
    except kombu.exceptions.OperationalError as error:
        # No worker will ever hear of this turn: say so on the turn rather than leave it queued.
        # The error itself goes on to the caller, who gets a 503 and can send the turn again.
        agent_turn_fail(turn_id=turn_id, error=f"Could not queue the turn: the task broker is unavailable ({error}).")
        raise


def _validate_script(script: Any) -> None:
    if script is None:
        raise ApplicationError('The scripted model needs a "script": a list of steps.', fields={"script": "required"})
    try:
        jsonschema.validate(script, SCRIPT_SCHEMA)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "script"
        raise ApplicationError(
            f"Invalid script at {where}: {error.message}", fields={"script": error.message}
        ) from None


def _conversation_for(*, user: Any, conversation_id: str | None, message: str) -> Conversation:
    if conversation_id is None:
        return Conversation.objects.create(user=user if user.is_authenticated else None, title=message[:200])
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None or (conversation.user_id and conversation.user_id != user.pk and not user.is_superuser):
        raise NotFound(f"No conversation {conversation_id}.", fields={"conversation": "unknown"})
    return conversation


def agent_turn_get_for_user(*, user: Any, turn_id: Any) -> AgentTurn:
    """The one place that answers "may this user see this turn": the owner or an admin."""
    turn = AgentTurn.objects.filter(pk=turn_id).first()
    if turn is None or (turn.user_id != user.pk and not user.is_superuser):
        raise NotFound(f"No turn {turn_id}.")
    return turn


def agent_turn_cancel(*, turn: AgentTurn) -> AgentTurn:
    # A queued turn is cancelled at once; a running one stops at its next step.
    AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.QUEUED).update(
        status=TurnStatus.CANCELLED, finished_at=timezone.now(), error="Cancelled before it started."
    )
    AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(cancel_requested=True)
    turn.refresh_from_db()
    return turn


def agent_turn_feedback(*, turn: AgentTurn, rating: str, comment: str = "") -> AgentTurn:
    if rating not in ("up", "down"):
        raise ApplicationError("rating must be 'up' or 'down'.", fields={"rating": "up or down"})
    if not turn.is_finished:
        raise Conflict("Feedback can be given once the turn has finished.", fields={"turn": turn.status})
    value = 1 if rating == "up" else -1
    with transaction.atomic():
        turn.feedback_rating, turn.feedback_comment = value, comment[:2000]
        turn.save(update_fields=["feedback_rating", "feedback_comment"])
        # One feedback event per skill loaded in the turn; the id makes re-sending idempotent,
        # and the latest rating wins.
        for name, version in _loaded_skills(turn):
            UsageEvent.objects.update_or_create(
                event_id=f"{turn.pk}:feedback:{name}",
                defaults={
                    "kind": UsageKind.FEEDBACK,
                    "skill_name": name,
                    "version": version,
                    "turn": turn,
                    "rating": value,
                    "at": timezone.now(),
                },
            )
    return turn


def _loaded_skills(turn: AgentTurn) -> list[tuple[str, int | None]]:
    rows = turn.usage_events.filter(kind=UsageKind.LOADED).values_list("skill_name", "version").distinct()
    return sorted(set(rows))


# --- worker side --------------------------------------------------------------------------


def agent_turn_claim(*, turn_id: str) -> AgentTurn | None:
    """Take the turn for this worker, or None when it is finished or another worker holds it.

    The conditional UPDATE is the lock: of two deliveries of one message, exactly one sees a
    row to update. A previous attempt's partial trace is discarded in the same transaction,
    so a re-run never shows duplicate events.
    """
    now = timezone.now()
    with transaction.atomic():
        claimed = AgentTurn.objects.filter(
            Q(status=TurnStatus.QUEUED) | Q(status=TurnStatus.RUNNING, lease_expires_at__lt=now), pk=turn_id
        ).update(
            status=TurnStatus.RUNNING,
            started_at=now,
            attempts=F("attempts") + 1,
            lease_expires_at=now + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS),
        )
        if not claimed:
            return None
        turn = AgentTurn.objects.get(pk=turn_id)
        TraceEvent.objects.filter(turn=turn).delete()
        return turn


def agent_turn_lease_remaining(*, turn_id: str) -> float | None:
    """Seconds until a running turn's lease lapses, or None when the turn is not running."""
    lease = (
        AgentTurn.objects.filter(pk=turn_id, status=TurnStatus.RUNNING)
        .values_list("lease_expires_at", flat=True)
        .first()
    )
    return None if lease is None else max(0.0, (lease - timezone.now()).total_seconds())


def agent_turn_requeue(*, turn: AgentTurn, reason: str) -> None:
    """A transient model error: give the turn back so the retried message can claim it."""
    AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING).update(
        status=TurnStatus.QUEUED, error=reason[:2000]
    )


def agent_turn_fail(*, turn_id: str, error: str) -> None:
    AgentTurn.objects.filter(pk=turn_id).exclude(status__in=(TurnStatus.SUCCEEDED, TurnStatus.CANCELLED)).update(
        status=TurnStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def agent_turn_finish(*, turn: AgentTurn, result: TurnResult) -> None:
    """Store the outcome and the turn's usage events in one transaction (SPEC §8)."""
    with transaction.atomic():
        AgentTurn.objects.filter(pk=turn.pk).update(
            status=result.status,
            answer=result.answer,
            error=result.error or "",
            steps=result.steps,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost=result.cost,
            finished_at=timezone.now(),
        )
        UsageEvent.objects.bulk_create(_usage_events(turn, result), ignore_conflicts=True)


def _usage_events(turn: AgentTurn, result: TurnResult) -> list[UsageEvent]:
    """Deterministic event ids: writing the same turn's events twice stores them once."""
    now = timezone.now()
    events: list[UsageEvent] = []

    def add(kind: str, key: str, name: str, version: int | None, trigger: str = "") -> None:
        events.append(
            UsageEvent(
                event_id=f"{turn.pk}:{kind}:{key}"[:100],
                kind=kind,
                skill_name=name,
                version=version,
                trigger=trigger,
                turn=turn,
                at=now,
            )
        )

    versions = {a.name: a.version for a in result.activations}
    for name in dict.fromkeys(result.offered):
        add(UsageKind.OFFERED, name, name, versions.get(name))
    for index, activation in enumerate(result.activations):
        add(UsageKind.LOADED, f"{activation.name}:{index}", activation.name, activation.version, activation.trigger)
    for index, execution in enumerate(result.executions):
        add(
            UsageKind.EXECUTED,
            f"{execution.skill_name}:{index}",
            execution.skill_name,
            versions.get(execution.skill_name),
        )
    if result.status in ("succeeded", "failed"):
        outcome = UsageKind.SUCCEEDED if result.status == "succeeded" else UsageKind.FAILED
        for name, version in versions.items():
            add(outcome, name, name, version)
    return events


def agent_turn_run(*, turn: AgentTurn) -> TurnResult:
    """Run a claimed turn through the runtime. Raises TransientLLMError for the task to retry."""
    from agents.runtime.loop import run_turn
    from agents.store import RegistrySkillStore, resolution_for_turn
    from agents.tools import tool_registry
    from agents.trace import DatabaseTraceSink

    workspace = settings.AGENT_WORKSPACE_ROOT / str(turn.conversation_id or turn.pk)
    workspace.mkdir(parents=True, exist_ok=True)
    request = TurnRequest(
        message=turn.message,
        model=turn.model,
        workspace=workspace,
        history=_history(turn),
        forced_skill=turn.forced_skill or None,
        max_iterations=settings.AGENT_MAX_ITERATIONS,
        max_input_tokens=turn.max_input_tokens,
        max_total_tokens=settings.AGENT_MAX_TOTAL_TOKENS,
        max_seconds=settings.AGENT_MAX_SECONDS,
        llm_options=_llm_options(turn),
        memory_summary=turn.conversation.summary if turn.conversation else None,
    )
    store = RegistrySkillStore()
    sink = DatabaseTraceSink(turn)
    result = run_turn(
        request,
        store=store,
        resolution=resolution_for_turn(message=turn.message, forced_skill=request.forced_skill),
        tools=tool_registry(),
        trace=sink,
        should_cancel=sink.should_cancel,
    )
    agent_turn_finish(turn=turn, result=result)
    return result


def _history(turn: AgentTurn) -> list[dict[str, str]]:
    if turn.conversation_id is None:
        return []
    earlier = (
        AgentTurn.objects.filter(
            conversation_id=turn.conversation_id, created_at__lt=turn.created_at, status=TurnStatus.SUCCEEDED
        )
        .order_by("created_at")
        .values_list("message", "answer")
    )
    history: list[dict[str, str]] = []
    for message, answer in earlier:
        history += [{"role": "user", "content": message}, {"role": "assistant", "content": answer}]
    return history


def _llm_options(turn: AgentTurn) -> dict[str, Any]:
    if turn.model == "scripted":
        return {"script": turn.script or []}
    options: dict[str, Any] = {}
    if settings.AGENT_API_BASE:
        options["api_base"] = settings.AGENT_API_BASE
    if settings.AGENT_API_KEY:
        options["api_key"] = settings.AGENT_API_KEY
    return options
