"""Reads of turns: the turn list with its filters, counts and failure causes (API and console
alike), a turn's trace after a sequence number, its running totals, and the user's recent
conversations. Who may read which turns is `turn_reader`, for lists and single turns alike."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Sum

from agents.models import AgentTurn, Conversation, FailureCause, PromptText, TraceEvent, TurnOrigin, TurnStatus
from registry.errors import NotFound
from registry.models import HourlyRollup, UsageEvent, UsageKind, UsageSource
from registry.roles import ADMIN, ANALYST, user_roles

RUN, ANALYTICS = "agent:run", "analytics:read"


# --- who reads which turns -------------------------------------------------------------------


@dataclass(frozen=True)
class TurnReader:
    """Whose turns a request may read: every turn, or only its user's."""

    user_id: int
    sees_all: bool


def turn_reader(*, user: Any, scopes: set[str]) -> TurnReader | None:
    """The one answer to "may this user see this turn". Admins (with either scope) and analysts
    (with `analytics:read`) read every turn; anyone with `agent:run` reads their own; None for a
    request that may read no turn. `scopes` are the request's: a console user's role's, or an
    API token's (cut to its owner's role). Acting on a turn (the playground, feedback, cancel)
    passes only `agent:run`: an admin acts on any turn, anyone else on their own."""
    roles = user_roles(user)
    if (ADMIN in roles and scopes & {RUN, ANALYTICS}) or (ANALYST in roles and ANALYTICS in scopes):
        return TurnReader(user_id=user.pk, sees_all=True)
    if RUN in scopes:
        return TurnReader(user_id=user.pk, sees_all=False)
    return None


def turn_get_for_reader(*, reader: TurnReader, turn_id: Any) -> AgentTurn:
    """One turn, when `reader` may read it (else NotFound: a turn one may not read does not exist)."""
    turn = _turns_visible(reader).filter(pk=turn_id).first()
    if turn is None:
        raise NotFound(f"No turn {turn_id}.")
    return turn


# --- the turn list ---------------------------------------------------------------------------

# The usage events a list filtered by skill, version or trigger can be matched against: the
# events the analytics pages count, so a count there and the list it links to agree. `outcome`
# is either outcome (a success rate's n).
OUTCOME = "outcome"
EVENT_KINDS = (
    UsageKind.LOADED,
    UsageKind.EXECUTED,
    UsageKind.SUCCEEDED,
    UsageKind.FAILED,
    OUTCOME,
    UsageKind.FEEDBACK,
)


@dataclass(frozen=True)
class TurnFilter:
    """What the turn list is narrowed by. `skill`, `version` and `trigger` match the runtime
    usage events of the turn: its loads, or with `event` the events of that kind (a skill's
    outcomes, its feedback). Dates are whole UTC days, inclusive: of the turn's creation, or with
    `event` of the event, as the analytics pages count them."""

    skill: str | None = None
    source: str | None = None  # which of the skills of that name (bundled, user, workspace)
    version: int | None = None
    trigger: str | None = None
    event: str | None = None
    status: str | None = None
    model: str | None = None
    origin: str | None = None
    feedback: str | None = None  # "up" | "down"
    cause: str | None = None
    detail: str | None = None  # the cause's detail: the tool, the budget, the abort's reason
    q: str | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None

    @property
    def by_event(self) -> bool:
        return any(value is not None for value in (self.skill, self.source, self.version, self.trigger, self.event))


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def _event_filter(filters: TurnFilter) -> Q:
    """The usage events a turn must have (runtime events only: they are the ones with a turn)."""
    kind = filters.event or UsageKind.LOADED
    events = Q(kind__in=(UsageKind.SUCCEEDED, UsageKind.FAILED)) if kind == OUTCOME else Q(kind=kind)
    if filters.skill is not None:
        events &= Q(skill_name=filters.skill)
    if filters.source is not None:
        events &= Q(skill_source=filters.source)
    if filters.version is not None:
        events &= Q(version=filters.version)
    if filters.trigger is not None:
        events &= Q(trigger=filters.trigger)
    if kind == UsageKind.FEEDBACK and filters.feedback:
        events &= Q(rating=1 if filters.feedback == "up" else -1)
    if filters.event and filters.model:
        events &= Q(model=filters.model)
    if filters.event and filters.date_from:
        events &= Q(at__gte=_day_start(filters.date_from))
    if filters.event and filters.date_to:
        events &= Q(at__lt=_day_start(filters.date_to) + dt.timedelta(days=1))
    return events


