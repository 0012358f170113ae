"""Login throttling: failed logins are counted for two keys:

- the (username, IP) pair: LOGIN_FAILURE_LIMIT failures lock that username from that address;
- the IP alone, across usernames: LOGIN_IP_FAILURE_LIMIT (higher) failures lock the address.

There is deliberately no lock on a username from every address: then anybody could keep the real
owner out by guessing wrong ten times from anywhere. A locked key refuses every attempt without
checking the password, the right one too, until the window (LOGIN_FAILURE_WINDOW_SECONDS, fixed
from the first failure: the cache's own expiry) lapses.

A successful login clears its pair's count but not its IP's, so one working account cannot be
used to reset the count of an address spraying guesses at others. Failures and lockouts are
audited; attempts refused while locked are not (they are the attack's volume, and the lockout row
already says it happened).

Counts live where every web process sees them: in Redis when REDIS_URL is set, else in the
database (`LoginCounter` rows): a cache in one process's memory would let each web process allow
its own LOGIN_FAILURE_LIMIT. While Redis cannot be reached, counting falls back to the database
too, so the console stays usable and the limit still holds across processes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db.models import F
from django.utils import timezone

from registry.models import LoginCounter
from registry.services.audit import Actor, audit_record

log = logging.getLogger(__name__)

_CACHE_DOWN = (redis.RedisError, OSError)


class _DatabaseCounts:
    """The few cache calls the throttle makes, on `LoginCounter` rows."""

    def add(self, key: str, value: float, timeout: int) -> None:
        now = timezone.now()
        LoginCounter.objects.filter(expires_at__lte=now).delete()  # this key's lapsed count among them
        LoginCounter.objects.get_or_create(
            key=key, defaults={"value": value, "expires_at": now + dt.timedelta(seconds=timeout)}
        )

    def incr(self, key: str) -> int:
        # One statement adds the failure, so two processes counting at once both count.
        LoginCounter.objects.filter(key=key).update(value=F("value") + 1)
        return int(LoginCounter.objects.get(key=key).value)

    def set(self, key: str, value: float, timeout: int) -> None:
        expires_at = timezone.now() + dt.timedelta(seconds=timeout)
        LoginCounter.objects.update_or_create(key=key, defaults={"value": value, "expires_at": expires_at})

    def delete(self, key: str) -> None:
        LoginCounter.objects.filter(key=key).delete()

    def get_many(self, keys: list[str]) -> dict[str, float]:
        rows = LoginCounter.objects.filter(key__in=keys, expires_at__gt=timezone.now())
        return dict(rows.values_list("key", "value"))


_database = _DatabaseCounts()


def _shared_cache() -> Any | None:
    """The cache, when every web process shares it (Redis); None when it is this process's memory."""
    backend = caches["default"]
    return None if isinstance(backend, LocMemCache) else backend


# Part of every key; `login_throttle_reset` moves to a fresh one (tests: counts must not leak from
# one test's failed logins into the next through the shared Redis).
_NAMESPACE = {"token": "0"}


@dataclass(frozen=True)
class LoginAttempt:
    username: str
    ip: str

    def keys(self) -> list[tuple[str, str, int]]:
        """(what, key part, limit) for each thing counted: the pair, then the IP across usernames."""
        pair = _digest(f"{self.username.casefold()}\x00{self.ip}")
        return [
            ("account", pair, settings.LOGIN_FAILURE_LIMIT),
            ("ip", _digest(self.ip), settings.LOGIN_IP_FAILURE_LIMIT),
        ]


def _digest(value: str) -> str:
    # Usernames are hostile input too (any length, any characters): keys hold a hash of them.
    return hashlib.sha256(value.encode("utf-8", "backslashreplace")).hexdigest()[:32]


def _count_key(what: str, part: str) -> str:
    return f"login:{_NAMESPACE['token']}:failures:{what}:{part}"


def _lock_key(what: str, part: str) -> str:
    return f"login:{_NAMESPACE['token']}:locked:{what}:{part}"


def login_retry_after(*, attempt: LoginAttempt) -> int | None:
    """Seconds until this account may be tried from this IP again, or None when nothing is locked."""
    keys = [_lock_key(what, part) for what, part, _ in attempt.keys()]
    shared: dict[str, Any] = {}
    if (store := _shared_cache()) is not None:
        try:
            shared = store.get_many(keys)
        except _CACHE_DOWN:
            log.warning("Login throttle: the cache is unavailable; using the database's counts", exc_info=True)
    # Locks recorded in the database while the cache was down count too: a lock is whichever says so.
    until = max([*shared.values(), *_database.get_many(keys).values()], default=0.0)
    remaining = until - time.time()
    return math.ceil(remaining) if remaining > 0 else None


def _count_failure(store, *, what: str, part: str, limit: int, window: int) -> tuple[int, bool]:
    """Add one failure to `store`; returns (the count, whether it locked the key)."""
    key = _count_key(what, part)
    store.add(key, 0, timeout=window)
    count = store.incr(key)
    if count < limit:
        return count, False
    store.set(_lock_key(what, part), time.time() + window, timeout=window)
    store.delete(key)
    return count, True


def login_failure_record(*, attempt: LoginAttempt) -> int | None:
    """Count a failed login; returns the lockout's Retry-After when this failure locked it."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    locked: list[str] = []
    counts: dict[str, int] = {}
    shared = _shared_cache()
    for what, part, limit in attempt.keys():
        try:
            store = shared if shared is not None else _database
            counts[what], lock = _count_failure(store, what=what, part=part, limit=limit, window=window)
        except _CACHE_DOWN:
            log.warning("Login throttle: the cache is unavailable; counting in the database", exc_info=True)
            counts[what], lock = _count_failure(_database, what=what, part=part, limit=limit, window=window)
        if lock:
            locked.append(what)
    actor = Actor(via=f"login from {attempt.ip or 'unknown address'}")
    audit_record(
        actor=actor,
        action="login.failure",
        object_type="user",
        object_repr=attempt.username,
        after={"ip": attempt.ip, "failures": counts},
    )
    if not locked:
        return None
    audit_record(
        actor=actor,
        action="login.lockout",
        object_type="user",
        object_repr=attempt.username,
        after={"ip": attempt.ip, "locked": locked, "seconds": window},
    )
    return window


def login_success_record(*, attempt: LoginAttempt) -> None:
    what, part, _ = attempt.keys()[0]
    key = _count_key(what, part)
    _database.delete(key)
    if (shared := _shared_cache()) is not None:
        try:
            shared.delete(key)
        except _CACHE_DOWN:
            log.warning("Login throttle: the cache is unavailable", exc_info=True)


def login_throttle_reset() -> None:
    """Forget every count and lock made so far, by moving every key to a fresh namespace (tests)."""
    _NAMESPACE["token"] = uuid.uuid4().hex[:12]
