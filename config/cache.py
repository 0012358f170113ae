"""The shared Redis cache, and what happens when Redis is down.

Everything the registry caches can be rebuilt from the database: rendered SKILL.md bytes,
resolve answers and zip digests, all keyed by the registry generation, which lives in the
database. So an unreachable Redis costs speed, not answers: reads become misses, writes are
dropped, and the console and the read API are served from the database (the way django-redis'
IGNORE_EXCEPTIONS behaves). A key missed during an outage needs no repair afterwards, because
every write bumps the generation in the database and so moves every reader to new keys.

What must not pretend: `incr`/`decr` (counters) still raise, so a caller that counts (a login
throttle) decides for itself, and the Celery broker, which shares the Redis server, still
answers a turn submission with a 503 (registry/api/errors.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

log = logging.getLogger(__name__)

# The errors of a Redis that is down, restarting (BusyLoadingError is a ConnectionError) or
# too slow to be worth waiting for.
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)

# After a failure, calls skip Redis for this long: with Redis down each request would
# otherwise wait for a connection attempt on every cache call it makes.
RETRY_SECONDS = 1.0


class ResilientRedisCache(RedisCache):
    """Django's RedisCache that treats an unreachable Redis as an empty cache."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._down_until = 0.0  # 0: Redis answered last time

    def _attempt(self, fallback: Any, method, *args) -> Any:
        if self._down_until and time.monotonic() < self._down_until:
            return fallback
        try:
            value = method(*args)
        except UNREACHABLE as exc:
            if not self._down_until:
                log.warning("The cache is unreachable; serving from the database: %s", exc)
            self._down_until = time.monotonic() + RETRY_SECONDS
            return fallback
        if self._down_until:
            log.warning("The cache is reachable again.")
            self._down_until = 0.0
        return value

    def get(self, key, default=None, version=None):
        return self._attempt(default, super().get, key, default, version)

    def get_many(self, keys, version=None):
        return self._attempt({}, super().get_many, keys, version)

    def has_key(self, key, version=None):
        return self._attempt(False, super().has_key, key, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._attempt(None, super().set, key, value, timeout, version)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        # Django's contract: the keys that could not be stored.
        return self._attempt(list(data), super().set_many, data, timeout, version)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        # False ("someone else holds it"): a caller using add() as a lock fails closed.
        return self._attempt(False, super().add, key, value, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._attempt(False, super().touch, key, timeout, version)

    def delete(self, key, version=None):
        return self._attempt(False, super().delete, key, version)

    def delete_many(self, keys, version=None):
        self._attempt(None, super().delete_many, keys, version)
