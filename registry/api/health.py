"""`GET /healthz`: is each backing service reachable? Open to anonymous callers (load balancers)."""

from __future__ import annotations

import time
import uuid

from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app


def _check(probe) -> dict:
    started = time.perf_counter()
    try:
        detail = probe()
    except Exception as exc:  # a health check reports every failure, whatever its type
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    result = {"ok": True, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}
    if detail:
        result["backend"] = detail
    return result


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


def _cache() -> str:
    key = f"healthz:{uuid.uuid4().hex}"
    cache.set(key, "1", timeout=5)
    if cache.get(key) != "1":
        raise RuntimeError("value written to the cache could not be read back")
    cache.delete(key)
    return type(cache).__name__


def _broker() -> str:
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return conn.transport_cls if isinstance(conn.transport_cls, str) else conn.transport.driver_type


@never_cache
@require_GET
def healthz(request):
    checks = {"database": _check(_database), "cache": _check(_cache), "broker": _check(_broker)}
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)
