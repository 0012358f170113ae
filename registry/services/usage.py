"""Usage events (SPEC §8): recorded in batches, idempotent by event id, rolled up on write.

Every source writes through `usage_record`: runtime turns, `POST /usage` from external agents,
and feedback (API and playground, through `usage_feedback_set`). On PostgreSQL a batch is ONE
statement of three parts:

1. `INSERT ... ON CONFLICT (event_id) DO NOTHING RETURNING *` stores the new events. A re-sent
   batch, or a copy racing in another transaction, inserts nothing (the unique index makes the
   second writer wait for the first and then skip the row).
2. Per rollup table (`HourlyRollup`, `DailyRollup`, `WeeklyRollup`), `INSERT ... SELECT <the
   rows that INSERT returned, grouped by the table's key> ON CONFLICT DO UPDATE SET n = n +
   excluded.n`: the database counts, with the grouped SELECT `analytics rebuild` runs over all
   events. (Elsewhere the same SELECT reads the new rows back by id.)
3. A turn's compact offer row (one per turn, listing its ~150 offered skills) is not counted
   here: its id goes into `QueuedOffer`, and `usage_offers_roll_up` counts the queued rows into
   the rollups in batches, each listed skill standing in as a plain row for the grouped upserts
   of part 2. Counted on write, it was ~450 upserted rollup rows in every turn's finish; in a
   batch, N turns' offers are one statement of ~the distinct (skill, bucket) rows. Every
   analytics view runs it before reading the rollups, so what it answers is exact; the worker's
   reaper also rolls up every few seconds, so the queue stays short when nobody reads.

All run in one transaction, so the rollups and the queue always account for exactly what the
raw events say, late events land in their own (old) bucket, a duplicate is refused before it
can be counted or queued, and a batch that fails leaves nothing behind. Rows are written in the
key order the database sorts by (event id, rollup key) so two concurrent batches cannot deadlock.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from django.db import connection, models, transaction
from django.db.models import Count, Exists, F, FloatField, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, Trunc
from django.utils import timezone

from registry.errors import ApplicationError
from registry.models import ROLLUP_COUNT_COLUMNS as COUNT_COLUMNS
from registry.models import (
    DailyRollup,
    HourlyRollup,
    QueuedOffer,
    RollupCounts,
    UsageEvent,
    UsageKind,
    UsageSource,
    WeeklyRollup,
)
from registry.selectors.skills import skill_sources
from registry.services.audit import SYSTEM, Actor, audit_record

MAX_BATCH = 1000


@dataclass(frozen=True)
class UsageEventInput:
    event_id: str
    kind: str
    skill: str  # empty for a compact offer row (see `offered_skills`)
    version: int | None = None
    # Which skill called `skill` (its SkillSource); empty: the one the name resolves to when
    # the event is stored (see `usage_record`).
    skill_source: str = ""
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
    # kind "offered" only: every skill a turn listed, as (name, version or None, skill source),
    # in one row.
    offered_skills: tuple[tuple[str, int | None, str], ...] | None = None


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
    """Store the events not seen before and add them to the rollups (compact offer rows: queue
    them for `usage_offers_roll_up`), in one transaction.

    Before they are stored, events are completed (`_completed`): one without a skill source
    belongs to the skill its name resolves to now, and an outcome that names no trigger or
    model takes them from the load it follows in the batch.

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
    unique = _completed(unique, now=now)
    with transaction.atomic():
        inserted = _store_and_roll_up(list(unique.values()), source=source, now=now)
        fresh = [event for event_id, event in unique.items() if event_id in inserted]
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
        _rollup_add(_rollup_counts([old], sign=-1))
        _rollup_add(_rollup_counts([_fact_of(existing)]))


_KINDS = frozenset(UsageKind.values)  # `UsageKind.values` builds a new list on every call


def _validate(position: int, event: UsageEventInput) -> None:
    if event.kind not in _KINDS:
        raise ApplicationError(
            f"Event {position} has kind '{event.kind}'; use one of {', '.join(UsageKind.values)}.",
            fields={f"events[{position}].kind": f"one of {', '.join(UsageKind.values)}"},
        )
    if not event.skill and not (event.kind == UsageKind.OFFERED and event.offered_skills):
        raise ApplicationError(f"Event {position} names no skill.", fields={f"events[{position}].skill": "required"})


