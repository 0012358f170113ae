"""Turn lifecycle: create (web), claim and run (worker), reap, cancel and feedback.

The runtime in `agents/runtime/` knows nothing of Django; this module feeds it registry state
and persists what comes back. A turn row moves queued -> running -> succeeded | failed |
cancelled. Running is a lease held by one attempt (agents/turns/lease.py) and renewed while its
worker lives. When a worker dies, the reaper (agent_turns_reap, run by every worker) finds the
lapsed lease and requeues the turn; the next attempt resumes from the turn's checkpoints
(agents/runtime/replay.py). Every write of an attempt is fenced by its attempt number, so a turn
ends exactly once however many workers died or woke up late.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import jsonschema
import kombu.exceptions
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents.model_strings import SCRIPTED, model_string_problem
from agents.models import AgentTurn, Conversation, FailureCause, TraceEvent, TurnCheckpoint, TurnOrigin, TurnStatus
from agents.runtime.cgroups import run_cgroups_sweep
from agents.runtime.forcing import forced_skill_and_query
from agents.runtime.llm import provider_of
from agents.runtime.loop import run_turn
from agents.runtime.types import TurnRequest, TurnResult
from agents.turns.causes import failure_cause
from agents.turns.lease import LeaseKeeper, TurnLost
from agents.turns.selectors import turn_skills_loaded
from agents.turns.store import RegistrySkillStore, resolution_for_turn
from agents.turns.tools import tool_registry
from agents.turns.trace import DatabaseTraceSink, trace_event_append
from registry.errors import ApplicationError, Conflict, NotFound
from registry.models import Skill, UsageKind, UsageSource
from registry.readmodel.generation import change_listener
from registry.readmodel.rollouts import subject_of, subject_pins
from registry.readmodel.served import skill_lacks_label
from registry.selectors import resolve as registry_resolve
from registry.selectors.versions import skill_version_numbers
from registry.services.labels import LABEL_NAME
from registry.services.usage import UsageEventInput, usage_feedback_set, usage_record

logger = logging.getLogger(__name__)

TURN_TASK = "agents.tasks.agent_turn_run_task"

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


def agent_models_allowed() -> list[str]:
    """The models a turn may name: AGENT_MODELS (settings fill in its default), without
    `scripted` while AGENT_ALLOW_SCRIPTED is off."""
    listed = settings.AGENT_MODELS
    return [model for model in dict.fromkeys(listed) if model != SCRIPTED or settings.AGENT_ALLOW_SCRIPTED]


def agent_model_check(*, model: str | None) -> str:
    """The model a turn runs with: `model`, or AGENT_MODEL when none is named, once it is one of
    `agent_models_allowed()` and embeds no URL (checked again here though settings refused such
    a list at start-up). Everything that hands a model to litellm asks this first: a model
    string chooses where litellm sends the prompt, and with it the operator's key."""
    chosen = (model or "").strip() or settings.AGENT_MODEL
    allowed = agent_models_allowed()
    if chosen == SCRIPTED and not settings.AGENT_ALLOW_SCRIPTED:
        raise ApplicationError(
            "The scripted model is disabled here (AGENT_ALLOW_SCRIPTED is false).",
            fields={"model": "scripted is not allowed"},
            extra={"allowed_models": allowed},
        )
    problem = model_string_problem(chosen)
    if problem or chosen not in allowed:
        raise ApplicationError(
            f"The model {chosen[:120]!r} is refused: {problem or 'it is not one of AGENT_MODELS'}. "
            f"Allowed: {', '.join(allowed)}.",
            fields={"model": f"one of {', '.join(allowed)}"},
            extra={"allowed_models": allowed},
        )
    return chosen