def _turns_visible(reader: TurnReader) -> QuerySet[AgentTurn]:
    turns = AgentTurn.objects.order_by("-created_at")
    return turns if reader.sees_all else turns.filter(user_id=reader.user_id)


def _narrowed(turns: QuerySet[AgentTurn], filters: TurnFilter, *, status: bool = True) -> QuerySet[AgentTurn]:
    if status and filters.status:
        turns = turns.filter(status=filters.status)
    if filters.model:
        turns = turns.filter(model=filters.model)
    if filters.origin:
        turns = turns.filter(origin=filters.origin)
    else:  # eval runs' turns are listed on their run, and here only when asked for
        turns = turns.exclude(origin=TurnOrigin.EVAL)
    if filters.feedback:
        turns = turns.filter(feedback_rating=1 if filters.feedback == "up" else -1)
    if filters.cause:
        turns = turns.filter(failure_cause=filters.cause)
    if filters.detail is not None:
        turns = turns.filter(failure_detail=filters.detail)
    if filters.q:
        turns = turns.filter(message__icontains=filters.q)
    if not filters.event:
        if filters.date_from:
            turns = turns.filter(created_at__gte=_day_start(filters.date_from))
        if filters.date_to:
            turns = turns.filter(created_at__lt=_day_start(filters.date_to) + dt.timedelta(days=1))
    if filters.by_event:
        events = UsageEvent.objects.filter(_event_filter(filters), turn=OuterRef("pk"))
        turns = turns.filter(Exists(events))
    return turns


def turns_filtered(*, reader: TurnReader, filters: TurnFilter) -> QuerySet[AgentTurn]:
    """The turns `reader` may read that match `filters`, newest first, each with `loaded_events`
    (the skill versions it loaded, with their triggers) once evaluated."""
    loaded = (
        UsageEvent.objects.filter(kind=UsageKind.LOADED)
        .order_by("id")
        .only("turn_id", "skill_name", "version", "trigger")
    )
    return _narrowed(_turns_visible(reader), filters).prefetch_related(
        Prefetch("usage_events", queryset=loaded, to_attr="loaded_events")
    )


@dataclass(frozen=True)
class CauseCount:
    cause: str
    detail: str
    count: int

    @property
    def title(self) -> str:
        return FailureCause(self.cause).label if self.cause in FailureCause.values else self.cause


@dataclass
class TurnCounts:
    """The list's total and the counts beside its filters: per status (whatever status is
    chosen, so each can be switched to), per origin and feedback within the list, and its failed
    and cancelled turns by cause and detail (most first)."""

    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_origin: dict[str, int] = field(default_factory=dict)
    feedback_up: int = 0
    feedback_down: int = 0
    failed: int = 0
    cancelled: int = 0
    causes: list[CauseCount] = field(default_factory=list)


