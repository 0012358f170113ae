"""Persisting the runtime's trace events as TraceEvent rows, step by step.

Each step is written as soon as its tool call completes, so the playground shows a turn live.
The sink also tells the runtime when a cancel was asked for. A `system_prompt` is stored once per
distinct text (PromptText) and referenced from its event, in the same write as the event.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from uuid import UUID

from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections, connection, transaction
from django.db.models import Max
from django.utils import timezone

from agents.models import AgentTurn, PromptText, TraceEvent, TurnCheckpoint, TurnStatus
from agents.turns.lease import LeaseKeeper, TurnLost, lease_expiry, lease_renew

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


def _prompt_apart(data: dict[str, Any]) -> tuple[dict[str, Any], PromptText | None]:
    """An event's data without its `system_prompt`, and that prompt as a PromptText. The prompt is
    kept whole (MAX_STRING bounds what an event repeats; a prompt is stored once)."""
    text = data.get("system_prompt")
    if not isinstance(text, str):
        return data, None
    text = text.replace("\x00", "\ufffd")  # PostgreSQL's text cannot store a NUL either
    sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {key: value for key, value in data.items() if key != "system_prompt"}, PromptText(sha256=sha256, text=text)


class DatabaseTraceSink:
    """The trace of one attempt of a turn, written step by step.

    Events are kept in memory until the runtime reaches a checkpoint (agents/runtime/replay.py).
    A checkpoint after a tool ran is written at once, together with the checkpoints and events
    held before it, in one transaction after a fenced lease renewal (agents/turns/lease.py): a step
    (its model response and its tool call) costs one transaction. The other checkpoints (the
    turn prepared, a model response, a refused call) have no side effects, so they wait for the
    next one; the last unit is written with the turn's outcome. A worker that dies loses only
    what it had not written, which the next attempt does and emits again: the stored trace has
    every event once, numbered without gaps, and no tool that completed runs twice. The price:
    when a worker dies during a step's first tool call, the next attempt asks the model for that
    step again.

    On PostgreSQL, outside a transaction of the caller's, that write goes to a thread of its own
    (`step_writer`) while the runtime asks the model for the next step, which has no side
    effects; `settle()` waits for it, and the runtime calls it before the next tool runs, as
    agent_turn_finish does before the outcome. So a step's write costs the turn nothing when the
    model takes longer than the write (it always does), and still no tool runs before the one
    before it is stored. At most one write is in flight, so the steps are stored in order.
    """

    def __init__(self, turn: AgentTurn, *, lease: LeaseKeeper | None = None) -> None:
        self.turn = turn
        self.attempt = turn.attempts
        self.lease = lease
        self.pending: list[TraceEvent] = []
        # Prompts the pending events reference that this sink has not written before: a turn
        # sends its prompt's text once, then only its key.
        self.prompts: list[PromptText] = []
        self._prompts_sent: set[str] = set()
        self.held: list[TurnCheckpoint] = []
        if self.attempt <= 1:
            # A first attempt finds nothing stored: events and checkpoints of earlier attempts,
            # and the reaper's events, exist only once a turn was requeued, which makes the
            # next claim attempt 2 or more. Two queries saved per turn.
            self.seq = 0
            self._stale_from = 0
        else:
            self.seq = TraceEvent.objects.filter(turn=turn).aggregate(last=Max("seq"))["last"] or 0
            # Checkpoints an earlier attempt left: the first one this attempt writes replaces
            # any from there on (they are stale when a resumed turn took another path).
            self._stale_from = turn.checkpoints.count()
        self._cancel_checked = time.monotonic()
        self._writing: Future[bool] | None = None

    def __enter__(self) -> DatabaseTraceSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.settle()  # a requeue or a failure is written after the last step, never before it

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.seq += 1
        data, prompt = _prompt_apart(data)
        if prompt is not None and prompt.sha256 not in self._prompts_sent:
            self._prompts_sent.add(prompt.sha256)
            self.prompts.append(prompt)
        self.pending.append(
            TraceEvent(
                turn=self.turn,
                seq=self.seq,
                type=type,
                at=timezone.now(),
                data=_json_safe(data),
                prompt_id=prompt.sha256 if prompt else None,
            )
        )

    def checkpoint(self, index: int, record: dict[str, Any]) -> None:
        self.held.append(TurnCheckpoint(turn=self.turn, index=index, record=json.dumps(record)))
        if record.get("kind") == "tool" and record.get("outcome") is not None:
            self._store()  # the tool ran: its side effects must never happen a second time

    def _lost(self) -> TurnLost:
        return TurnLost(f"turn {self.turn.pk}: attempt {self.attempt} no longer holds it")

    def settle(self) -> None:
        """Return once the step written last is stored; TurnLost when this attempt no longer
        held the turn, or the database's error, raised here instead of in the writer."""
        writing, self._writing = self._writing, None
        if writing is not None and not writing.result():
            raise self._lost()

    def _store(self) -> None:
        self.settle()
        first = self.held[0].index
        if connection.vendor == "postgresql" and first >= self._stale_from:
            self._store_in_one_statement()
            return
        with transaction.atomic():
            self.hold()
            if first < self._stale_from:
                TurnCheckpoint.objects.filter(turn=self.turn, index__gte=first).delete()
                self._stale_from = first
            self.flush()
            TurnCheckpoint.objects.bulk_create(self.held)
            self.held = []

    def _store_in_one_statement(self) -> None:
        """The same write as one statement (atomic on its own): one round trip and one commit per
        step instead of five round trips, which made up most of a step's cost."""
        events = [
            {"seq": e.seq, "type": e.type, "at": e.at.isoformat(), "data": e.data, "prompt": e.prompt_id}
            for e in self.pending
        ]
        prompts = [{"sha256": p.sha256, "text": p.text} for p in self.prompts]
        checkpoints = [{"index": c.index, "record": c.record} for c in self.held]
        params = {
            "expires": lease_expiry(),
            "turn": self.turn.pk,
            "running": TurnStatus.RUNNING,
            "attempt": self.attempt,
            "prompts": json.dumps(prompts),
            "events": json.dumps(events),
            "checkpoints": json.dumps(checkpoints),
        }
        self.pending, self.prompts, self.held = [], [], []
        if connection.in_atomic_block:
            # The caller's open transaction (a test's, say) holds rows another connection
            # cannot see yet: write through it.
            if not _write_step(params):
                raise self._lost()
            return
        self._writing = step_writer().submit(_write_step_in_writer, params)

    def hold(self) -> None:
        """Renew the lease, and lock the turn's row for the rest of the transaction; TurnLost
        when this attempt no longer holds the turn."""
        if not lease_renew(turn_id=self.turn.pk, attempt=self.attempt):
            raise self._lost()

    def flush(self) -> None:
        """Write the pending events and the prompts they reference (inside the caller's
        transaction, which holds the turn's row)."""
        PromptText.objects.bulk_create(self.prompts, ignore_conflicts=True)
        TraceEvent.objects.bulk_create(self.pending)
        self.pending, self.prompts = [], []

    def should_cancel(self) -> bool:
        # Asked before every model call and tool call; looking at most once a second keeps a
        # query off most of them while a cancel still takes effect within about a second.
        if self.lease is not None and self.lease.lost:
            raise TurnLost(f"turn {self.turn.pk}: attempt {self.attempt} lost its lease")
        if time.monotonic() - self._cancel_checked < CANCEL_CHECK_SECONDS:
            return False
        self._cancel_checked = time.monotonic()
        return AgentTurn.objects.filter(pk=self.turn.pk, cancel_requested=True).exists()