def agent_turn_create(
    *,
    user: Any,
    message: str,
    conversation_id: str | None = None,
    model: str | None = None,
    forced_skill: str | None = None,
    script: list[dict] | None = None,
    max_input_tokens: int | None = None,
    origin: str = TurnOrigin.API,
    label: str | None = None,
    skill_versions: Mapping[str, int] | None = None,
    hidden_skills: Sequence[str] = (),
) -> AgentTurn:
    """Queue a turn; the worker is told only after the row is committed.

    Every skill of the turn is resolved at `label` (as resolve does: only the skills that carry
    it; without one, production, else latest) and the skills in `skill_versions` at exactly
    those versions: what it offers, what `read_skill` and a forced skill load, what its usage
    events report. The
    skills in `hidden_skills` are pinned to version 0, which no skill has, so resolve leaves them
    out of the turn altogether (an eval's baseline: the same case without the skill)."""
    model = agent_model_check(model=model)
    if model == SCRIPTED:
        _validate_script(script)
    elif script is not None:
        raise ApplicationError('A script is only used with "model": "scripted".', fields={"script": "remove it"})
    label = agent_turn_label_check(label=label)
    pins = agent_turn_pins_check(skill_versions=skill_versions, label=label)
    pins.update(dict.fromkeys(hidden_skills, 0))
    _check_forced_skill(message=message, forced_skill=forced_skill, label=label, pins=pins)

    with transaction.atomic():
        conversation = _conversation_for(user=user, conversation_id=conversation_id, message=message, pins=pins)
        turn = AgentTurn.objects.create(
            conversation=conversation,
            user=user if getattr(user, "is_authenticated", False) else None,
            message=message,
            model=model,
            forced_skill=forced_skill or "",
            label=label or "",
            skill_versions=pins,
            script=script,
            max_input_tokens=max_input_tokens,
            origin=origin,
            lease_expires_at=_lease_from_now(),  # queued: when the reaper sends the message again
        )
        transaction.on_commit(lambda: _enqueue(str(turn.id)))
    return turn


def agent_turns_create(*, user: Any, runs: Sequence[Mapping[str, Any]]) -> list[AgentTurn]:
    """Queue several turns (each `runs` item is `agent_turn_create`'s arguments), all or none: a
    side-by-side run of two versions either starts both or names what is wrong with one."""
    with transaction.atomic():
        return [agent_turn_create(user=user, **run) for run in runs]


def _enqueue(turn_id: str) -> None:
    try:
        _queue_turn_message(turn_id)
    except kombu.exceptions.OperationalError as error:
        # No worker will ever hear of this turn: say so on the turn rather than leave it queued.
        # The error itself goes on to the caller, who gets a 503 and can send the turn again.
        agent_turn_fail(turn_id=turn_id, error=f"Could not queue the turn: the task broker is unavailable ({error}).")
        raise


def agent_turn_label_check(*, label: str | None) -> str | None:
    """The label a turn resolves at, or None for the default (production, else latest). Any
    well-formed name is accepted, `latest` included: a label no skill carries gives the turn no
    skills, as it gives resolve's."""
    if label is None or label == "":
        return None
    if not isinstance(label, str) or not LABEL_NAME.fullmatch(label):
        raise ApplicationError(
            f"Label names are 1-36 characters of lowercase letters, digits, '_', '.' and '-'; got {str(label)[:60]!r}.",
            fields={"label": "must match [a-z0-9_.-]{1,36}"},
        )
    return label


def agent_turn_pins_check(*, skill_versions: Any, label: str | None) -> dict[str, int]:
    """`skill_versions` ({skill name: version number}) once every pin names a version the turn
    can run: an enabled skill's existing version whose SKILL.md does not say `enabled: false`.
    A pin chooses which version of a skill in service runs; it never turns on a skill that is
    off (disabled, or off at that version), so such a pin is a 400 like an unknown one."""
    if skill_versions is None:
        return {}
    if not isinstance(skill_versions, Mapping):
        raise ApplicationError(
            'skill_versions must be an object of skill name to version number, e.g. {"code-review": 3}.',
            fields={"skill_versions": "an object of name: version number"},
        )
    # A pin passes over the turn's label (it names a version, not a label), so whether its skill
    # is in service is asked of the skills a request naming no label gets.
    in_effect = registry_resolve.registry_snapshot().by_name
    for name, number in skill_versions.items():
        where = f"skill_versions.{str(name)[:128]}"
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ApplicationError(
                f"The pin for '{str(name)[:128]}' must be a version number (1 or more); got {str(number)[:40]!r}.",
                fields={where: "a version number"},
            )
        if name not in in_effect:
            closest = difflib.get_close_matches(str(name), list(in_effect), n=3, cutoff=0.5)
            disabled = Skill.objects.filter(name=name).exists()
            why = "it is disabled, and a pin does not turn a skill on" if disabled else "no skill has that name"
            hint = f" Did you mean {', '.join(closest)}?" if closest and not disabled else ""
            raise ApplicationError(
                f"Cannot pin '{str(name)[:128]}': {why}.{hint}",
                fields={where: "disabled skill" if disabled else "unknown skill"},
                extra={"suggestions": closest},
            )
    pins = dict(skill_versions)
    pinned = registry_resolve.registry_snapshot(label=label, pins=pins).by_name
    for name, number in pins.items():
        if name in pinned:
            continue
        numbers = skill_version_numbers(name=name)
        why = (
            f"its SKILL.md at version {number} says enabled: false"
            if number in numbers
            else f"it has no version {number} (it has {_numbers_text(numbers)})"
        )
        raise ApplicationError(
            f"Cannot pin '{name}' to version {number}: {why}.",
            fields={f"skill_versions.{name}": "disabled version" if number in numbers else "unknown version"},
            extra={"versions": numbers},
        )
    return pins


