"""Usage events from agents (SPEC §8): recorded in batches, idempotent by event id.

A client that re-sends a batch (a retry after a timeout, a redelivered task) gets the same
answer shape back and nothing is counted twice: `event_id` is unique in the database, rows
that already exist are reported as duplicates, and the insert ignores conflicts so two
concurrent copies of one batch cannot both land.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from registry.errors import ApplicationError
from registry.models import UsageEvent, UsageKind
from registry.services.audit import SYSTEM, Actor, audit_record

MAX_BATCH = 1000


@dataclass(frozen=True)
class UsageEventInput:
    event_id: str
    kind: str
    skill: str
    version: int | None = None
    trigger: str = ""
    client_id: str = ""
    duration_ms: int | None = None
    tokens: int | None = None
    cost: float | None = None
    rating: int | None = None  # feedback: +1 (up) / -1 (down)
    at: dt.datetime | None = None
    turn_id: Any = None


@dataclass(frozen=True)
class UsageBatchResult:
    accepted: int
    duplicates: int
    accepted_ids: tuple[str, ...]
    duplicate_ids: tuple[str, ...]


def usage_record(*, events: Sequence[UsageEventInput], actor: Actor = SYSTEM) -> UsageBatchResult:
    if len(events) > MAX_BATCH:
        raise ApplicationError(f"At most {MAX_BATCH} events per batch.", fields={"events": f"at most {MAX_BATCH}"})
    for position, event in enumerate(events):
        if event.kind not in UsageKind.values:
            raise ApplicationError(
                f"Event {position} has kind '{event.kind}'; use one of {', '.join(UsageKind.values)}.",
                fields={f"events[{position}].kind": f"one of {', '.join(UsageKind.values)}"},
            )
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
        existing = set(UsageEvent.objects.filter(event_id__in=list(unique)).values_list("event_id", flat=True))
        fresh = [event for event_id, event in unique.items() if event_id not in existing]
        UsageEvent.objects.bulk_create(
            [
                UsageEvent(
                    event_id=e.event_id,
                    kind=e.kind,
                    skill_name=e.skill,
                    version=e.version,
                    trigger=e.trigger,
                    client_id=e.client_id,
                    duration_ms=e.duration_ms,
                    tokens=e.tokens,
                    cost=e.cost,
                    rating=e.rating,
                    at=e.at or now,
                    turn_id=e.turn_id,
                )
                for e in fresh
            ],
            ignore_conflicts=True,
        )
        if fresh:
            audit_record(
                actor=actor,
                action="usage.record",
                object_type="usage_event",
                object_repr=f"{len(fresh)} event(s)",
                after={
                    "accepted": len(fresh),
                    "duplicates": len(existing) + len(repeated),
                    "clients": sorted({e.client_id for e in fresh if e.client_id})[:10],
                },
            )
    duplicates = [event_id for event_id in unique if event_id in existing] + repeated
    return UsageBatchResult(
        accepted=len(fresh),
        duplicates=len(duplicates),
        accepted_ids=tuple(e.event_id for e in fresh),
        duplicate_ids=tuple(duplicates),
    )