def turn_counts(*, reader: TurnReader, filters: TurnFilter) -> TurnCounts:
    """Every count from one grouped pass over the turns the filters select bar the status filter
    (at most a few hundred groups: statuses x origins x ratings x causes), added up here."""
    groups = (
        _narrowed(_turns_visible(reader), filters, status=False)
        .order_by()
        .values_list("status", "origin", "feedback_rating", "failure_cause", "failure_detail")
        .annotate(count=Count("pk"))
    )
    counts = TurnCounts(by_status=dict.fromkeys(TurnStatus.values, 0), by_origin=dict.fromkeys(TurnOrigin.values, 0))
    causes: dict[tuple[str, str], int] = {}
    for status, origin, rating, cause, detail, count in groups:
        counts.by_status[status] = counts.by_status.get(status, 0) + count
        if filters.status and status != filters.status:
            continue
        counts.total += count
        counts.by_origin[origin] = counts.by_origin.get(origin, 0) + count
        counts.feedback_up += count if rating == 1 else 0
        counts.feedback_down += count if rating == -1 else 0
        if status in (TurnStatus.FAILED, TurnStatus.CANCELLED):
            if status == TurnStatus.FAILED:
                counts.failed += count
            else:
                counts.cancelled += count
            # A turn that ended before causes were kept has none stored.
            key = (cause or (FailureCause.CANCELLED if status == TurnStatus.CANCELLED else FailureCause.OTHER), detail)
            causes[key] = causes.get(key, 0) + count
    counts.causes = sorted(
        (CauseCount(cause, detail, count) for (cause, detail), count in causes.items()),
        key=lambda c: (-c.count, c.cause, c.detail),
    )
    return counts


@dataclass(frozen=True)
class EventCount:
    """The events behind an analytics count that a list of turns drills into: those of the
    listed turns (a turn may hold several, e.g. a skill loaded through two triggers) and those
    outside agents reported through `POST /usage`, which have no turn."""

    of_turns: int
    outside: int

    @property
    def total(self) -> int:
        return self.of_turns + self.outside


# The rollup counters an event kind adds to (feedback by its rating).
_ROLLUP_COUNTERS = {
    UsageKind.LOADED: ("loaded",),
    UsageKind.EXECUTED: ("executed",),
    UsageKind.SUCCEEDED: ("succeeded",),
    UsageKind.FAILED: ("failed",),
    OUTCOME: ("succeeded", "failed"),
    UsageKind.FEEDBACK: ("feedback_up", "feedback_down"),
}


def turn_event_count(*, reader: TurnReader, filters: TurnFilter) -> EventCount | None:
    """None when the list is not one of a skill's event counts (`event` and `skill` given).

    The listed turns' events are found through the turn index; the outside agents' in the hourly
    rollups the analytics pages read (their events have no index of their own: `POST /usage`
    ingest pays for every index on its hot path). Whole UTC days are whole hours, so the rollup
    rows of the range are exactly its events."""
    if not filters.event or filters.skill is None:
        return None
    listed = _narrowed(_turns_visible(reader), filters).order_by().values("pk")
    of_turns = UsageEvent.objects.filter(_event_filter(filters), turn__in=listed).count()
    counters = _ROLLUP_COUNTERS[filters.event]
    if filters.event == UsageKind.FEEDBACK and filters.feedback:
        counters = ("feedback_up",) if filters.feedback == "up" else ("feedback_down",)
    rows = HourlyRollup.objects.filter(source=UsageSource.API, skill_name=filters.skill)
    if filters.source is not None:
        rows = rows.filter(skill_source=filters.source)
    if filters.version is not None:
        rows = rows.filter(version=filters.version)
    if filters.trigger is not None:
        rows = rows.filter(trigger=filters.trigger)
    if filters.model:
        rows = rows.filter(model=filters.model)
    if filters.date_from:
        rows = rows.filter(bucket__gte=_day_start(filters.date_from))
    if filters.date_to:
        rows = rows.filter(bucket__lt=_day_start(filters.date_to) + dt.timedelta(days=1))
    sums = rows.aggregate(**{counter: Sum(counter) for counter in counters})
    return EventCount(of_turns=of_turns, outside=sum(value or 0 for value in sums.values()))


# --- one turn: its trace, totals and conversation ------------------------------------------


