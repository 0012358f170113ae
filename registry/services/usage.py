"""Usage events (SPEC §8): recorded in batches, idempotent by event id, rolled up on write.

Every source writes through `usage_record`: runtime turns, `POST /usage` from external agents,
and feedback (API and playground, through `usage_feedback_set`). A batch is two statements:

1. `INSERT ... ON CONFLICT (event_id) DO NOTHING RETURNING event_id` stores the new events and
   names them. A re-sent batch, or a copy racing in another transaction, inserts nothing (the
   unique index makes the second writer wait for the first and then skip the row).
2. One `INSERT ... ON CONFLICT DO UPDATE SET n = n + excluded.n` adds the counts of exactly those
   new events to their hourly and daily rollups (`UsageRollup`).

Both run in one transaction, so the rollups always equal what the raw events say, late events
land in their own (old) bucket, and a duplicate is refused before it can be counted. Rows are
written in a fixed order (event id, rollup key) so two concurrent batches cannot deadlock.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.db import connection, models, transaction
from django.db.models import Count, F, FloatField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Trunc
from django.utils import timezone

from registry.errors import ApplicationError
from registry.models import ROLLUP_COUNT_COLUMNS as COUNT_COLUMNS
from registry.models import RollupGrain, UsageEvent, UsageKind, UsageRollup, UsageSource
from registry.services.audit import SYSTEM, Actor, audit_record

MAX_BATCH = 1000


@dataclass(frozen=True)
class UsageEventInput:
    event_id: str
    kind: str
    skill: str  # empty for a compact offer row (see `offered_skills`)
    version: int | None = None
    trigger: str = ""
    label: str = ""
    model: str = ""
    client_id: str = ""
    duration_ms: int | None = None
    tokens: int | None = None
    cost: float | None = None
    rating: int | None = None  # feedback: +1 (up) / -1 (down)
    at: dt.datetime | None = None
    turn_id: Any = None
    # kind "offered" only: every skill a turn listed, as (name, version or None), in one row.
    offered_skills: tuple[tuple[str, int | None], ...] | None = None


@dataclass(frozen=True)
class UsageBatchResult:
    accepted: int
    duplicates: int
    accepted_ids: tuple[str, ...]
    duplicate_ids: tuple[str, ...]


def usage_record(
    *,
    events: Sequence[UsageEventInput],
    source: str = UsageSource.API,
    actor: Actor = SYSTEM,
    audit: bool = True,
) -> UsageBatchResult:
    """Store the events not seen before and add them to the rollups, in one transaction.

    `audit=False` is for the runtime, whose turn row already records who ran what; a batch from
    an API client is audited (who sent how many, from which clients)."""
    if len(events) > MAX_BATCH:
        raise ApplicationError(f"At most {MAX_BATCH} events per batch.", fields={"events": f"at most {MAX_BATCH}"})
    for position, event in enumerate(events):
        _validate(position, event)
    # One batch may repeat an id: the first occurrence counts, later ones are duplicates.
    unique: dict[str, UsageEventInput] = {}
    repeated: list[str] = []
    for event in events:
        if event.event_id in unique:
            repeated.append(event.event_id)
        else:
            unique[event.event_id] = event
    now = timezone.now()
    with transaction.atomic():
        inserted = _insert_new(sorted(unique.values(), key=lambda e: e.event_id), source=source, now=now)
        fresh = [event for event_id, event in unique.items() if event_id in inserted]
        _rollup_add(_rollup_counts(_as_fact(e, source=source, now=now) for e in fresh))
        if fresh and audit:
            audit_record(
                actor=actor,
                action="usage.record",
                object_type="usage_event",
                object_repr=f"{len(fresh)} event(s)",
                after={
                    "accepted": len(fresh),
                    "duplicates": len(unique) - len(fresh) + len(repeated),
                    "clients": sorted({e.client_id for e in fresh if e.client_id})[:10],
                },
            )
    duplicates = [event_id for event_id in unique if event_id not in inserted] + repeated
    return UsageBatchResult(
        accepted=len(fresh),
        duplicates=len(duplicates),
        accepted_ids=tuple(e.event_id for e in fresh),
        duplicate_ids=tuple(duplicates),
    )


def usage_feedback_set(*, event: UsageEventInput, source: str = UsageSource.RUNTIME) -> None:
    """Record a feedback event whose rating may change later (a person changes their mind on a
    turn): the newest rating replaces the old one in the event and in its rollups."""
    if event.kind != UsageKind.FEEDBACK or event.rating not in (1, -1):
        raise ApplicationError("Feedback needs a rating of up or down.", fields={"rating": "up or down"})
    with transaction.atomic():
        existing = UsageEvent.objects.select_for_update().filter(event_id=event.event_id).first()
        if existing is None:
            usage_record(events=[event], source=source, audit=False)
            return
        if existing.rating == event.rating:
            return
        old = _fact_of(existing)
        existing.rating = event.rating
        existing.save(update_fields=["rating"])
        counts = _rollup_counts([old], sign=-1)
        for key, value in _rollup_counts([_fact_of(existing)]).items():
            counts[key] = [a + b for a, b in zip(counts.get(key, [0] * len(value)), value, strict=True)]
        _rollup_add(counts)


def _validate(position: int, event: UsageEventInput) -> None:
    if event.kind not in UsageKind.values:
        raise ApplicationError(
            f"Event {position} has kind '{event.kind}'; use one of {', '.join(UsageKind.values)}.",
            fields={f"events[{position}].kind": f"one of {', '.join(UsageKind.values)}"},
        )
    if not event.skill and not (event.kind == UsageKind.OFFERED and event.offered_skills):
        raise ApplicationError(f"Event {position} names no skill.", fields={f"events[{position}].skill": "required"})


# --- storing events ---------------------------------------------------------------------

_EVENT_COLUMNS = (
    "event_id",
    "kind",
    "skill_name",
    "version",
    "trigger",
    "label",
    "model",
    "source",
    "client_id",
    "duration_ms",
    "tokens",
    "cost",
    "rating",
    "offered_skills",
    "at",
    "turn_id",
)


def _insert_new(events: list[UsageEventInput], *, source: str, now: dt.datetime) -> set[str]:
    """Insert the events; return the ids that were new (ON CONFLICT DO NOTHING skipped the rest)."""
    rows = [
        (
            e.event_id,
            e.kind,
            e.skill,
            e.version,
            e.trigger,
            e.label,
            e.model,
            source,
            e.client_id,
            e.duration_ms,
            e.tokens,
            None if e.cost is None else float(e.cost),
            e.rating,
            None if e.offered_skills is None else [list(pair) for pair in e.offered_skills],
            e.at or now,
            None if e.turn_id is None else str(e.turn_id),
        )
        for e in events
    ]
    event_id = connection.ops.quote_name("event_id")
    returned = _insert_rows(
        UsageEvent, _EVENT_COLUMNS, rows, f"ON CONFLICT ({event_id}) DO NOTHING RETURNING {event_id}"
    )
    return {row[0] for row in returned}


def _insert_rows(model: type[models.Model], columns: tuple[str, ...], rows: list[tuple], suffix: str) -> list[tuple]:
    """`INSERT INTO model (columns) <rows> suffix`, returning what the suffix's RETURNING gives.

    Django's bulk_create can neither say which rows ON CONFLICT DO NOTHING skipped nor add to a
    conflicting row, hence the statement is written out. On PostgreSQL the rows go as one array
    per column through unnest(): 16 parameters instead of 16,000 for a batch of 1,000, which
    psycopg would otherwise spend most of the batch's time splicing into the SQL."""
    if not rows:
        return []
    q = connection.ops.quote_name
    fields = [cast(models.Field, model._meta.get_field(name)) for name in columns]
    convert = [f.get_internal_type() in _PREPARED_TYPES for f in fields]
    prepared = [
        tuple(
            f.get_db_prep_save(value, connection) if needed and value is not None else value
            for f, needed, value in zip(fields, convert, row, strict=True)
        )
        for row in rows
    ]
    head = f"INSERT INTO {q(model._meta.db_table)} ({', '.join(q(str(f.column)) for f in fields)}) "
    returned: list[tuple] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = [list(column) for column in zip(*prepared, strict=True)]
            types = ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields)
            cursor.execute(f"{head} SELECT * FROM unnest({types}) {suffix}", arrays)
            returned += cursor.fetchall() if cursor.description else []
        else:
            size = max(1, (connection.features.max_query_params or 999) // len(columns))
            row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
            for start in range(0, len(prepared), size):
                chunk = prepared[start : start + size]
                cursor.execute(
                    f"{head} VALUES {', '.join([row_sql] * len(chunk))} {suffix}",
                    [value for row in chunk for value in row],
                )
                returned += cursor.fetchall() if cursor.description else []
    return returned


# Column types whose Python values the database driver needs converted first (Django does it in
# the ORM; this module writes SQL itself).
_PREPARED_TYPES = {"DateTimeField", "JSONField", "UUIDField", "ForeignKey"}


# --- rollups ---------------------------------------------------------------------------

# What one event contributes: (kind, skill, version, label, trigger, model, source, at, rating,
# tokens, duration_ms, cost, offered_skills). The same shape comes from an input (on write) and
# from a stored row (rebuild), so both paths count with `_rollup_counts`.
Fact = tuple[
    str, str, int | None, str, str, str, str, dt.datetime, int | None, int | None, int | None, float | None, Any
]

FACT_FIELDS = (
    "kind",
    "skill_name",
    "version",
    "label",
    "trigger",
    "model",
    "source",
    "at",
    "rating",
    "tokens",
    "duration_ms",
    "cost",
    "offered_skills",
)

_KIND_COLUMN = {kind: COUNT_COLUMNS.index(kind) for kind in ("offered", "loaded", "executed", "succeeded", "failed")}
_UP, _DOWN, _METERED, _TOKENS, _DURATION, _COST = (COUNT_COLUMNS.index(c) for c in COUNT_COLUMNS[5:])

RollupKey = tuple[str, str, dt.datetime, int, str, str, str, str]  # in _ROLLUP_KEY_COLUMNS order


def _as_fact(e: UsageEventInput, *, source: str, now: dt.datetime) -> Fact:
    return (
        e.kind,
        e.skill,
        e.version,
        e.label,
        e.trigger,
        e.model,
        source,
        e.at or now,
        e.rating,
        e.tokens,
        e.duration_ms,
        e.cost,
        e.offered_skills,
    )


def _fact_of(row: UsageEvent) -> Fact:
    return tuple(getattr(row, name) for name in FACT_FIELDS)  # type: ignore[return-value]


def hour_start(at: dt.datetime) -> dt.datetime:
    return at.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def _rollup_counts(facts: Iterable[Fact], sign: int = 1) -> dict[RollupKey, list]:
    """Counts per hourly and daily rollup key for these events (sign -1 takes them away)."""
    counts: dict[RollupKey, list] = defaultdict(lambda: [0] * (len(COUNT_COLUMNS) - 1) + [0.0])
    for kind, skill, version, label, trigger, model, source, at, rating, tokens, duration, cost, offered in facts:
        hour = hour_start(at)
        day = hour.replace(hour=0)
        if kind == UsageKind.OFFERED and offered:
            targets = [(name, v) for name, v in offered]
        else:
            targets = [(skill, version)]
        for name, number in targets:
            for key in (
                (RollupGrain.HOUR.value, name, hour, number or 0, label, trigger, model, source),
                (RollupGrain.DAY.value, name, day, number or 0, "", "", "", ""),
            ):
                row = counts[key]
                if kind == UsageKind.FEEDBACK:
                    row[_UP if (rating or 0) > 0 else _DOWN] += sign
                else:
                    row[_KIND_COLUMN[kind]] += sign
                if tokens is not None or duration is not None or cost is not None:
                    row[_METERED] += sign
                    row[_TOKENS] += sign * (tokens or 0)
                    row[_DURATION] += sign * (duration or 0)
                    row[_COST] += sign * float(cost or 0)
    return counts


_ROLLUP_KEY_COLUMNS = ("grain", "skill_name", "bucket", "version", "label", "trigger", "model", "source")


def _rollup_add(counts: dict[RollupKey, list]) -> None:
    """Add the counts to their rollup rows in one upsert, keys in a fixed order (no deadlocks)."""
    q = connection.ops.quote_name
    table = q(UsageRollup._meta.db_table)
    updates = ", ".join(f"{q(c)} = {table}.{q(c)} + EXCLUDED.{q(c)}" for c in COUNT_COLUMNS)
    conflict = ", ".join(q(c) for c in _ROLLUP_KEY_COLUMNS)
    rows = [(*key, *values) for key, values in sorted(counts.items())]
    _insert_rows(
        UsageRollup, _ROLLUP_KEY_COLUMNS + COUNT_COLUMNS, rows, f"ON CONFLICT ({conflict}) DO UPDATE SET {updates}"
    )


def usage_rollups_rebuild(*, since: dt.date | None = None, actor: Actor = SYSTEM) -> int:
    """Recount the rollups from the raw events (all, or from the start of day `since`, UTC).

    For backfills and repairs (`manage.py analytics rebuild`): the rollup rows of the range are
    deleted and re-added from the events in the same transaction, so readers never see a half.
    The database groups the per-skill events itself (one INSERT ... SELECT ... GROUP BY per
    grain); a turn's compact offer rows, one per turn, are expanded here with the same counting
    as on write. Returns the number of events read."""
    start = None if since is None else dt.datetime.combine(since, dt.time.min, tzinfo=dt.UTC)
    events = UsageEvent.objects.order_by()
    rollups = UsageRollup.objects.all()
    if start is not None:
        events, rollups = events.filter(at__gte=start), rollups.filter(bucket__gte=start)
    with transaction.atomic():
        rollups.delete()
        plain = events.filter(offered_skills__isnull=True)
        for grain in RollupGrain:
            _rollup_insert_grouped(plain, grain)
        offers = events.filter(offered_skills__isnull=False)
        batch: list[Fact] = []
        for fact in offers.values_list(*FACT_FIELDS).iterator(chunk_size=5_000):
            batch.append(fact)  # type: ignore[arg-type]
            if len(batch) == 5_000:
                _rollup_add(_rollup_counts(batch))
                batch = []
        _rollup_add(_rollup_counts(batch))
        read = events.count()
        audit_record(
            actor=actor,
            action="usage.rollups_rebuild",
            object_type="usage_rollup",
            object_repr=f"since {since}" if since else "all",
            after={"events_read": read},
        )
    return read


def _rollup_insert_grouped(events: QuerySet, grain: RollupGrain) -> None:
    """`INSERT INTO rollup SELECT <events grouped by the grain's key>` (the ORM compiles the
    SELECT for the database at hand), adding to rows that exist, as `_rollup_counts` counts."""
    hourly = grain == RollupGrain.HOUR
    key = {
        "grain": Value(grain.value),
        "skill_name": F("skill_name"),
        "bucket": Trunc("at", grain.value, tzinfo=dt.UTC),
        "version": Coalesce("version", 0),
        **{name: F(name) if hourly else Value("") for name in ("label", "trigger", "model", "source")},
    }
    feedback = Q(kind=UsageKind.FEEDBACK)
    counts = {
        **{name: Count("id", filter=Q(kind=name)) for name in ("offered", "loaded", "executed", "succeeded", "failed")},
        "feedback_up": Count("id", filter=feedback & Q(rating__gt=0)),
        "feedback_down": Count("id", filter=feedback & ~Q(rating__gt=0)),
        "metered": Count("id", filter=Q(tokens__isnull=False) | Q(duration_ms__isnull=False) | Q(cost__isnull=False)),
        "tokens": Coalesce(Sum("tokens"), 0),
        "duration_ms": Coalesce(Sum("duration_ms"), 0),
        "cost": Coalesce(Sum("cost"), 0.0, output_field=FloatField()),
    }
    # Every selected column is an annotation named k_<rollup column>, so the INSERT's column list
    # can follow the compiled SELECT's order whatever order the ORM chose.
    grouped = (
        events.annotate(**{f"k_{name}": value for name, value in key.items()})
        .values(*(f"k_{name}" for name in key))
        .annotate(**{f"k_{name}": value for name, value in counts.items()})
    )
    compiler = grouped.query.get_compiler(connection=connection)
    select_sql, params = compiler.as_sql()
    columns = [alias.removeprefix("k_") for _, _, alias in compiler.select]
    q = connection.ops.quote_name
    table = q(UsageRollup._meta.db_table)
    updates = ", ".join(f"{q(c)} = {table}.{q(c)} + EXCLUDED.{q(c)}" for c in COUNT_COLUMNS)
    conflict = ", ".join(q(c) for c in _ROLLUP_KEY_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(q(c) for c in columns)}) SELECT * FROM ({select_sql}) AS grouped "
            f"WHERE true ON CONFLICT ({conflict}) DO UPDATE SET {updates}",
            params,
        )
