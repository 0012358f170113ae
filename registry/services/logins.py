"""Login throttling (issue 14): failed logins are counted per username and per client IP in the
cache (Redis when REDIS_URL is set, so every web process shares the counts). LOGIN_FAILURE_LIMIT
failures within LOGIN_FAILURE_WINDOW_SECONDS lock that username, or that IP, for the window:
every attempt is refused without checking the password, the right one too, until it lapses.

Counts are per fixed window from the first failure (the cache's own expiry). A successful login
clears its username's count but not its IP's, so one working account cannot be used to reset
the count of an address spraying guesses at others. Failures and lockouts are audited; attempts
refused while locked are not (they are the attack's volume, and the lockout row already says
it happened).

If the cache cannot be reached, logins are not throttled rather than refused: the console must
stay usable while Redis is down (issue 14, item 7), and a warning is logged.
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

from registry.services.audit import Actor, audit_record

log = logging.getLogger(__name__)

_CACHE_DOWN = (redis.RedisError, OSError)
# Part of every key; `login_throttle_reset` moves to a fresh one (tests: counts must not leak from
# one test's failed logins into the next through the shared Redis).
_NAMESPACE = {"token": "0"}


@dataclass(frozen=True)
class LoginAttempt:
    username: str
    ip: str

    def keys(self) -> list[tuple[str, str]]:
        """(what, key part) for each thing counted: the username (case-insensitive) and the IP."""
        return [("username", _digest(self.username.casefold())), ("ip", _digest(self.ip))]


def _digest(value: str) -> str:
    # Usernames are hostile input too (any length, any characters): keys hold a hash of them.
    return hashlib.sha256(value.encode("utf-8", "backslashreplace")).hexdigest()[:32]


def _count_key(what: str, part: str) -> str:
    return f"login:{_NAMESPACE['token']}:failures:{what}:{part}"


def _lock_key(what: str, part: str) -> str:
    return f"login:{_NAMESPACE['token']}:locked:{what}:{part}"


def login_retry_after(*, attempt: LoginAttempt) -> int | None:
    """Seconds until this username or IP may try again, or None when neither is locked."""
    try:
        locks = cache.get_many([_lock_key(what, part) for what, part in attempt.keys()])
    except _CACHE_DOWN:
        log.warning("Login throttle: the cache is unavailable; not throttling", exc_info=True)
        return None
    until = max(locks.values(), default=0.0)
    remaining = until - time.time()
    return math.ceil(remaining) if remaining > 0 else None


def login_failure_record(*, attempt: LoginAttempt) -> int | None:
    """Count a failed login; returns the lockout's Retry-After when this failure locked it."""
    limit, window = settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW_SECONDS
    locked: list[str] = []
    counts: dict[str, int] = {}
    try:
        for what, part in attempt.keys():
            key = _count_key(what, part)
            cache.add(key, 0, timeout=window)
            counts[what] = cache.incr(key)
            if counts[what] >= limit:
                cache.set(_lock_key(what, part), time.time() + window, timeout=window)
                cache.delete(key)
                locked.append(what)
    except _CACHE_DOWN:
        log.warning("Login throttle: the cache is unavailable; not counting", exc_info=True)
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
        after={"ip": attempt.ip, "locked": locked, "seconds": window, "limit": limit},
    )
    return window


def login_success_record(*, attempt: LoginAttempt) -> None:
    what, part = attempt.keys()[0]
    try:
        cache.delete(_count_key(what, part))
    except _CACHE_DOWN:
        log.warning("Login throttle: the cache is unavailable", exc_info=True)


def login_throttle_reset() -> None:
    """Forget every count and lock this process knows of (tests)."""
    _NAMESPACE["token"] = uuid.uuid4().hex[:12]
