"""A registry generation number that every cached read (resolve, prompt blocks, raw SKILL.md)
is keyed by. It lives with the reads it serves; the bump each service makes inside its own
transaction, `registry_changed()`, is a write and lives in registry/services/generation.py.

Any publish, label move, enable/disable or rule change bumps it inside its own transaction, so
caches are invalidated the moment the change commits, without tracking which keys it affects.
It lives in the database rather than the cache because the default cache is per-process local
memory: a web process and a worker must still agree on what is current.

The row starts at a random number (migration 0002). If it is ever recreated (a database restored
from a backup, tables flushed between tests), numbers from before can then not come back and
revive entries that processes still hold in their caches. Reading never creates it: until the
next write recreates it (`registry_changed`), a missing row reads as generation 0.

Reading the row costs a round trip per request, which on PostgreSQL is most of the price of
serving a cached SKILL.md. So on PostgreSQL each process also LISTENs: triggers (migration 0003)
NOTIFY the new number when the row changes, "reset" when it is inserted, deleted or truncated,
and "tokens" when a token or a user's is_active changes. NOTIFY is delivered when the writing
transaction commits and `current_generation()` drains the socket without blocking on every read,
so a process answers from memory and sees another's change as soon as PostgreSQL hands it over
(bench/invalidation.py measures that). The hand-over is asynchronous, though: a listening backend
forwards a notification a moment after the writer's COMMIT returns. So the commit itself makes
the process that wrote read again (`changed_here`), and whoever wrote sees the change on their
very next read. The write then waits, briefly, for its own notification to come back
(`committed`) before it answers: the other processes were signalled at the same moment, so when
the writer's client reads next from one of them, that one has most likely heard it too (a
listening backend the CPU is too busy to run can still be later; bench/invalidation.py counts
reads that come too soon). If the listening connection is down the reader falls back to the
query; one that died without a word (a half-open TCP connection, until keepalives notice) is
covered by reading the row again once a second, which bounds how stale a process can be.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time

from django.conf import settings
from django.db import connection, transaction

from registry.models import RegistryState

log = logging.getLogger(__name__)

STATE_ROW = 1  # RegistryState is one row
CHANNEL = "skill_registry_changes"
LISTENER_NAME = "skill-registry-listen"  # how the listening connections show in pg_stat_activity
_RETRY_SECONDS = 5.0
_VERIFY_SECONDS = 1.0
# Notice a silently dead listening connection within about a minute rather than hours.
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}

# How long a write waits for its own notification (about a millisecond on a quiet machine); it
# is only a wait: a listening connection that went quiet costs each write this much, no more.
_ECHO_SECONDS = 0.25


MISSING_ROW = 0  # what a read gives while the row does not exist; a recreated row starts above it


def registry_generation() -> int:
    """The generation as stored, read with a query."""
    generation = RegistryState.objects.filter(pk=STATE_ROW).values_list("generation", flat=True).first()
    return MISSING_ROW if generation is None else generation


def tokens_changed(**_signal_kwargs) -> None:
    """A token or a user's account changed: this process checks tokens again once it commits.
    (Other processes hear the trigger's "tokens" notification.) Connected to the models' save
    and delete signals in registry/apps.py."""
    transaction.on_commit(change_listener.changed_here)


class ChangeListener:
    """This process's LISTEN connection and what it has heard.

    `generation` is None until it has been read after (re)connecting or after a "reset";
    `token_epoch` moves on each "tokens" notification and each re-read, so token caches know
    when to drop their entries.
    A daemon thread drains the socket while the process is idle, so PostgreSQL's notification
    queue never waits on a process that serves no reads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = None
        self._poller: select.poll | None = None
        self._pid = 0
        self._retry_at = 0.0
        self._generation: int | None = None
        self._notified = 0  # the highest generation notified on this connection
        self._heard = threading.Condition(self._lock)
        self._verified_at = 0.0
        self.token_epoch = 0

    def heard(self) -> tuple[int, int] | None:
        """(generation, token_epoch) without a round trip, or None when the caller must query."""
        with self._lock:
            if not self._connected() or not self._drain(0):
                return None
            now = time.monotonic()
            if self._generation is None or now >= self._verified_at + _VERIFY_SECONDS:
                # Read after LISTEN is in place and pending notifications are drained: every
                # later commit is heard, every earlier one is in what we read. Token caches
                # start over on the same clock, for the same reason.
                self._generation = registry_generation()
                self._verified_at = now
                self.token_epoch += 1
            return self._generation, self.token_epoch

    def changed_here(self) -> None:
        """This process committed a change: the next read reads the generation again (which also
        starts token caches over) rather than wait for the notification to arrive."""
        with self._lock:
            self._generation = None

    def committed(self, generation: int) -> None:
        """This process committed `generation`: as `changed_here`, and return once the
        notification of it has come back on this process's connection (or after _ECHO_SECONDS).
        A process that is not listening yet does not start to here."""
        with self._lock:
            self._generation = None
            if self._conn is not None and self._pid == os.getpid():
                self._heard.wait_for(lambda: self._notified >= generation or self._conn is None, _ECHO_SECONDS)

    def close(self) -> None:
        with self._lock:
            self._drop()
            self._retry_at = 0.0

    def _connected(self) -> bool:
        if self._conn is not None and self._pid == os.getpid():
            return True
        if self._conn is not None:
            # Inherited over fork: the socket is the parent's. psycopg does not close a
            # connection from another process when it is collected, so just start afresh.
            self._conn = self._poller = None
        if time.monotonic() < self._retry_at:
            return False
        conn = None
        try:
            params = {**connection.get_connection_params(), **_KEEPALIVES, "application_name": LISTENER_NAME}
            conn = connection.get_new_connection(params)
            conn.autocommit = True
            conn.execute(f"LISTEN {CHANNEL}")
            poller = select.poll()  # absent under gevent's monkey-patching: then query instead
            poller.register(conn.pgconn.socket, select.POLLIN)
        except Exception:
            if conn is not None:
                conn.close()
            log.warning("cannot LISTEN for registry changes; reading the generation per request", exc_info=True)
            self._retry_at = time.monotonic() + _RETRY_SECONDS
            return False
        self._conn, self._poller, self._pid, self._generation = conn, poller, os.getpid(), None
        self._notified = 0
        threading.Thread(target=self._watch, args=(conn,), name="registry-listen", daemon=True).start()
        return True

    def _drain(self, timeout_ms: int) -> bool:
        """Apply whatever has arrived; False (and disconnected) when the connection broke."""
        assert self._conn is not None and self._poller is not None
        if not self._poller.poll(timeout_ms):
            return True
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
        except Exception:
            log.warning("lost the LISTEN connection for registry changes", exc_info=True)
            self._drop()
            return False
        while (notify := pgconn.notifies()) is not None:
            payload = notify.extra.decode()
            if payload == "tokens":
                self.token_epoch += 1
            elif payload == "reset":
                self._generation = None
            else:
                self._notified = max(self._notified, int(payload))
                if self._generation is not None:
                    self._generation = max(self._generation, int(payload))
        self._heard.notify_all()
        return True

    def _drop(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = self._poller = None
        self._generation = None
        self._retry_at = time.monotonic() + _RETRY_SECONDS
        self._heard.notify_all()

    def _watch(self, conn) -> None:
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
        while True:
            poller.poll(30_000)
            with self._lock:
                if self._conn is not conn:
                    return
                if not self._drain(0):
                    return


change_listener = ChangeListener()


def _can_listen() -> bool:
    # Inside a transaction this connection may see its own uncommitted writes, which no
    # notification describes (tests run each case in one), so those reads take the query.
    return connection.vendor == "postgresql" and settings.REGISTRY_LISTEN and not connection.in_atomic_block


def current_generation() -> int:
    """The generation for a read: from what this process has heard when it can, else a query."""
    heard = change_listener.heard() if _can_listen() else None
    return registry_generation() if heard is None else heard[0]


def heard_changes() -> tuple[int, int] | None:
    """(generation, token_epoch) when this process can answer from memory, else None."""
    return change_listener.heard() if _can_listen() else None