def turn_trace_events(*, turn: AgentTurn, after: int = 0) -> list[TraceEvent]:
    """The turn's events after `after`, each with its full data (SPEC §6.10): a prompt stored
    apart (PromptText) is put back as `system_prompt`; events from before prompts were stored
    apart hold it in their data already. Each distinct prompt is read once, not once per event."""
    events = list(turn.trace_events.filter(seq__gt=after).order_by("seq"))
    keys = {event.prompt_id for event in events if event.prompt_id}
    texts = dict(PromptText.objects.filter(sha256__in=keys).values_list("sha256", "text")) if keys else {}
    for event in events:
        if event.prompt_id:
            event.data = {**event.data, "system_prompt": texts[event.prompt_id]}
    return events


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
class LoadedSkill:
    """A skill a turn loaded, at the version it ran, with the trigger that loaded it: read from
    the trace while the turn runs (`skill_activated` events) and from the usage events once it
    ended; the turn page, the playground and the feedback service all take this shape."""

    name: str
    version: Any  # None where the trace or the event has none
    trigger: str
    source: str = ""  # known from the usage events, not the trace


def turn_skills_run(*, turn: AgentTurn) -> list[LoadedSkill]:
    """Each skill the turn has loaded so far, at the version it ran (its `skill_activated`
    events; the usage events carry the same once the turn ends), first load first."""
    rows = turn.trace_events.filter(type="skill_activated").order_by("seq")
    found: dict[str, LoadedSkill] = {}
    for skill, version, trigger in rows.values_list("data__skill", "data__version", "data__trigger"):
        found.setdefault(str(skill), LoadedSkill(str(skill), version, str(trigger or "")))
    return list(found.values())


def turn_row_skills(turn: Any) -> list[LoadedSkill]:
    """The loads `turns_filtered` fetched with a listed turn (its `loaded_events`), in order."""
    return [LoadedSkill(event.skill_name, event.version, event.trigger) for event in turn.loaded_events]


def trace_skills_loaded(events: Iterable[TraceEvent]) -> list[LoadedSkill]:
    """Every load among a turn's trace events (a skill loaded twice shows twice), in order."""
    return [
        LoadedSkill(str(event.data.get("skill", "")), event.data.get("version"), str(event.data.get("trigger", "")))
        for event in events
        if event.type == "skill_activated" and isinstance(event.data, dict)
    ]


def turn_skills_loaded(*, turn: AgentTurn) -> list[LoadedSkill]:
    """Each skill the ended turn loaded, with its source; the trigger is the one its outcome
    event carries (its first load's), else one of its loads' (a cancelled turn has no outcome)."""
    rows = turn.usage_events.filter(kind__in=(UsageKind.LOADED, UsageKind.SUCCEEDED, UsageKind.FAILED))
    found: dict[str, LoadedSkill] = {}
    for _kind, _, name, source, version, trigger in sorted(
        rows.values_list("kind", "event_id", "skill_name", "skill_source", "version", "trigger"),
        key=lambda row: (row[0] == UsageKind.LOADED, row[1]),
    ):
        found.setdefault(name, LoadedSkill(name, version, trigger, source))
    return sorted(found.values(), key=lambda skill: skill.name)


def conversation_turns(*, reader: TurnReader, conversation_id: Any, before: AgentTurn | None = None) -> list[AgentTurn]:
    """The turns of a conversation that `reader` may see, oldest first; those before `before`
    when given."""
    turns = _turns_visible(reader).filter(conversation_id=conversation_id).order_by("created_at")
    if before is not None:
        turns = turns.filter(created_at__lt=before.created_at)
    return list(turns)


def conversations_recent(*, user: Any, limit: int = 8, include: Any = None) -> list[Conversation]:
    """The user's newest conversations, and the one `include` names when it is theirs but older."""
    recent = list(Conversation.objects.filter(user=user).order_by("-created_at")[:limit])
    if include is not None and all(str(conversation.pk) != str(include) for conversation in recent):
        recent += list(Conversation.objects.filter(pk=include, user=user))
    return recent
