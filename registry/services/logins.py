"""Login throttling: failed logins are counted in the cache (Redis when REDIS_URL is set, so every
web process shares the counts) for two keys:

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

If the shared cache cannot be reached, counting falls back to this process's memory: the console
stays usable while Redis is down, and an attacker still meets a limit (per web process).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import uuid
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache

from registry.services.audit import Actor, audit_record

log = logging.getLogger(__name__)

_CACHE_DOWN = (redis.RedisError, OSError)
# Counts recorded while the shared cache is down. The shared cache reads as empty then
# (config/cache.py), so a lock is whichever of the two says so.
_local = LocMemCache("login-throttle", {"OPTIONS": {"MAX_ENTRIES": 100_000}})
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
    try:
        shared = cache.get_many(keys)
    except _CACHE_DOWN:
        log.warning("Login throttle: the cache is unavailable; using this process's counts", exc_info=True)
        shared = {}
    until = max([*shared.values(), *_local.get_many(keys).values()], default=0.0)
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
    for what, part, limit in attempt.keys():
        try:
            counts[what], lock = _count_failure(cache, what=what, part=part, limit=limit, window=window)
        except _CACHE_DOWN:
            log.warning("Login throttle: the cache is unavailable; counting in this process", exc_info=True)
            counts[what], lock = _count_failure(_local, what=what, part=part, limit=limit, window=window)
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
    _local.delete(key)
    try:
        cache.delete(key)
    except _CACHE_DOWN:
        log.warning("Login throttle: the cache is unavailable", exc_info=True)


def login_throttle_reset() -> None:
    """Forget every count and lock this process knows of (tests)."""
    _NAMESPACE["token"] = uuid.uuid4().hex[:12]
    _local.clear()
