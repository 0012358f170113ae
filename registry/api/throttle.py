"""A request rate limit per API token (and per console user), `API_THROTTLE_RATE`.

Counted in fixed windows (e.g. per minute) under one key per identity and window. With
REDIS_URL the total lives in Redis, so the limit holds across every web process; each process
adds its requests to it in small batches (see `_Counts`), because a round trip per request
cost the SKILL.md fast path, which counts too, half its 304 throughput (bench/skill_md_throughput.py). Without
Redis each process counts on its own, like the rest of its local-memory cache.

DRF's own SimpleRateThrottle keeps a list of timestamps per identity in the cache and writes it
back after reading it: two concurrent requests overwrite each other's entry, so it under-counts
exactly under load. INCRBY does not.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle

from registry.api.rate import parse_rate
from registry.models import ApiToken

log = logging.getLogger(__name__)

_KEY_PREFIX = "skill-registry:throttle"
_SYNC_SECONDS = 0.1
_REDIS_BACKOFF_SECONDS = 5.0


@cache
def _redis(url: str) -> redis.Redis:
    # redis-py's pool notices a fork and opens new connections in the child.
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


@dataclass
class _Count:
    shared: int = 0  # the total in Redis at the last sync, this process's requests included
    pending: int = 0  # requests counted here since
    synced_at: float = -math.inf


class _Counts:
    """Requests per identity in the current window: counted here, and added to the shared total
    in Redis in batches, so most requests make no round trip.

    A batch goes to Redis after 1% of the limit has been counted here, or after _SYNC_SECONDS:
    each process may overshoot by about that much before it sees the others' requests. Small
    limits (under 200 per window) sync every request and are exact.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, _Count] = {}
        self._redis_retry_at = -math.inf

    def add(self, identity: str, window: int, seconds: int, allowed: int) -> int:
        """Count one request; the best known total for `identity` in this window."""
        with self._lock:
            if window != self._window:  # one rate, so every identity's window ends together
                self._window, self._counts = window, {}
            count = self._counts.setdefault(identity, _Count())
            count.pending += 1
            now = time.monotonic()
            due = count.pending >= max(1, allowed // 100) or now >= count.synced_at + _SYNC_SECONDS
            if settings.REDIS_URL and due and now >= self._redis_retry_at:
                try:
                    count.shared = _add_in_redis(identity, window, seconds, count.pending)
                    count.pending, count.synced_at = 0, now
                except redis.RedisError:
                    # Keep counting here (a limit per process) and try Redis again later: a rate
                    # limit must not take the API down with Redis. /healthz reports Redis.
                    self._redis_retry_at = now + _REDIS_BACKOFF_SECONDS
                    log.warning("cannot add request counts in Redis; counting per process", exc_info=True)
            return count.shared + count.pending


def _add_in_redis(identity: str, window: int, seconds: int, requests: int) -> int:
    key = f"{_KEY_PREFIX}:{identity}:{window}"
    pipe = _redis(settings.REDIS_URL).pipeline(transaction=False)
    pipe.set(key, 0, ex=seconds + 1, nx=True)
    pipe.incrby(key, requests)
    return pipe.execute()[1]


_COUNTS = _Counts()  # this process's


def retry_after(identity: str) -> float | None:
    """Count one request for `identity`: None while within the limit, else the seconds until the
    window ends."""
    limit = parse_rate(settings.API_THROTTLE_RATE)
    if limit is None:
        return None
    allowed, seconds = limit
    now = time.time()
    window = int(now // seconds)
    count = _COUNTS.add(identity, window, seconds, allowed)
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
