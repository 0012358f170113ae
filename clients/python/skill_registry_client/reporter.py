"""Usage events sent in batches from a background thread. Each event gets its `event_id` when it
is reported, so a batch resent after a timeout is recognised by the registry and never counted
twice; whatever is still queued is sent when the interpreter exits."""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping

from skill_registry_client.errors import RegistryError, RegistryUnavailable
from skill_registry_client.transport import Transport

log = logging.getLogger("skill_registry_client")

MAX_BATCH = 1000  # the registry's limit per POST /usage
KINDS = frozenset({"offered", "loaded", "executed", "succeeded", "failed", "feedback"})


def _prepared(event: Mapping) -> dict:
    if event.get("kind") not in KINDS:
        raise ValueError(f"A usage event's kind is one of {sorted(KINDS)}, not {event.get('kind')!r}.")
    if not event.get("skill"):
        raise ValueError("A usage event needs `skill`.")
    prepared = dict(event)
    prepared.setdefault("event_id", uuid.uuid4().hex)
    # The time it happened, not the time the batch leaves.
    prepared.setdefault("at", dt.datetime.now(dt.timezone.utc).isoformat())
    return prepared


def _close_at_exit(reporter: weakref.ref[UsageReporter]) -> None:
    # A weak reference: registering the reporter itself would keep every client ever made alive.
    alive = reporter()
    if alive is not None:
        alive.close()


class UsageReporter:
    def __init__(self, transport: Transport, *, batch_size: int = 100, interval: float = 2.0) -> None:
        self._transport = transport
        self.batch_size = min(batch_size, MAX_BATCH)
        self.interval = interval
        self._pending: list[dict] = []
        self._in_flight = 0
        self._flush_requested = False
        self._closing = False
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        # What the registry answered so far, for callers and tests.
        self.batches_sent = 0
        self.accepted = 0
        self.duplicates = 0
        self.dropped = 0
        atexit.register(_close_at_exit, weakref.ref(self))

    def report(self, events: Iterable[Mapping]) -> list[str]:
        """Queue events (dicts as POST /usage takes them); returns their event ids."""
        prepared = [_prepared(event) for event in events]
        with self._condition:
            if self._closing:
                raise RegistryError("This client is closed; usage can no longer be reported.")
            self._pending.extend(prepared)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="skill-registry-usage", daemon=True)
                self._thread.start()
            self._condition.notify_all()
        return [event["event_id"] for event in prepared]

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Send everything queued now; True once the registry has taken it all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            self._flush_requested = True
            self._condition.notify_all()
            while self._pending or self._in_flight:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._condition.wait(left)
            self._flush_requested = False
        return True

    def close(self, timeout: float = 10.0) -> None:
        self.flush(timeout)
        with self._condition:
            self._closing = True
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _next_batch(self) -> list[dict] | None:
        with self._condition:
            first_seen = time.monotonic()
            while True:
                if self._pending and (
                    len(self._pending) >= self.batch_size
                    or self._flush_requested
                    or self._closing
                    or time.monotonic() - first_seen >= self.interval
                ):
                    batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
                    self._in_flight = len(batch)
                    return batch
                if self._closing:
                    return None
                if not self._pending:
                    first_seen = time.monotonic()
                self._condition.wait(self.interval if self._pending else None)

    def _run(self) -> None:
        failures = 0
        while (batch := self._next_batch()) is not None:
            try:
                answer = self._transport.request("POST", "usage", json_body={"events": batch}).json()
            except RegistryUnavailable as error:
                failures += 1
                with self._condition:
                    self._pending[:0] = batch  # same ids: a batch that did arrive counts once
                    self._in_flight = 0
                    if self._closing:
                        log.warning("Usage events not sent at exit (%s): %d events lost.", error, len(self._pending))
                        self.dropped += len(self._pending)
                        self._pending = []
                        self._condition.notify_all()
                        return
                    self._condition.wait(min(30.0, 0.5 * 2**failures))
                continue
            except (RegistryError, ValueError) as error:
                # The registry refused the batch itself (a bad event), or something between answered
                # with what is not JSON: resending cannot help.
                log.warning("Usage batch of %d events refused: %s", len(batch), error)
                answer = None
            failures = 0
            with self._condition:
                if answer is None:
                    self.dropped += len(batch)
                else:
                    self.batches_sent += 1
                    self.accepted += int(answer.get("accepted", 0))
                    self.duplicates += int(answer.get("duplicates", 0))
                self._in_flight = 0
                self._condition.notify_all()
