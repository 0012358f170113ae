"""Analytics at scale: dashboards from rollups vs from raw events, rollup refresh, and ingest.

PostgreSQL only (give it a database of its own: the script empties the usage tables).

1. Bulk-loads N events (default 1,000,000) over 500 skills x 3 versions x 90 days with
   generate_series (kinds, triggers, models and timestamps drawn with a fixed seed).
2. Rollup refresh: `analytics rebuild` over all of them (what a backfill costs; on-write
   maintenance is inside the ingest figures below).
3. p50/p99 of the overview (per-skill table for 90 days; the same with its sparklines, weekly as
   the page draws them for 90 days, and daily) and of one skill's daily series, from the rollups
   and, as the baseline, the same answer computed from the raw events in the same run; the
   answers are checked to be equal.
4. `POST /usage` ingest through gunicorn in batches of 1,000 (events/s), beside the service
   alone (no HTTP, no validation) as its baseline.

    DATABASE_URL=postgres://.../bench_analytics .venv/bin/python bench/analytics_dashboard.py \
        [--events 1000000] [--repeat 20] [--batches 40] [--clients 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import describe, percentile, prepare_environment, setup_django, timed  # noqa: E402
from bench.skill_md_throughput import start_gunicorn, wait_for  # noqa: E402

SKILLS, VERSIONS, DAYS = 500, 3, 90

# Kinds by share of events: what a prompt registry sees (many offers, fewer outcomes).
LOAD_SQL = """
INSERT INTO registry_usageevent
    (event_id, kind, skill_name, version, trigger, label, model, source, client_id,
     duration_ms, tokens, cost, rating, at)
SELECT 'bench-' || i,
       CASE WHEN r < 0.35 THEN 'offered' WHEN r < 0.60 THEN 'loaded' WHEN r < 0.65 THEN 'executed'
            WHEN r < 0.87 THEN 'succeeded' WHEN r < 0.97 THEN 'failed' ELSE 'feedback' END,
       'skill-' || lpad(mod(i, %(skills)s)::text, 3, '0'),
       1 + mod(i / %(skills)s, %(versions)s),
       (ARRAY['read_skill', 'task_match', 'forced'])[1 + mod(mod(i, 7), 3)],
       '',
       (ARRAY['gpt-4o-mini', 'claude-sonnet'])[1 + mod(mod(i, 11), 2)],
       'api', 'bench',
       CASE WHEN r >= 0.60 AND r < 0.97 THEN (50 + random() * 5000)::int END,
       CASE WHEN r >= 0.60 AND r < 0.97 THEN (100 + random() * 4000)::int END,
       CASE WHEN r >= 0.60 AND r < 0.97 THEN random() / 100 END,
       CASE WHEN r >= 0.97 THEN (CASE WHEN random() < 0.7 THEN 1 ELSE -1 END) END,
       %(now)s - random() * interval '%(days)s days'
FROM (SELECT i, random() AS r FROM generate_series(1, %(events)s) AS i) AS drawn;
"""

RAW_OVERVIEW_SQL = """
SELECT skill_name,
       count(*) FILTER (WHERE kind = 'succeeded'), count(*) FILTER (WHERE kind = 'failed'),
       count(*) FILTER (WHERE kind = 'loaded'), count(*) FILTER (WHERE kind = 'offered')
FROM registry_usageevent WHERE at >= %s AND at < %s GROUP BY skill_name
"""

RAW_SERIES_SQL = """
SELECT date_trunc('day', at AT TIME ZONE 'UTC') AS day,
       count(*) FILTER (WHERE kind = 'succeeded'), count(*) FILTER (WHERE kind = 'failed')
FROM registry_usageevent
WHERE skill_name = %s AND kind IN ('succeeded', 'failed') AND at >= %s AND at < %s
GROUP BY day ORDER BY day
"""

RAW_SPARKLINES_SQL = """
SELECT skill_name, date_trunc(%s, at AT TIME ZONE 'UTC') AS bucket,
       count(*) FILTER (WHERE kind = 'succeeded'), count(*) FILTER (WHERE kind = 'failed')