# --- completing events --------------------------------------------------------------------

# What an agent reports after loading a skill: its trigger and model are the load's.
_FOLLOWING_A_LOAD = frozenset({UsageKind.EXECUTED, UsageKind.SUCCEEDED, UsageKind.FAILED, UsageKind.FEEDBACK})


def _completed(events: dict[str, UsageEventInput], *, now: dt.datetime) -> dict[str, UsageEventInput]:
    """The events with their skill source and their load's trigger and model filled in.

    Source: the skill the name resolves to now (`skill_get`'s answer: the effective one), for
    events that do not say; the runtime always says, as it knows which skill it loaded. A name
    no skill has keeps an empty source.

    Trigger and model: an executed, succeeded, failed or feedback event without them takes them
    from a `loaded` event of the same skill, client and turn in the same batch: the last load at
    or before it (by `at`, then by position), else the first after it. So "by trigger" and "by
    model" put an outcome where its load is, and each breakdown adds up to the skill's total."""
    unresolved = {e.skill for e in events.values() if e.skill and not e.skill_source}
    sources = skill_sources(names=unresolved) if unresolved else {}
    loads: dict[tuple, list[tuple[dt.datetime, int, UsageEventInput]]] = defaultdict(list)
    completed: dict[str, UsageEventInput] = {}
    for position, (event_id, event) in enumerate(events.items()):
        if event.skill and not event.skill_source and event.skill in sources:
            event = replace(event, skill_source=sources[event.skill])
        if event.kind == UsageKind.LOADED:
            loads[_load_key(event)].append((event.at or now, position, event))
        completed[event_id] = event
    if not loads:
        return completed
    for position, (event_id, event) in enumerate(completed.items()):
        if event.kind in _FOLLOWING_A_LOAD and not (event.trigger and event.model):
            candidates = loads.get(_load_key(event))
            if candidates:
                moment = (event.at or now, position)
                before = [c for c in candidates if c[:2] <= moment]
                load = max(before, key=lambda c: c[:2]) if before else min(candidates, key=lambda c: c[:2])
                completed[event_id] = replace(
                    event, trigger=event.trigger or load[2].trigger, model=event.model or load[2].model
                )
    return completed


def _load_key(event: UsageEventInput) -> tuple:
    return (event.skill, event.skill_source, event.client_id, None if event.turn_id is None else str(event.turn_id))


# --- storing events ---------------------------------------------------------------------