def _numbers_text(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"only version {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"versions {numbers[0]}-{numbers[-1]}"
    return "versions " + ", ".join(map(str, numbers))


def _check_forced_skill(
    *, message: str, forced_skill: str | None, label: str | None = None, pins: Mapping[str, int] | None = None
) -> None:
    """Refuse a turn that forces a skill no one can load: a 400 now instead of a 202 and a turn
    that fails in the worker. The name is found as the runtime finds it (the `forced_skill`
    field, else a leading `/command` read by the runtime's own parser), so "/tmp/x is broken"
    is a plain message here as it is there."""
    name, _ = forced_skill_and_query(message, forced_skill)
    if name is None:
        return
    if registry_resolve.skill_effective(name=name, label=label, pins=pins) is not None:
        return
    if skill_lacks_label(name=name, label=label):
        field = "forced_skill" if forced_skill else "message"
        raise ApplicationError(
            f"The skill '{name}' has no label '{label}': a turn at a label reads only the skills that carry it. "
            "Move the label to a version of it, pin a version in skill_versions, or ask without a label.",
            fields={field: f"'{name}' has no label '{label}'"},
        )
    names = list(registry_resolve.registry_snapshot(label=label, pins=pins).by_name)
    closest = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(closest)}?" if closest else ""
    if forced_skill:
        detail, field = f"Unknown skill '{name}' in forced_skill: no enabled skill has that name.{hint}", "forced_skill"
    else:
        detail, field = (
            f"The message starts with '/{name}', a skill command, but no enabled skill is named '{name}'.{hint} "
            "To send text that starts with a slash, put a word before it.",
            "message",
        )
    raise ApplicationError(detail, fields={field: f"unknown skill '{name}'"}, extra={"suggestions": closest})


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


def _conversation_for(*, user: Any, conversation_id: str | None, message: str, pins: Mapping[str, int]) -> Conversation:
    if conversation_id is None:
        # A new conversation's title is its first message, and the versions it pins: the two
        # sides of a side-by-side run are two conversations, which a list must tell apart.
        pinned = ", ".join(f"{name} v{number}" for name, number in sorted(pins.items()) if number)
        title = f"{message[: max(0, 197 - len(pinned))]} ({pinned})" if pinned else message
        return Conversation.objects.create(user=user if user.is_authenticated else None, title=title[:200])
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None or (conversation.user_id and conversation.user_id != user.pk and not user.is_superuser):
        raise NotFound(f"No conversation {conversation_id}.", fields={"conversation": "unknown"})
    return conversation


def agent_turn_cancel(*, turn: AgentTurn) -> AgentTurn:
    """Cancel a turn: at once when it is queued or its worker died (the lease lapsed), else at
    the running attempt's next model or tool call. A finished turn is a Conflict."""
    now = timezone.now()
    with transaction.atomic():
        AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.QUEUED).update(
            status=TurnStatus.CANCELLED,
            finished_at=now,
            error="Cancelled before it started.",
            failure_cause=FailureCause.CANCELLED,
        )
        AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING, lease_expires_at__lt=now).update(
            status=TurnStatus.CANCELLED,
            finished_at=now,
            failure_cause=FailureCause.CANCELLED,
            error="Cancelled; the worker that was running it had stopped responding.",
        )
        AgentTurn.objects.filter(pk=turn.pk, status__in=(TurnStatus.RUNNING, TurnStatus.CANCELLED)).update(
            cancel_requested=True
        )
    turn.refresh_from_db()
    if turn.status in (TurnStatus.SUCCEEDED, TurnStatus.FAILED):
        raise Conflict(f"The turn has already {turn.status}.", fields={"turn": turn.status})
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
        # One feedback event per skill loaded in the turn, with the trigger and model of its
        # load (as its outcome event has them); the id makes re-sending idempotent, and the
        # latest rating wins (in the rollups too).
        for skill in turn_skills_loaded(turn=turn):
            usage_feedback_set(
                event=UsageEventInput(
                    event_id=f"{turn.pk}:feedback:{skill.name}"[:100],
                    kind=UsageKind.FEEDBACK,
                    skill=skill.name,
                    skill_source=skill.source,
                    version=skill.version,
                    trigger=skill.trigger,
                    label=turn.label,
                    model=turn.model,
                    rating=value,
                    turn_id=turn.pk,
                )
            )
    return turn