FROM registry_usageevent
WHERE kind IN ('succeeded', 'failed') AND at >= %s AND at < %s GROUP BY skill_name, bucket
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per query (default 20)")
    parser.add_argument("--batches", type=int, default=40, help="POST /usage batches of 1,000 (default 40)")
    parser.add_argument("--clients", type=int, default=2, help="concurrent POST /usage clients (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    args = parser.parse_args()

    prepare_environment("analytics")
    setup_django()
    from django.db import connection

    if connection.vendor != "postgresql":
        raise SystemExit("This benchmark needs PostgreSQL: set DATABASE_URL to a database of its own.")

    from registry.selectors import analytics
    from registry.services.usage import UsageEventInput, usage_record, usage_rollups_rebuild

    print(f"analytics bench: {args.events:,} events, {SKILLS} skills x {VERSIONS} versions, {DAYS} days")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE registry_usageevent, registry_queuedoffer, registry_hourlyrollup, registry_dailyrollup, "
            "registry_weeklyrollup"
        )
        cursor.execute("SELECT setseed(0.42)")  # the same events every run
        started = time.perf_counter()
        cursor.execute(
            LOAD_SQL % {"skills": SKILLS, "versions": VERSIONS, "days": DAYS, "events": args.events, "now": "%(now)s"},
            {"now": now},
        )
        cursor.execute("ANALYZE registry_usageevent")
    print(f"  bulk load (generate_series):   {time.perf_counter() - started:8.1f} s")

    started = time.perf_counter()
    usage_rollups_rebuild()
    refresh = time.perf_counter() - started
    with connection.cursor() as cursor:
        rollup_rows = {}
        for grain in ("hourly", "daily", "weekly"):
            cursor.execute(f"ANALYZE registry_{grain}rollup")
            cursor.execute(f"SELECT count(*) FROM registry_{grain}rollup")
            rollup_rows[grain] = cursor.fetchone()[0]
    print(
        f"  rollup refresh (full rebuild): {refresh:8.1f} s = {args.events / refresh:,.0f} events/s "
        f"-> {rollup_rows['hourly']:,} hourly, {rollup_rows['daily']:,} daily, {rollup_rows['weekly']:,} weekly rows"
    )

    today = now.date()
    window = analytics.AnalyticsFilter(date_from=today - dt.timedelta(days=DAYS - 1), date_to=today)
    start_at = dt.datetime.combine(window.date_from, dt.time.min, tzinfo=dt.UTC)
    end_at = dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
    skill = "skill-042"

    def raw(sql: str, *params) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    # The same answers both ways, checked before they are timed.
    from_rollups = {
        s.skill: (s.succeeded, s.failed, s.loaded, s.offered) for s in analytics.skill_analytics(filters=window)
    }
    from_raw = {row[0]: tuple(row[1:]) for row in raw(RAW_OVERVIEW_SQL, start_at, end_at)}
    assert from_rollups == from_raw, "overview: rollups and raw events disagree"
    series = [(p.bucket, p.succeeded, p.failed) for p in analytics.skill_timeseries(name=skill, filters=window) if p.n]
    raw_series = [(d.replace(tzinfo=dt.UTC), s, f) for d, s, f in raw(RAW_SERIES_SQL, skill, start_at, end_at)]
    assert series == raw_series, "daily series: rollups and raw events disagree"

    overview = analytics.skills_overview(filters=window, interval="week")
    assert {s.skill: (s.succeeded, s.failed, s.loaded, s.offered) for s in overview.stats} == from_raw, (
        "overview page: rollups and raw events disagree"
    )
    weekly = {
        (name, p.bucket, p.succeeded, p.failed)
        for (name, _), points in overview.sparklines.items()
        for p in points
        if p.n
    }
    raw_weekly = {
        (n, b.replace(tzinfo=dt.UTC), s, f) for n, b, s, f in raw(RAW_SPARKLINES_SQL, "week", start_at, end_at)
    }
    assert weekly == raw_weekly, "weekly sparklines: rollups and raw events disagree"

    def overview_page(interval: str) -> None:
        analytics.skills_overview(filters=window, interval=interval)  # the table and its sparklines

    def raw_overview_page(interval: str) -> None:
        raw(RAW_OVERVIEW_SQL, start_at, end_at)
        raw(RAW_SPARKLINES_SQL, interval, start_at, end_at)

    rows = [
        (
            "overview table (500 skills, 90 days)",
            lambda: analytics.skill_analytics(filters=window),
            lambda: raw(RAW_OVERVIEW_SQL, start_at, end_at),
        ),
        # What /analytics/ shows for 90 days: one weekly point per sparkline pixel-worth.
        ("overview + weekly sparklines (the page)", lambda: overview_page("week"), lambda: raw_overview_page("week")),
        ("overview + daily sparklines", lambda: overview_page("day"), lambda: raw_overview_page("day")),
        (
            f"one skill's daily series ({skill})",
            lambda: analytics.skill_timeseries(name=skill, filters=window),
            lambda: raw(RAW_SERIES_SQL, skill, start_at, end_at),
        ),
    ]
    print(f"\n  {'query':40} {'from rollups':>34}   {'from raw events (baseline)':>34}")
    for label, rollup_fn, raw_fn in rows:
        rollup_fn(), raw_fn()  # warm the caches both ways
        fast, slow = timed(rollup_fn, args.repeat), timed(raw_fn, max(3, args.repeat // 4))
        print(f"  {label:40} {describe(fast):>34}   {describe(slow):>34}")
        print(f"  {'':40} speed-up at p50: {percentile(slow, 50) / percentile(fast, 50):.0f}x")

    # --- ingest -----------------------------------------------------------------------------
    def batch(tag: str) -> list[dict]:
        at = now.isoformat()
        return [
            {
                "event_id": f"{tag}-{i}",
                "kind": ("offered", "loaded", "succeeded", "failed")[i % 4],
                "skill": f"skill-{i % SKILLS:03}",
                "version": 1 + i % VERSIONS,
                "trigger": "read_skill",
                "model": "gpt-4o-mini",
                "tokens": 1000 + i,
                "at": at,
            }
            for i in range(1000)
        ]

    service_batches = [batch(f"svc-{uuid.uuid4().hex[:8]}-{n}") for n in range(max(4, args.batches // 4))]
    inputs = [
        [UsageEventInput(**{k: v for k, v in e.items() if k != "at"}, at=now) for e in b] for b in service_batches
    ]
    started = time.perf_counter()
    for events in inputs:
        usage_record(events=events)
    service_rate = len(inputs) * 1000 / (time.perf_counter() - started)

    from django.contrib.auth import get_user_model

    from registry.services.tokens import api_token_create

    # Token scopes are limited to the owner's role: the bench user is an admin.
    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})
    _, secret = api_token_create(name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["usage:write"])
    connection.close()
    bodies = [json.dumps({"events": batch(f"http-{uuid.uuid4().hex[:8]}-{n}")}).encode() for n in range(args.batches)]
    server, port = start_gunicorn(args.workers)
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    try:
        wait_for(port, "/healthz", {})
        latencies: list[float] = []
        failures: list[int] = []
        lock = threading.Lock()

        def client(mine: list[bytes]) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for body in mine:
                sent = time.perf_counter()
                conn.request("POST", "/api/v1/usage", body=body, headers=headers)
                response = conn.getresponse()
                answer = response.read()
                with lock:
                    latencies.append((time.perf_counter() - sent) * 1000)
                    if response.status != 200 or json.loads(answer)["accepted"] != 1000:
                        failures.append(response.status)

        threads = [threading.Thread(target=client, args=(bodies[n :: args.clients],)) for n in range(args.clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        http_rate = len(bodies) * 1000 / (time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"\n  POST /usage, batches of 1,000, {args.clients} clients, {args.workers} gunicorn workers: "
        f"{http_rate:,.0f} events/s (per batch {describe(latencies)}; {len(failures)} failed)"
    )
    print(f"  baseline: usage_record() alone, one process:  {service_rate:,.0f} events/s")
    print("  targets: overview and daily series <= 100 ms at p50; ingest >= 10,000 events/s")


if __name__ == "__main__":
    main()