_EVENT_COLUMNS = (
    "event_id",
    "kind",
    "skill_name",
    "skill_source",
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


def _store_and_roll_up(events: list[UsageEventInput], *, source: str, now: dt.datetime) -> set[str]:
    """Insert the events, add the plain ones to every rollup table and queue the compact offer
    rows; return the ids that were new (ON CONFLICT DO NOTHING skipped the rest, and only new
    rows are counted or queued)."""
    rows = [
        (
            e.event_id,
            e.kind,
            e.skill,
            e.skill_source,
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
    q = connection.ops.quote_name
    if connection.vendor == "postgresql":
        # One statement: the INSERT's RETURNING rows feed the queue and the grouped rollup
        # upserts directly, so the new rows are neither named back to the database nor looked
        # up again.
        insert, params = _insert_sql(UsageEvent, _EVENT_COLUMNS, rows, order_by=("event_id",))
        rollups, rollup_params = _usage_record_sql()
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH new_events AS ({insert} ON CONFLICT ({q('event_id')}) DO NOTHING RETURNING *), {rollups} "
                f"SELECT {q('event_id')} FROM new_events",
                params + list(rollup_params),
            )
            return {row[0] for row in cursor.fetchall()}
    returned = _insert_rows(
        UsageEvent,
        _EVENT_COLUMNS,
        rows,
        f"ON CONFLICT ({q('event_id')}) DO NOTHING RETURNING {q('event_id')}, {q('id')}",
        order_by=("event_id",),
    )
    inserted = dict(returned)
    new_plain = [inserted[e.event_id] for e in events if e.event_id in inserted and e.offered_skills is None]
    plain = UsageEvent.objects.filter(offered_skills__isnull=True).order_by()
    for start in range(0, len(new_plain), 500):  # within every database's limit of parameters
        for rollup in ROLLUPS:
            _rollup_insert_grouped(plain.filter(id__in=new_plain[start : start + 500]), rollup)
    offers = sorted(inserted[e.event_id] for e in events if e.event_id in inserted and e.offered_skills is not None)
    QueuedOffer.objects.bulk_create([QueuedOffer(offer_id=offer_id) for offer_id in offers])
    return set(inserted)


def usage_statements_compile() -> None:
    """Compile the statement `usage_record` reuses, now rather than in a worker's first turn,
    which would wait for the ORM's compiling. A pool process never rolls offers up: the reaper (in the
    worker's main process) and readers compile that statement on first use."""
    if connection.vendor == "postgresql":
        _usage_record_sql()


@functools.cache
def _usage_record_sql() -> tuple[str, tuple]:
    """The WITH queries that queue the compact offer rows of `new_events` and add its plain rows
    to each rollup table; compiled once per process (the ORM takes longer to compile them than
    the database to run them)."""
    q = connection.ops.quote_name
    queued = (
        f"queued AS (INSERT INTO {_table(QueuedOffer)} ({q('offer_id')}) SELECT {q('id')} FROM new_events "
        f"WHERE {q('offered_skills')} IS NOT NULL ORDER BY {q('id')})"
    )
    upserts, params = _rollup_upserts_sql(source="new_events")
    return f"{queued}, {upserts}", params


# Queued offer rows counted per statement: a turn's row lists ~150 skills, so a batch is ~150,000
# listed skills for the database to group, and the transaction that holds its rollup rows stays
# short however long the queue grew without readers.
OFFERS_PER_ROLL_UP = 1000

# Roll-ups hold it shared, `usage_rollups_rebuild` alone (see there). Any constant no other
# advisory lock of the database uses.
_OFFERS_LOCK = 0x5EED_0FFE


def usage_offers_roll_up() -> int:
    """Count the queued compact offer rows into the rollups; returns how many were counted.

    Cheap when the queue is empty (one EXISTS), so every analytics view calls it before reading. Each
    batch is one transaction, and on PostgreSQL one statement: `DELETE ... RETURNING` takes up
    to OFFERS_PER_ROLL_UP queued ids, locking them in id order, and the grouped upserts count
    their rows. Two roll-ups racing count each offer once: the second waits for the first's row
    locks and then skips the rows it deleted (no id watermark: ids commit out of order). A
    reader whose roll-up waited so also sees the first one's counts once it returns. The loop
    stops after a batch that was not full, so a reader does not chase turns finishing after it
    began."""
    counted = 0
    while QueuedOffer.objects.exists():
        with transaction.atomic():
            _offers_lock(shared=True)
            if connection.vendor == "postgresql":
                sql, params = _offers_roll_up_sql()
                with connection.cursor() as cursor:
                    cursor.execute(sql, params)
                    taken = cursor.fetchone()[0]
            else:
                taken = _offers_roll_up_in_python()
        counted += taken
        if taken < OFFERS_PER_ROLL_UP:
            break
    return counted


def _offers_lock(*, shared: bool) -> None:
    """PostgreSQL: this transaction's hold on the offer queue against a rebuild (SQLite has one
    writer at a time)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock{'_shared' if shared else ''}(%s)", [_OFFERS_LOCK])


def _offers_taken_sql() -> str:
    """`DELETE` up to OFFERS_PER_ROLL_UP queued entries, the lowest ids first, `RETURNING` their
    ids. PostgreSQL locks them in that order (FOR UPDATE); a row a concurrent roll-up deleted
    meanwhile is skipped once it commits, and the next one taken in its place."""
    q = connection.ops.quote_name
    queue, offer = _table(QueuedOffer), q("offer_id")
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    return (
        f"DELETE FROM {queue} WHERE {offer} IN (SELECT {offer} FROM {queue} ORDER BY {offer} "
        f"LIMIT {OFFERS_PER_ROLL_UP}{lock}) RETURNING {offer}"
    )


@functools.cache
def _offers_roll_up_sql() -> tuple[str, tuple]:
    """One batch of `usage_offers_roll_up` on PostgreSQL, answering how many entries it took.

    `counted` stands each listed skill of a taken offer row in as a plain `offered` row of that
    skill, source and version, as `_rollup_counts` counts it (a list stored before skills had
    sources names none: the empty source), so the grouped upserts that count plain
    events on write add them (an offer row listing nothing counts as the plain row it is)."""
    q = connection.ops.quote_name
    carried = ", ".join(q(c) for c in _COUNTED_COLUMNS)
    offered = f"{q('kind')} = '{UsageKind.OFFERED}' AND jsonb_array_length({q('offered_skills')}) > 0"
    offers = (
        f"offers AS (SELECT {_table(UsageEvent)}.* FROM taken JOIN {_table(UsageEvent)} "
        f"ON {_table(UsageEvent)}.{q('id')} = taken.{q('offer_id')})"
    )
    counted = (
        f"counted AS (SELECT {q('skill_name')}, {q('skill_source')}, {q('version')}, {carried}, "
        f"NULL::jsonb AS {q('offered_skills')} FROM offers WHERE NOT ({offered}) "
        "UNION ALL SELECT listed.value ->> 0, COALESCE(listed.value ->> 2, ''), (listed.value ->> 1)::integer, "
        + ", ".join(f"offers.{q(c)}" for c in _COUNTED_COLUMNS)
        + f", NULL FROM offers CROSS JOIN LATERAL jsonb_array_elements({q('offered_skills')}) AS listed "
        f"WHERE {offered})"
    )
    upserts, params = _rollup_upserts_sql(source="counted")
    return f"WITH taken AS ({_offers_taken_sql()}), {offers}, {counted}, {upserts} SELECT count(*) FROM taken", params


def _offers_roll_up_in_python() -> int:
    """One batch of `usage_offers_roll_up` elsewhere (SQLite): the taken rows counted in Python,
    as the rebuild counts them."""
    with connection.cursor() as cursor:
        cursor.execute(_offers_taken_sql())
        taken = [row[0] for row in cursor.fetchall()]
    _rollup_add(_rollup_counts(UsageEvent.objects.filter(id__in=taken).values_list(*FACT_FIELDS)))  # type: ignore[arg-type]
    return len(taken)


def _rollup_upserts_sql(*, source: str) -> tuple[str, tuple]:
    """The WITH queries that add the plain rows of relation `source` (the events table's columns)
    to each rollup table, one grouped upsert per table."""
    plain = UsageEvent.objects.filter(offered_skills__isnull=True).order_by()
    statements, params = [], []
    for rollup in ROLLUPS:
        sql, rollup_params = _rollup_insert_grouped_sql(plain, rollup, source=source)
        statements.append(f"{rollup._meta.model_name} AS ({sql})")
        params += rollup_params
    return ", ".join(statements), tuple(params)


def _insert_rows(
    model: type[models.Model], columns: tuple[str, ...], rows: list[tuple], suffix: str, *, order_by: tuple[str, ...]
) -> list[tuple]:
    """`INSERT INTO model (columns) <rows, ordered by order_by> suffix`, returning what the
    suffix's RETURNING gives.

    Django's bulk_create can neither say which rows ON CONFLICT DO NOTHING skipped nor add to a
    conflicting row, hence the statement is written out."""
    if not rows:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql, params = _insert_sql(model, columns, rows, order_by=order_by)
            cursor.execute(f"{sql} {suffix}", params)
            return cursor.fetchall() if cursor.description else []
        # SQLite (development): one writer at a time, so rows go in plain VALUES chunks.
        fields = _fields(model, columns)
        convert = [f.get_internal_type() in _PREPARED_TYPES for f in fields]
        prepared = [
            tuple(
                f.get_db_prep_save(value, connection) if needed and value is not None else value
                for f, needed, value in zip(fields, convert, row, strict=True)
            )
            for row in rows
        ]
        returned: list[tuple] = []
        size = max(1, (connection.features.max_query_params or 999) // len(columns))
        row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
        head = f"INSERT INTO {_table(model)} ({_column_list(fields)})"
        for start in range(0, len(prepared), size):
            chunk = prepared[start : start + size]
            cursor.execute(
                f"{head} VALUES {', '.join([row_sql] * len(chunk))} {suffix}", [value for row in chunk for value in row]
            )
            returned += cursor.fetchall() if cursor.description else []
    return returned


def _insert_sql(
    model: type[models.Model], columns: tuple[str, ...], rows: list[tuple], *, order_by: tuple[str, ...]
) -> tuple[str, list]:
    """PostgreSQL: the INSERT ... SELECT of these rows, sorted, with the whole batch as ONE json
    parameter, an array of rows that are arrays of values, each cast to its column's type.
    psycopg quotes parameters in Python, value by value: sent as 16 arrays of 1,000 values, a
    batch would spend most of its time there; as objects (json_populate_recordset) every row repeats
    every column's name, and encoding those takes longer than the database takes to store them.
    The database sorts the rows, so every writer takes row locks in the same order (no
    deadlocks between concurrent batches)."""
    fields = _fields(model, columns)
    records = json.dumps(rows, default=_json_value)
    q = connection.ops.quote_name
    # jsonb: the batch is parsed once (with json, every ->> parses its row's text again, which
    # costs more than objects would). ->> gives SQL NULL for a JSON null (-> would give the
    # JSON value null, also for the jsonb column).
    values = ", ".join(
        f"(item ->> {position})::{field.db_type(connection)} AS {q(str(field.column))}"
        for position, field in enumerate(fields)
    )
    column_list = _column_list(fields)
    sql = (
        f"INSERT INTO {_table(model)} ({column_list}) SELECT * FROM (SELECT {values} "
        f"FROM jsonb_array_elements(%s::jsonb) AS item) AS typed ORDER BY {', '.join(q(c) for c in order_by)}"
    )
    return sql, [records]


def _fields(model: type[models.Model], columns: tuple[str, ...]) -> list[models.Field]:
    return [cast(models.Field, model._meta.get_field(name)) for name in columns]


def _table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column_list(fields: list[models.Field]) -> str:
    return ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)


def _json_value(value: object) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat()  # naive ones are read in the connection's time zone, UTC
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a column value")


# Column types whose Python values the database driver needs converted first (Django does it in
# the ORM; this module writes SQL itself).
_PREPARED_TYPES = {"DateTimeField", "JSONField", "UUIDField", "ForeignKey"}


# --- rollups ---------------------------------------------------------------------------

# What one event contributes: (kind, skill, skill source, version, label, trigger, model, source,
# at, rating, tokens, duration_ms, cost, offered_skills), as read from a stored row: the
# rebuild, the roll-up on SQLite and a changed rating count with `_rollup_counts`.
Fact = tuple[
    str, str, str, int | None, str, str, str, str, dt.datetime, int | None, int | None, int | None, float | None, Any
]

FACT_FIELDS = (
    "kind",
    "skill_name",
    "skill_source",
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

# What the grouped rollup SELECT reads of an event besides its skill, version and offer list.
_COUNTED_COLUMNS = (
    "id",
    *(name for name in FACT_FIELDS if name not in ("skill_name", "skill_source", "version", "offered_skills")),
)

_KIND_COLUMN = {kind: COUNT_COLUMNS.index(kind) for kind in ("offered", "loaded", "executed", "succeeded", "failed")}
_UP, _DOWN, _METERED, _TOKENS, _DURATION, _COST = (COUNT_COLUMNS.index(c) for c in COUNT_COLUMNS[5:])

# The rollup tables and their keys, in the order of their unique constraints (which is also the
# order every writer sorts by).
ROLLUPS: tuple[type[RollupCounts], ...] = (HourlyRollup, DailyRollup, WeeklyRollup)
_DIMENSIONS = ("label", "trigger", "model", "source")
ROLLUP_KEYS: dict[type[RollupCounts], tuple[str, ...]] = {
    HourlyRollup: ("skill_name", "skill_source", "bucket", "version", *_DIMENSIONS),
    DailyRollup: ("skill_name", "skill_source", "bucket", "version"),
    WeeklyRollup: ("skill_name", "skill_source", "bucket", "version"),
}
_TRUNCATE = {HourlyRollup: "hour", DailyRollup: "day", WeeklyRollup: "week"}  # ISO weeks: from Monday

RollupRows = dict[type[RollupCounts], dict[tuple, list]]


def _fact_of(row: UsageEvent) -> Fact:
    return tuple(getattr(row, name) for name in FACT_FIELDS)  # type: ignore[return-value]


def hour_start(at: dt.datetime) -> dt.datetime:
    return at.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def _rollup_counts(facts: Iterable[Fact], sign: int = 1) -> RollupRows:
    """Counts per hourly, daily and weekly rollup key for these events (sign -1 takes them away), as
    `_rollup_insert_grouped` counts them in SQL; a compact offer counts once per listed skill."""
    counts: RollupRows = {rollup: defaultdict(lambda: [0] * (len(COUNT_COLUMNS) - 1) + [0.0]) for rollup in ROLLUPS}
    hourly, daily, weekly = counts[HourlyRollup], counts[DailyRollup], counts[WeeklyRollup]
    for (
        kind,
        skill,
        skill_source,
        version,
        label,
        trigger,
        model,
        source,
        at,
        rating,
        tokens,
        duration,
        cost,
        offered,
    ) in facts:
        hour = hour_start(at)
        day = hour.replace(hour=0)
        week = day - dt.timedelta(days=day.weekday())
        if kind == UsageKind.OFFERED and offered:
            # A list stored before skills had sources names none: the empty source.
            targets = [(listed[0], listed[2] if len(listed) > 2 else "", listed[1]) for listed in offered]
        else:
            targets = [(skill, skill_source, version)]
        for name, listed_source, number in targets:
            for row in (
                hourly[(name, listed_source, hour, number or 0, label, trigger, model, source)],
                daily[(name, listed_source, day, number or 0)],
                weekly[(name, listed_source, week, number or 0)],
            ):
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


def _rollup_upsert_suffix(rollup: type[RollupCounts]) -> str:
    q = connection.ops.quote_name
    updates = ", ".join(f"{q(c)} = {_table(rollup)}.{q(c)} + EXCLUDED.{q(c)}" for c in COUNT_COLUMNS)
    return f"ON CONFLICT ({', '.join(q(c) for c in ROLLUP_KEYS[rollup])}) DO UPDATE SET {updates}"


def _rollup_add(counts: RollupRows) -> None:
    """Add the counts to their rollup rows: one upsert per table."""
    for rollup, keyed in counts.items():
        keys = ROLLUP_KEYS[rollup]
        rows = [(*key, *values) for key, values in keyed.items()]
        _insert_rows(rollup, keys + COUNT_COLUMNS, rows, _rollup_upsert_suffix(rollup), order_by=keys)


def usage_rollups_rebuild(*, since: dt.date | None = None, actor: Actor = SYSTEM) -> int:
    """Recount the rollups from the raw events (all, or from the start of day `since`, UTC).

    For backfills and repairs (`manage.py analytics rebuild`): the rollup rows of the range are
    deleted and re-added from the events in the same transaction, so readers never see a half.
    The database groups the per-skill events itself (one INSERT ... SELECT ... GROUP BY per
    table, as on write); a turn's compact offer rows, one per turn, are expanded here with the
    same counting as the roll-up. Returns the number of events read.

    Queued offers: the rebuild holds the offer queue's lock alone, so no roll-up counts one
    while it runs. An offer row it reads (one snapshot) that is still queued is counted into
    every table, also the buckets before `since` it keeps (they never had it), and leaves the
    queue in the same transaction; one that was rolled up already is counted only into the
    recounted buckets. Offers stored after that snapshot stay queued for the next roll-up."""
    start = None if since is None else dt.datetime.combine(since, dt.time.min, tzinfo=dt.UTC)
    # A table is recounted from the start of its bucket holding `start`: the week of a mid-week
    # `since` began before it, and its row also counts the days before.
    starts = {rollup: _bucket_start(rollup, start) for rollup in ROLLUPS} if start is not None else {}
    events = UsageEvent.objects.order_by()
    with transaction.atomic():
        _offers_lock(shared=False)
        for rollup in ROLLUPS:
            rows, counted = rollup._default_manager.all(), events
            if rollup in starts:
                rows, counted = rows.filter(bucket__gte=starts[rollup]), events.filter(at__gte=starts[rollup])
            rows.delete()
            _rollup_insert_grouped(counted.filter(offered_skills__isnull=True), rollup)
        offers = events.filter(offered_skills__isnull=False)
        if starts:
            offers = offers.filter(at__gte=min(starts.values()))
        offers = offers.annotate(queued=Exists(QueuedOffer.objects.filter(offer=OuterRef("pk"))))
        batch: list[tuple] = []
        for row in offers.values_list(*FACT_FIELDS, "id", "queued").iterator(chunk_size=5_000):
            batch.append(row)
            if len(batch) == 5_000:
                _offers_recount(batch, starts)
                batch = []
        _offers_recount(batch, starts)
        read = (events if start is None else events.filter(at__gte=start)).count()
        audit_record(
            actor=actor,
            action="usage.rollups_rebuild",
            object_type="usage_rollup",
            object_repr=f"since {since}" if since else "all",
            after={"events_read": read},
        )
    return read


def _offers_recount(rows: list[tuple], starts: dict[type[RollupCounts], dt.datetime]) -> None:
    """The rebuild's counting of offer rows read as (*fact, id, queued): a queued one into every
    bucket, then out of the queue; the others into the recounted buckets only."""
    queued = [row for row in rows if row[-1]]
    _rollup_add(_rollup_counts_from([row[:-2] for row in rows if not row[-1]], starts))  # type: ignore[misc]
    _rollup_add(_rollup_counts(row[:-2] for row in queued))  # type: ignore[misc]
    QueuedOffer.objects.filter(offer_id__in=[row[-2] for row in queued]).delete()


def _bucket_start(rollup: type[RollupCounts], day_start: dt.datetime) -> dt.datetime:
    """The start of `rollup`'s bucket holding midnight `day_start` (hours and days start there)."""
    return day_start - dt.timedelta(days=day_start.weekday()) if rollup is WeeklyRollup else day_start


def _rollup_counts_from(facts: list[Fact], starts: dict[type[RollupCounts], dt.datetime]) -> RollupRows:
    """`_rollup_counts`, keeping for each table only the buckets from its start."""
    counts = _rollup_counts(facts)
    for rollup, start in starts.items():
        at = ROLLUP_KEYS[rollup].index("bucket")
        counts[rollup] = {key: row for key, row in counts[rollup].items() if key[at] >= start}
    return counts


def _rollup_insert_grouped(events: QuerySet, rollup: type[RollupCounts]) -> None:
    sql, params = _rollup_insert_grouped_sql(events, rollup)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _rollup_insert_grouped_sql(
    events: QuerySet, rollup: type[RollupCounts], *, source: str | None = None
) -> tuple[str, list]:
    """`INSERT INTO rollup SELECT <events grouped by the rollup's key> ORDER BY key` (the ORM
    compiles the SELECT for the database at hand), adding to rows that exist, as
    `_rollup_counts` counts. For plain events only (no compact offer rows). With `source`, the
    SELECT reads that relation (a WITH query of the same columns) instead of the events table."""
    keys = ROLLUP_KEYS[rollup]
    key = {
        "skill_name": F("skill_name"),
        "skill_source": F("skill_source"),
        "bucket": Trunc("at", _TRUNCATE[rollup], tzinfo=dt.UTC),
        "version": Coalesce("version", 0),
        **{name: F(name) for name in keys if name in _DIMENSIONS},
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
    if source is not None:
        # Aliased with the table's own name, the relation answers every column the compiled
        # SELECT names as "registry_usageevent"."column".
        table = _table(UsageEvent)
        assert select_sql.count(f"FROM {table}") == 1, select_sql
        select_sql = select_sql.replace(f"FROM {table}", f"FROM {source} AS {table}")
    columns = [alias.removeprefix("k_") for _, _, alias in compiler.select]
    q = connection.ops.quote_name
    order = ", ".join(q(f"k_{name}") for name in keys)
    return (
        # WHERE true: SQLite reads `ON CONFLICT` after a bare SELECT ... FROM as a join's ON.
        f"INSERT INTO {_table(rollup)} ({', '.join(q(c) for c in columns)}) "
        f"SELECT * FROM ({select_sql}) AS grouped WHERE true ORDER BY {order} {_rollup_upsert_suffix(rollup)}",
        list(params),
    )