# --- worker side --------------------------------------------------------------------------


def _lease_from_now(seconds: float | None = None) -> datetime:
    return timezone.now() + timedelta(seconds=seconds or settings.AGENT_TURN_LEASE_SECONDS)


@dataclass(frozen=True)
class ClaimedTurn:
    turn: AgentTurn
    attempt: int  # the fencing token of this claim (agents/turns/lease.py)
    resume: list[dict[str, Any]]  # checkpoints of earlier attempts, oldest first


def agent_turn_claim(*, turn_id: str) -> ClaimedTurn | None:
    """Take a queued turn for this worker, or None when it is running elsewhere or finished.

    The conditional UPDATE is the lock: of two deliveries of one message, exactly one sees a row
    to update. A turn whose worker died is made claimable again by the reaper, never here.
    """
    claimed = AgentTurn.objects.filter(pk=turn_id, status=TurnStatus.QUEUED).update(
        status=TurnStatus.RUNNING,
        started_at=Coalesce(F("started_at"), timezone.now()),
        attempts=F("attempts") + 1,
        lease_expires_at=_lease_from_now(),
    )
    if not claimed:
        return None
    # The turn must see every registry change committed before it was submitted. This process
    # hears of another's change when PostgreSQL forwards the notification, which on a busy machine
    # can come after the turn's first read: that read queries the generation instead.
    change_listener.changed_here()
    turn = AgentTurn.objects.select_related("conversation").get(pk=turn_id)
    resume = [json.loads(record) for record in turn.checkpoints.order_by("index").values_list("record", flat=True)]
    return ClaimedTurn(turn=turn, attempt=turn.attempts, resume=resume)


def agent_turn_requeue(*, claimed: ClaimedTurn, reason: str, wait: float) -> None:
    """A transient model error: give the turn back so the retried message can claim it."""
    AgentTurn.objects.filter(pk=claimed.turn.pk, status=TurnStatus.RUNNING, attempts=claimed.attempt).update(
        status=TurnStatus.QUEUED,
        error=reason[:2000],
        lease_expires_at=_lease_from_now(wait + settings.AGENT_TURN_LEASE_SECONDS),
    )


def agent_turn_fail(*, turn_id: str, error: str, attempt: int | None = None) -> None:
    """End an unfinished turn as failed; with `attempt`, only while that attempt still holds it."""
    turns = AgentTurn.objects.filter(pk=turn_id, status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING))
    if attempt is not None:
        turns = turns.filter(status=TurnStatus.RUNNING, attempts=attempt)
    cause = failure_cause(status=TurnStatus.FAILED, error=error)
    turns.update(
        status=TurnStatus.FAILED,
        error=error[:2000],
        finished_at=timezone.now(),
        failure_cause=cause.cause,
        failure_detail=cause.detail,
    )


