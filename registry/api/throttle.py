"""A request rate limit per API token (and per console user), `API_THROTTLE_RATE`.

Counted in fixed windows (e.g. per minute) under one key per identity and window. With
REDIS_URL the counter lives in Redis, so the limit holds across every web process; it costs one
round trip (SET NX + INCR pipelined), cheap enough for the SKILL.md fast path, which counts too.
Without Redis each process counts on its own, like the rest of its local-memory cache.

DRF's own SimpleRateThrottle keeps a list of timestamps per identity in the cache and writes it
back after reading it: two concurrent requests overwrite each other's entry, so it under-counts
exactly under load. INCR does not.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import cache

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import BaseThrottle

from registry.models import ApiToken

log = logging.getLogger(__name__)

_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
_PERIODS |= {"d": 86400, "day": 86400}
_KEY_PREFIX = "skill-registry:throttle"


@cache
def parse_rate(rate: str) -> tuple[int, int] | None:
    """(requests, seconds) from "6000/min"; None for "" or "off" (no limit)."""
    if rate.strip().lower() in ("", "off"):
        return None
    count, _, period = rate.strip().partition("/")
    if not count.isdigit() or int(count) < 1 or period.lower() not in _PERIODS:
        raise ImproperlyConfigured(
            f"API_THROTTLE_RATE={rate!r}: use requests/period, e.g. 6000/min (s, min, hour, day), or off."
        )
    return int(count), _PERIODS[period.lower()]


@cache
def _redis() -> redis.Redis:
    # redis-py's pool notices a fork and opens new connections in the child.
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


class _LocalCounts:
    """This process's counts for the current window only; older windows are dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, int] = {}

    def add(self, key: str, window: int) -> int:
        with self._lock:
            if window != self._window:
                self._window, self._counts = window, {}
            self._counts[key] = self._counts.get(key, 0) + 1
            return self._counts[key]


_LOCAL = _LocalCounts()


def _count(identity: str, window: int, seconds: int) -> int:
    if not settings.REDIS_URL:
        return _LOCAL.add(identity, window)
    key = f"{_KEY_PREFIX}:{identity}:{window}"
    pipe = _redis().pipeline(transaction=False)
    pipe.set(key, 0, ex=seconds + 1, nx=True)
    pipe.incr(key)
    return pipe.execute()[1]


def retry_after(identity: str) -> float | None:
    """Count one request for `identity`: None while within the limit, else the seconds until the
    window ends."""
    limit = parse_rate(settings.API_THROTTLE_RATE)
    if limit is None:
        return None
    allowed, seconds = limit
    now = time.time()
    window = int(now // seconds)
    try:
        count = _count(identity, window, seconds)
    except redis.RedisError:
        # A rate limit must not take the API down with Redis; /healthz reports Redis.
        log.warning("cannot count requests in Redis; not rate limiting", exc_info=True)
        return None
    return None if count <= allowed else (window + 1) * seconds - now


def token_identity(secret_hash: str) -> str:
    # The hash, not the row id: ids repeat when a database is recreated, the hash never does.
    return f"token:{secret_hash[:32]}"


class RegistryRateThrottle(BaseThrottle):
    """DRF's hook: over the limit is a 429 with Retry-After, in the usual error shape."""

    def allow_request(self, request, view) -> bool:
        if isinstance(request.auth, ApiToken):
            identity = token_identity(request.auth.secret_hash)
        elif request.user and request.user.is_authenticated:
            # With the join time: like token ids, user ids repeat when a database is recreated.
            identity = f"user:{request.user.pk}:{request.user.date_joined.timestamp()}"
        else:
            return True  # no identity to count (the schema and docs are public)
        self._wait = retry_after(identity)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
