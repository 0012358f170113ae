"""Persisting the runtime's trace events as TraceEvent rows, as they happen.

Writing each event at once lets the playground show a turn live. The sink also renews the
turn's lease while the turn makes progress, and tells the runtime when a cancel was asked for.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from agents.models import AgentTurn, TraceEvent

MAX_STRING = 20_000  # one event never stores more than this per string value
CANCEL_CHECK_SECONDS = 1.0


def _json_safe(value: Any) -> Any:
    """Plain JSON with long strings cut, whatever the runtime put in an event."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + f"… [{len(value) - MAX_STRING} chars cut]"
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(item) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _json_safe(json.loads(json.dumps(value, cls=DjangoJSONEncoder, default=str)))


class DatabaseTraceSink:
    def __init__(self, turn: AgentTurn) -> None:
        self.turn = turn
        self.seq = 0
        self._lease_renewed = time.monotonic()
        self._lease_every = settings.AGENT_TURN_LEASE_SECONDS / 3
        self._cancel_checked = time.monotonic()

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.seq += 1
        TraceEvent.objects.create(turn=self.turn, seq=self.seq, type=type, at=timezone.now(), data=_json_safe(data))
        self._renew_lease()

    def _renew_lease(self) -> None:
        if time.monotonic() - self._lease_renewed < self._lease_every:
            return
        self._lease_renewed = time.monotonic()
        AgentTurn.objects.filter(pk=self.turn.pk).update(
            lease_expires_at=timezone.now() + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS)
        )

    def should_cancel(self) -> bool:
        # Asked before every step; looking at most once a second keeps a query off most steps
        # while a cancel still takes effect within about a second.
        self._renew_lease()
        if time.monotonic() - self._cancel_checked < CANCEL_CHECK_SECONDS:
            return False
        self._cancel_checked = time.monotonic()
        return AgentTurn.objects.filter(pk=self.turn.pk, cancel_requested=True).exists()