def agent_turn_finish(*, turn: AgentTurn, result: TurnResult, trace: DatabaseTraceSink | None = None) -> bool:
    """Store the outcome, the last trace events and the usage events in one transaction
    (SPEC §8). False, and nothing written, when the attempt no longer holds the turn."""
    if trace is not None:
        # Before the transaction: the step in flight updates the turn's row this one locks.
        try:
            trace.settle()
        except TurnLost:
            return False
    with transaction.atomic():
        # Conditioned on the attempt, as the lease is: it fences this write and locks the row
        # for the events and usage written after it.
        finished = AgentTurn.objects.filter(pk=turn.pk, status=TurnStatus.RUNNING, attempts=turn.attempts).update(
            status=result.status,
            answer=result.answer,
            error=result.error or "",
            steps=result.steps,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost=result.cost,
            finished_at=timezone.now(),
        )
        if not finished:
            return False
        if trace is not None:
            trace.flush()  # its held checkpoints are not: a finished turn is never resumed
        if result.status != TurnStatus.SUCCEEDED:
            cause = failure_cause(status=result.status, error=result.error or "", failed_tools=_failed_tools(turn))
            AgentTurn.objects.filter(pk=turn.pk).update(failure_cause=cause.cause, failure_detail=cause.detail)
        if turn.origin != TurnOrigin.EVAL:  # eval traffic stays out of the live analytics
            usage_record(events=_usage_events(turn, result), source=UsageSource.RUNTIME, audit=False)
        TurnCheckpoint.objects.filter(turn=turn).delete()  # a finished turn is never resumed
    return True


def _failed_tools(turn: AgentTurn) -> list[str]:
    """The tool of each tool error, refused call and failed tool call in the turn's trace."""
    failed = TraceEvent.objects.filter(turn=turn, type__in=("tool_error", "tool_refused")) | TraceEvent.objects.filter(
        turn=turn, type="tool_call", data__ok=False
    )
    return [str(tool) for tool in failed.values_list("data__tool", flat=True) if tool]


def _usage_events(turn: AgentTurn, result: TurnResult) -> list[UsageEventInput]:
    """Deterministic event ids: writing the same turn's events twice stores them once.

    The skills the prompt listed go into one compact `offered` event (a turn lists up to ~150);
    each outcome event carries the trigger that loaded the skill and the turn's tokens, cost and
    duration, so rates and costs can be broken down by trigger and model."""
    now = timezone.now()
    started = turn.started_at or now
    events: list[UsageEventInput] = []

    def add(kind: str, key: str, name: str, version: int | None, trigger: str = "", **extra: Any) -> None:
        events.append(
            UsageEventInput(
                event_id=f"{turn.pk}:{kind}:{key}"[:100],
                kind=kind,
                skill=name,
                version=version,
                trigger=trigger,
                label=turn.label,
                model=turn.model,
                turn_id=turn.pk,
                at=now,
                **extra,
            )
        )

    versions = {a.name: a.version for a in result.activations}
    sources = {**result.offered_sources, **{a.name: a.source for a in result.activations}}
    triggers: dict[str, str] = {}
    for activation in result.activations:
        triggers.setdefault(activation.name, activation.trigger)
    offered = tuple(
        (name, versions.get(name), result.offered_sources.get(name, "")) for name in dict.fromkeys(result.offered)
    )
    if offered:
        add(UsageKind.OFFERED, "list", "", None, offered_skills=offered)
    for index, activation in enumerate(result.activations):
        add(
            UsageKind.LOADED,
            f"{activation.name}:{index}",
            activation.name,
            activation.version,
            activation.trigger,
            skill_source=activation.source,
        )
    for index, execution in enumerate(result.executions):
        add(
            UsageKind.EXECUTED,
            f"{execution.skill_name}:{index}",
            execution.skill_name,
            versions.get(execution.skill_name),
            triggers.get(execution.skill_name, ""),
            skill_source=sources.get(execution.skill_name, ""),
        )
    if result.status in ("succeeded", "failed"):
        outcome = UsageKind.SUCCEEDED if result.status == "succeeded" else UsageKind.FAILED
        for name, version in versions.items():
            add(
                outcome,
                name,
                name,
                version,
                triggers.get(name, ""),
                skill_source=sources.get(name, ""),
                tokens=result.prompt_tokens + result.completion_tokens,
                cost=result.cost,
                duration_ms=max(0, int((now - started).total_seconds() * 1000)),
            )
    return events


