"""The running attempt's hold on its turn.

A claim makes the turn RUNNING under attempt number N (AgentTurn.attempts). Every write the
attempt makes afterwards — lease renewals, checkpoints with their trace events, the outcome — is
an UPDATE conditioned on `status=running AND attempts=N`. When the reaper has requeued the turn,
a cancel has ended it, or another attempt claimed it, that condition matches no row: the write is
refused and the old attempt stops (TurnLost). So however slow or partitioned a worker is, a turn
ends exactly once, by its current attempt.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.models import AgentTurn, TurnStatus

logger = logging.getLogger(__name__)


class TurnLost(Exception):
    """This attempt no longer holds its turn; it must stop without writing anything more."""


def lease_expiry() -> datetime:
    """When a lease renewed now lapses."""
    return timezone.now() + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS)


def lease_renew(*, turn_id: UUID | str, attempt: int) -> bool:
    """Extend the lease of the running attempt; False when the attempt no longer holds the turn."""
    return bool(
        AgentTurn.objects.filter(pk=turn_id, status=TurnStatus.RUNNING, attempts=attempt).update(
            lease_expires_at=lease_expiry()
        )
    )


class LeaseKeeper:
    """Renews the lease from a thread while the attempt runs, so a long tool call or model call
    does not look like a dead worker. The lease lapses only when the process dies (the thread
    dies with it) or the attempt overruns `max_seconds` (a hung call: let the reaper decide)."""

    def __init__(self, *, turn_id: UUID | str, attempt: int, max_seconds: float) -> None:
        self.turn_id = turn_id
        self.attempt = attempt
        self.lost = False
        self._until = time.monotonic() + max_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{turn_id}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        every = settings.AGENT_TURN_LEASE_SECONDS / 3
        try:
            while not self._stop.wait(every) and time.monotonic() < self._until:
                try:
                    if not lease_renew(turn_id=self.turn_id, attempt=self.attempt):
                        self.lost = True
                        return
                except Exception:  # a database blip: the next renewal may succeed before the lease lapses
                    logger.warning("could not renew the lease of turn %s", self.turn_id, exc_info=True)
        finally:
            connection.close()  # this thread's own connection
