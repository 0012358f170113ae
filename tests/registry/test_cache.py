"""config/cache.py against a real, private redis-server that the test kills and restarts."""

from __future__ import annotations

import pytest
import redis

from bench._services import PrivateRedis
from config import cache as resilient
from config.cache import ResilientRedisCache
from tests.faults.support import need_redis_server
from tests.worker import wait_for

need_redis_server()


@pytest.fixture
def server():
    private = PrivateRedis().start()
    yield private
    private.close()


def make_cache(server: PrivateRedis) -> ResilientRedisCache:
    return ResilientRedisCache(server.url, {"OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0}})


def test_an_unreachable_redis_reads_as_misses_and_drops_writes(server):
    cache = make_cache(server)
    cache.set("kept", "before")
    assert cache.get("kept") == "before"

    server.kill()

    assert cache.get("kept", "default") == "default"
    assert cache.get_many(["kept"]) == {}
    assert cache.has_key("kept") is False
    cache.set("new", 1)  # dropped, not raised
    assert cache.set_many({"a": 1, "b": 2}) == ["a", "b"]
    assert cache.add("lock", 1) is False  # a lock taken with add() fails closed
    assert cache.get_or_set("computed", 42) == 42
    cache.delete("kept")
    # A counter must not silently stop counting: its caller decides.
    with pytest.raises(redis.ConnectionError):
        cache.incr("kept")


def test_it_stops_trying_for_a_moment_after_a_failure_then_recovers(server, monkeypatch):
    monkeypatch.setattr(resilient, "RETRY_SECONDS", 0.3)
    cache = make_cache(server)
    server.kill()
    assert cache.get("k") is None  # fails: Redis is not tried again for 0.3 s
    server.start()

    assert cache.get("k", "skipped") == "skipped" and cache.add("k", 1) is False  # still backing off
    wait_for(lambda: cache.add("k", "back"), timeout=10, interval=0.05, message="the cache to try Redis again")
    assert cache.get("k") == "back"