def agent_turn_run(*, claimed: ClaimedTurn) -> TurnResult:
    """Run a claimed turn through the runtime, from its checkpoints when it was taken over.

    Raises TransientLLMError for the task to retry, and TurnLost when another attempt or a cancel
    took the turn meanwhile (this attempt then stops and writes nothing more).
    """
    turn = claimed.turn
    # Again here: a turn queued before AGENT_MODELS changed fails (the task says why) rather than run.
    agent_model_check(model=turn.model)
    workspace = settings.AGENT_WORKSPACE_ROOT / str(turn.conversation_id or turn.pk)
    workspace.mkdir(parents=True, exist_ok=True)
    forced_skill, query = forced_skill_and_query(turn.message, turn.forced_skill or None)
    label = turn.label or None
    # The turn's conversation (else its user) is its rollout subject: a conversation keeps one
    # version of each skill from turn to turn; the turn's own pins win over a rollout.
    subject = subject_of(conversation=turn.conversation_id, token=f"user:{turn.user_id}" if turn.user_id else None)
    pins = subject_pins(label=label, subject=subject, pins=turn.skill_versions or {})
    request = TurnRequest(
        message=turn.message,
        query=query,
        forced_skill=forced_skill,
        model=turn.model,
        workspace=workspace,
        history=_history(turn),
        max_iterations=settings.AGENT_MAX_ITERATIONS,
        max_input_tokens=turn.max_input_tokens,
        max_total_tokens=settings.AGENT_MAX_TOTAL_TOKENS,
        max_seconds=settings.AGENT_MAX_SECONDS,
        max_tool_calls_per_step=settings.AGENT_MAX_TOOL_CALLS_PER_STEP,
        llm_options=_llm_options(turn),
        memory_summary=turn.conversation.summary if turn.conversation else None,
    )
    # The lease is kept past the time budget by one lease, for the run to finish and write.
    keep_for = settings.AGENT_MAX_SECONDS + settings.AGENT_TURN_LEASE_SECONDS
    with (
        LeaseKeeper(turn_id=turn.pk, attempt=claimed.attempt, max_seconds=keep_for) as lease,
        _scratch_dir(turn),
        DatabaseTraceSink(turn, lease=lease) as sink,
    ):
        result = run_turn(
            request,
            store=RegistrySkillStore(label=label, pins=pins),
            resolution=resolution_for_turn(
                query=request.query, forced_skill=request.forced_skill, label=label, pins=pins
            ),
            tools=tool_registry(),
            trace=sink,
            should_cancel=sink.should_cancel,
            checkpoint=sink.checkpoint,
            settle=sink.settle,
            resume=claimed.resume,
        )
        if not agent_turn_finish(turn=turn, result=result, trace=sink):
            raise TurnLost(f"turn {turn.pk}: attempt {claimed.attempt} ended after it lost the turn")
    return result


@contextmanager
def _scratch_dir(turn: AgentTurn) -> Iterator[Path]:
    """Everything the attempt creates through `tempfile` (run_skill's `skill-run-*` folders) goes
    into one folder, removed when the attempt ends however it ends: here for a normal end or an
    exception, by the reaper (scratch_dirs_sweep) when the process was killed. One turn runs per
    worker process at a time, so pointing this process's tempfile at it is safe."""
    scratch = _scratch_root() / f"{os.getpid()}-{turn.pk}"
    # Others may pass through (a root worker's sandbox runs as uid 65534) but not list it.
    scratch.mkdir(mode=0o711, exist_ok=True)
    previous, tempfile.tempdir = tempfile.tempdir, str(scratch)
    try:
        yield scratch
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(scratch, ignore_errors=True)


def _scratch_root() -> Path:
    """AGENT_SCRATCH_ROOT, made if missing. By default it sits in the shared temporary folder, where
    another local user could have made it first to read or swap a skill's files before its sandbox
    starts: it is used only when it is a real folder of this worker's user that nobody else can
    write to."""
    root = settings.AGENT_SCRATCH_ROOT
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise PermissionError(
            f"AGENT_SCRATCH_ROOT {root} is not a folder of this worker's own that only it can write to; "
            "remove it or point AGENT_SCRATCH_ROOT elsewhere."
        )
    return root


def scratch_dirs_sweep() -> int:
    """Remove the scratch folders of worker processes on this machine that no longer exist, and
    the cgroups of skill runs they were killed in the middle of; returns how many folders."""
    run_cgroups_sweep(process_exists=_process_exists)
    removed = 0
    root = settings.AGENT_SCRATCH_ROOT
    for folder in root.iterdir() if root.is_dir() else ():
        pid = folder.name.partition("-")[0]
        if pid.isdigit() and not _process_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


@dataclass
class ReapReport:
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    redispatched: list[str] = field(default_factory=list)


