"""Enqueue -> task start latency of agent turns: commit and `.delay` in the web process, claim in a
real Celery worker.

    .venv/bin/python bench/enqueue_latency.py [--turns 200] [--filesystem-turns 30] [--concurrency 2]

Starts a Celery worker subprocess as the Procfile does (prefork, `--concurrency 2`; 1 = solo
pool, as tests/worker.py) against the same database and broker, then submits turns one at a time
with `agent_turn_create` (scripted model, one-step script), each after the previous one finished,
so every turn meets an idle worker, after a random pause (up to 20 ms with Redis, up to the
filesystem transport's 1 s polling interval without it) so arrivals do not fall in step with the
worker's polling. The clock starts in an on_commit callback registered before
the service's own, i.e. right after the commit and right before `agent_turn_run_task.delay`; it
stops at `AgentTurn.started_at`, stamped by the worker's claim. Target: p50 <= 50 ms with Redis.

With REDIS_URL set, the script then runs itself again without it (Kombu's filesystem broker, a
fresh VAR_DIR, the same database) for comparison; `--filesystem-turns 0` skips that.
Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile, prepare_environment, setup_django  # noqa: E402
from bench._turns import WorkerProcess  # noqa: E402

TARGET_P50_MS = 50.0
# Random think time before each submission. Without it, a polling broker sees every turn arrive
# the same time after its last poll (one turn run after it), which measures the phase, not the
# broker: Kombu's filesystem transport polls every polling_interval (1 s by default).
MAX_PAUSE_SECONDS = {"redis": 0.02, "filesystem": 1.0}
MESSAGE_PREFIX = "bench enqueue latency"


def submit_and_wait(index: int, timeout: float = 60) -> dict[str, float]:
    """Queue one turn the way the API does and wait until the worker has finished it."""
    from django.contrib.auth.models import AnonymousUser
    from django.db import transaction

    from agents.models import FINISHED_STATUSES, AgentTurn
    from agents.turns.services import agent_turn_create

    stamps: dict[str, float] = {}
    before = time.time()
    with transaction.atomic():
        # Registered first, so it runs after the commit and just before the service's `.delay`.
        transaction.on_commit(lambda: stamps.__setitem__("enqueue", time.time()))
        turn = agent_turn_create(
            user=AnonymousUser(), message=f"{MESSAGE_PREFIX} {index}", model="scripted", script=[{"content": "done"}]
        )
    published = time.time()
    deadline = time.monotonic() + timeout
    while True:
        status, created_at, started_at, finished_at = (
            AgentTurn.objects.filter(pk=turn.pk).values_list("status", "created_at", "started_at", "finished_at").get()
        )
        if status in FINISHED_STATUSES:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"turn {turn.pk} still {status} after {timeout}s")
        time.sleep(0.002)
    if status != "succeeded" or started_at is None or finished_at is None:
        raise SystemExit(f"turn {turn.pk} ended {status}")
    return {
        "claim": (started_at.timestamp() - stamps["enqueue"]) * 1000,
        "created_to_claim": (started_at - created_at).total_seconds() * 1000,
        "create_call": (stamps["enqueue"] - before) * 1000,
        "delay_call": (published - stamps["enqueue"]) * 1000,
        "run": (finished_at - started_at).total_seconds() * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--filesystem-turns", type=int, default=30, help="turns for the filesystem-broker comparison run (0: skip it)"
    )
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    var = prepare_environment("enqueue")
    os.environ.setdefault("AGENT_ALLOW_SCRIPTED", "True")
    setup_django()
    from django.conf import settings
    from django.db import connection

    from agents.models import Conversation
    from config.celery import app

    broker = "redis" if settings.REDIS_URL else "filesystem"
    queue = app.conf.task_default_queue
    started = time.perf_counter()
    worker = WorkerProcess(env=dict(os.environ), concurrency=args.concurrency, queue=queue, solo=args.concurrency == 1)
    try:
        worker.wait_ready()
        pool = "solo" if args.concurrency == 1 else f"prefork x{args.concurrency}"
        print(
            f"database: {connection.vendor}; broker: {broker} (queue '{queue}'); worker ({pool}) ready in "
            f"{time.perf_counter() - started:.1f}s; {args.turns} turns, one in flight at a time, random pause up to "
            f"{MAX_PAUSE_SECONDS[broker] * 1000:g} ms before each; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for index in range(3):  # warm up: the worker's first turn imports litellm (~3 s)
            submit_and_wait(-1 - index)
        rng = random.Random(5)
        samples = []
        for index in range(args.turns):
            time.sleep(rng.uniform(0, MAX_PAUSE_SECONDS[broker]))
            samples.append(submit_and_wait(index))
    finally:
        worker.stop()
        Conversation.objects.filter(title__startswith=MESSAGE_PREFIX).delete()

    claims = [s["claim"] for s in samples]
    print(
        f"  enqueue -> claim (commit + .delay -> AgentTurn.started_at): p50 {percentile(claims, 50):.1f} ms, "
        f"p95 {percentile(claims, 95):.1f} ms, p99 {percentile(claims, 99):.1f} ms, max {max(claims):.1f} ms, "
        f"mean {statistics.fmean(claims):.1f} ms (n={len(claims)})"
    )
    for key, label in (
        ("created_to_claim", "created_at -> started_at"),
        ("create_call", "agent_turn_create up to the commit"),
        ("delay_call", ".delay (publish to the broker)"),
        ("run", "turn run (started_at -> finished_at)"),
    ):
        values = [s[key] for s in samples]
        print(f"  {label}: p50 {percentile(values, 50):.1f} ms, p95 {percentile(values, 95):.1f} ms")
    p50 = percentile(claims, 50)
    if broker == "redis":
        print(
            f"  verdict: enqueue -> start p50 {p50:.1f} ms with Redis (target <= {TARGET_P50_MS:g} ms) - "
            f"{'met' if p50 <= TARGET_P50_MS else 'MISSED'}",
            flush=True,
        )
    else:
        print(f"  (filesystem broker: no target; SPEC's 50 ms is for Redis) p50 {p50:.1f} ms", flush=True)

    shutil.rmtree(var, ignore_errors=True)  # the broker folder, workspaces (and the SQLite file, if any)
    if broker == "redis" and args.filesystem_turns > 0:
        print(
            f"\n  comparison: the same without REDIS_URL (filesystem broker), {args.filesystem_turns} turns", flush=True
        )
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "VAR_DIR")}
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--turns",
                str(args.filesystem_turns),
                "--filesystem-turns",
                "0",
                "--concurrency",
                str(args.concurrency),
            ],
            env=env,
            check=True,
        )


if __name__ == "__main__":
    main()