def _write_step(params: dict[str, Any]) -> bool:
    """Run _STEP_SQL on this thread's connection; False when the attempt no longer held the turn."""
    with connection.cursor() as cursor:
        cursor.execute(_STEP_SQL, params)
        (held,) = cursor.fetchone()
    return bool(held)


def _write_step_in_writer(params: dict[str, Any]) -> bool:
    close_old_connections()  # as Django does per request: a connection past CONN_MAX_AGE or broken is replaced
    return _write_step(params)


_writer: tuple[int, ThreadPoolExecutor] | None = None
_writer_lock = threading.Lock()


def step_writer() -> ThreadPoolExecutor:
    """This process's thread for step writes, with its own database connection kept between
    turns (a new connection per turn would cost more than the write). Made anew in a forked
    child, where the parent's thread does not exist."""
    global _writer
    with _writer_lock:
        if _writer is None or _writer[0] != os.getpid():
            _writer = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-writer"))
        return _writer[1]


def step_writer_warm_up() -> None:
    """Start the writer and open its connection now, not in a worker's first turn."""
    step_writer().submit(_connect).result()


def _connect() -> None:
    connection.ensure_connection()  # `connection` is looked up in the thread that runs this: the writer's


def _close_connection() -> None:
    connection.close()  # the writer's, as in _connect


def step_writer_shutdown() -> None:
    """Close the writer's connection and stop its thread (tests do, before their database goes)."""
    global _writer
    with _writer_lock:
        if _writer is not None and _writer[0] == os.getpid():
            _writer[1].submit(_close_connection).result()
            _writer[1].shutdown()
        _writer = None


# The lease renewal, fenced by the attempt as lease_renew's, locks the turn's row; the prompts,
# events and checkpoints are inserted only when it matched, so a lost attempt writes nothing. A
# prompt another turn stored already is left as it is (its key is its text's hash); one that
# another transaction is inserting makes this statement wait for it, and the events' foreign key
# is checked when the statement commits, so no event ever references a prompt that is not stored.
_STEP_SQL = f"""
WITH lease AS (
    UPDATE {AgentTurn._meta.db_table} SET lease_expires_at = %(expires)s
    WHERE id = %(turn)s AND status = %(running)s AND attempts = %(attempt)s
    RETURNING id
), prompts AS (
    INSERT INTO {PromptText._meta.db_table} (sha256, text)
    SELECT p.sha256, p.text
    FROM lease, jsonb_to_recordset(%(prompts)s::jsonb) AS p(sha256 text, text text)
    ON CONFLICT (sha256) DO NOTHING
), events AS (
    INSERT INTO {TraceEvent._meta.db_table} (turn_id, seq, type, at, data, prompt_id)
    SELECT lease.id, e.seq, e.type, e.at, e.data, e.prompt
    FROM lease, jsonb_to_recordset(%(events)s::jsonb)
        AS e(seq integer, type text, at timestamptz, data jsonb, prompt text)
), checkpoints AS (
    INSERT INTO {TurnCheckpoint._meta.db_table} (turn_id, index, record, created_at)
    SELECT lease.id, c.index, c.record, now()
    FROM lease, jsonb_to_recordset(%(checkpoints)s::jsonb) AS c(index integer, record text)
)
SELECT count(*) FROM lease
"""


def trace_event_append(*, turn_id: UUID, type: str, data: dict[str, Any]) -> None:
    """One event added from outside a run (the reaper). Call it in the transaction that changed
    the turn's row: that row lock orders it after everything the attempt wrote."""
    last = TraceEvent.objects.filter(turn_id=turn_id).aggregate(last=Max("seq"))["last"] or 0
    TraceEvent.objects.create(turn_id=turn_id, seq=last + 1, type=type, at=timezone.now(), data=_json_safe(data))