def agent_turns_reap(*, limit: int = 200) -> ReapReport:
    """Give every turn whose lease lapsed a way to end (run by each worker every
    AGENT_TURN_REAPER_SECONDS; several reapers at once are safe).

    - running, lease lapsed (its worker died): requeued with a fresh message, to be resumed from
      its checkpoints; cancelled if a cancel was asked for; failed once it has been taken over
      AGENT_TURN_MAX_TAKEOVERS times (a turn that kills its worker must not loop forever).
    - queued, not claimed in time: its message is sent again, in case the first was lost with a
      worker (the filesystem broker forgets a message its worker had fetched). Waiting longer
      each time, so a long queue is not flooded; a duplicate message finds the turn claimed and
      is dropped.

    Each change is a conditional UPDATE on what this reaper saw, so of two reapers one acts.
    """
    report = ReapReport()
    now = timezone.now()
    lapsed = AgentTurn.objects.filter(
        status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING), lease_expires_at__lt=now
    ).values_list("pk", "status", "attempts", "takeovers", "cancel_requested", "created_at")
    for turn_id, status, attempts, takeovers, cancel_requested, created_at in lapsed[:limit]:
        seen = AgentTurn.objects.filter(pk=turn_id, status=status, attempts=attempts, lease_expires_at__lt=now)
        if status == TurnStatus.QUEUED:
            if seen.update(lease_expires_at=_lease_from_now(max(0.0, (now - created_at).total_seconds()))):
                _send(turn_id)
                report.redispatched.append(str(turn_id))
            continue
        with transaction.atomic():
            if cancel_requested:
                outcome = "cancelled"
                changed = seen.update(
                    status=TurnStatus.CANCELLED,
                    finished_at=now,
                    error="Cancelled; its worker had stopped responding.",
                    failure_cause=FailureCause.CANCELLED,
                )
            elif takeovers >= settings.AGENT_TURN_MAX_TAKEOVERS:
                outcome = "failed"
                changed = seen.update(
                    status=TurnStatus.FAILED,
                    finished_at=now,
                    failure_cause=FailureCause.OTHER,
                    error=f"The worker running this turn stopped responding {takeovers + 1} times "
                    f"(attempt {attempts}); giving up.",
                )
            else:
                outcome = "requeued"
                changed = seen.update(
                    status=TurnStatus.QUEUED, takeovers=F("takeovers") + 1, lease_expires_at=_lease_from_now()
                )
            if not changed:
                continue
            trace_event_append(
                turn_id=turn_id,
                type="turn_" + outcome,
                data={
                    "attempt": attempts,
                    "takeovers": takeovers + (outcome == "requeued"),
                    "reason": "the worker running the turn stopped renewing its lease",
                },
            )
            if outcome == "requeued":
                transaction.on_commit(partial(_send, turn_id))
        getattr(report, outcome).append(str(turn_id))
    return report


def _send(turn_id: Any) -> None:
    """Queue a turn's message from the reaper. The broker may be down: the turn keeps its
    deadline and the next round sends again."""
    try:
        _queue_turn_message(str(turn_id))
    except kombu.exceptions.OperationalError:
        logger.warning("could not queue turn %s; the reaper will try again", turn_id, exc_info=True)


def _queue_turn_message(turn_id: str) -> None:
    """Tell a worker to run the turn. The task is named rather than imported: agents/tasks.py
    calls into this module, and the dependency stays one way."""
    current_app.send_task(TURN_TASK, args=[turn_id])


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
    return llm_options_for(model=turn.model, script=turn.script)


def llm_options_for(*, model: str, script: list[dict] | None = None) -> dict[str, Any]:
    """What litellm is called with for `model` besides the messages: the scripted model's
    script, or the operator's API base and key where they were given for that provider."""
    if model == SCRIPTED:
        return {"script": script or []}
    options: dict[str, Any] = {}
    # AGENT_API_BASE and AGENT_API_KEY were given for AGENT_MODEL: they go with the models litellm
    # sends to the same provider, and no others. A listed model of another provider reads that
    # provider's own litellm variables (ANTHROPIC_API_KEY, OLLAMA_API_BASE, ...), so the key never
    # reaches a server it was not given for.
    if model != settings.AGENT_MODEL:
        provider = provider_of(model)
        if provider is None or provider != provider_of(settings.AGENT_MODEL):
            return options
    if settings.AGENT_API_BASE:
        options["api_base"] = settings.AGENT_API_BASE
    if settings.AGENT_API_KEY:
        options["api_key"] = settings.AGENT_API_KEY
    return options
