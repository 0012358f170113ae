"""Persisting the runtime's trace events as TraceEvent rows, unit by unit.

Each model call and each tool call is written as soon as it completes, so the playground shows
a turn live. The sink also tells the runtime when a cancel was asked for.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from agents.lease import LeaseKeeper, TurnLost, lease_renew
from agents.models import AgentTurn, TraceEvent, TurnCheckpoint

MAX_STRING = 20_000  # one event never stores more than this per string value
CANCEL_CHECK_SECONDS = 1.0


def _json_safe(value: Any) -> Any:
    """Plain JSON with long strings cut, whatever the runtime put in an event."""
    if isinstance(value, str):
        value = value.replace("\x00", "\ufffd")  # PostgreSQL's jsonb cannot store a NUL (a script may print one)
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + f"… [{len(value) - MAX_STRING} chars cut]"
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(item) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _json_safe(json.loads(json.dumps(value, cls=DjangoJSONEncoder, default=str)))


class DatabaseTraceSink:
    """The trace of one attempt of a turn, written in units.

    Events are kept in memory until the runtime reaches a checkpoint (agents/runtime/replay.py)
    and are then written together with it in one transaction, after a fenced lease renewal
    (agents/lease.py); the last unit is written with the turn's outcome. A worker that dies
    loses only the events of its unfinished unit, which the next attempt emits again: the
    stored trace has every event once, numbered without gaps.
    """

    def __init__(self, turn: AgentTurn, *, lease: LeaseKeeper | None = None) -> None:
        self.turn = turn
        self.attempt = turn.attempts
        self.lease = lease
        self.pending: list[TraceEvent] = []
        self.seq = TraceEvent.objects.filter(turn=turn).aggregate(last=Max("seq"))["last"] or 0
        # Checkpoints an earlier attempt left: the first one this attempt writes replaces any
        # from there on (they are stale when a resumed turn took another path).
        self._stale_from = turn.checkpoints.count()
        self._cancel_checked = time.monotonic()

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.seq += 1
        self.pending.append(
            TraceEvent(turn=self.turn, seq=self.seq, type=type, at=timezone.now(), data=_json_safe(data))
        )

    def checkpoint(self, index: int, record: dict[str, Any]) -> None:
        with transaction.atomic():
            self.hold()
            if index < self._stale_from:
                TurnCheckpoint.objects.filter(turn=self.turn, index__gte=index).delete()
                self._stale_from = index
            self.flush()
            TurnCheckpoint.objects.create(turn=self.turn, index=index, record=json.dumps(record))

    def hold(self) -> None:
        """Renew the lease, and lock the turn's row for the rest of the transaction; TurnLost
        when this attempt no longer holds the turn."""
        if not lease_renew(turn_id=self.turn.pk, attempt=self.attempt):
            raise TurnLost(f"turn {self.turn.pk}: attempt {self.attempt} no longer holds it")

    def flush(self) -> None:
        """Write the pending events (inside the caller's transaction, after hold())."""
        TraceEvent.objects.bulk_create(self.pending)
        self.pending = []

    def should_cancel(self) -> bool:
        # Asked before every model call and tool call; looking at most once a second keeps a
        # query off most of them while a cancel still takes effect within about a second.
        if self.lease is not None and self.lease.lost:
            raise TurnLost(f"turn {self.turn.pk}: attempt {self.attempt} lost its lease")
        if time.monotonic() - self._cancel_checked < CANCEL_CHECK_SECONDS:
            return False
        self._cancel_checked = time.monotonic()
        return AgentTurn.objects.filter(pk=self.turn.pk, cancel_requested=True).exists()


def trace_event_append(*, turn_id: UUID, type: str, data: dict[str, Any]) -> None:
    """One event added from outside a run (the reaper). Call it in the transaction that changed
    the turn's row: that row lock orders it after everything the attempt wrote."""
    last = TraceEvent.objects.filter(turn_id=turn_id).aggregate(last=Max("seq"))["last"] or 0
    TraceEvent.objects.create(turn_id=turn_id, seq=last + 1, type=type, at=timezone.now(), data=_json_safe(data))
