"""Turns per second through the whole deployment: HTTP API, Redis, Celery worker processes.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/turn_throughput.py [--baseline /work/main]
        [--workers 1 2 4] [--turns 40]

Starts gunicorn (2 sync workers) and one Celery worker with a prefork pool of N processes (the
Procfile's CELERY_CONCURRENCY), then keeps 2 x N clients busy: each submits a scripted turn of 3
steps (two tool calls, then the answer) with POST /api/v1/agent/turns, polls GET until the turn
has ended, and submits the next. `--turns` turns per N (after N warm-up turns). Reports turns per
second (turns / wall time) and p50/p99 from submit to succeeded (the turn's created_at to its
finished_at, as stored). With `--baseline`, the same runs first on that checkout (e.g. main
before the change), against the same database and Redis, and is printed beside.

Everything shares the machine: on a 2-core machine the web processes, PostgreSQL, Redis, the
clients and the workers compete for the same CPUs, so past 2 pool processes the figures show
contention, not the workers' capacity.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile  # noqa: E402
from bench._turns import (  # noqa: E402
    Deployment,
    TurnClient,
    bench_arguments,
    bench_env,
    checkouts,
    prepare_database,
)

SCRIPT = [
    {"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]},
    {"content": None, "tool_calls": [{"name": "calculator", "arguments": {"expression": "2423 * 1312"}}]},
    {"content": "The product is 3178976."},
]
POLL_SECONDS = 0.02  # clients poll gently: their requests compete with the workers for the CPUs


def run_turn(client: TurnClient, index: int) -> float:
    """One scripted turn; milliseconds from submit to succeeded as the turn row stored them."""
    turn = client.wait(
        client.submit(message=f"throughput turn {index}", model="scripted", script=SCRIPT), interval=POLL_SECONDS
    )
    if turn["status"] != "succeeded" or turn["steps"] != len(SCRIPT):
        raise SystemExit(f"a bench turn ended {turn['status']} after {turn['steps']} steps: {turn['error']}")
    created, finished = (datetime.fromisoformat(turn[key]) for key in ("created_at", "finished_at"))
    return (finished - created).total_seconds() * 1000


def load(client: TurnClient, *, turns: int, clients: int) -> tuple[float, list[float]]:
    """`turns` turns from `clients` closed-loop clients: (wall seconds, latencies in ms)."""
    latencies: list[float] = []
    numbers = iter(range(turns))
    lock = threading.Lock()

    def client_loop() -> None:
        while True:
            with lock:
                index = next(numbers, None)
            if index is None:
                return
            latency = run_turn(client, index)
            with lock:
                latencies.append(latency)

    started = time.perf_counter()
    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies


def measure(app: Path, *, env: dict[str, str], token: str, workers: int, turns: int) -> dict[str, float]:
    with Deployment(app=app, env=env, token=token, workers=1, concurrency=workers) as deployment:
        client = deployment.client
        load(client, turns=workers, clients=workers)  # each pool process's first turn, not measured
        seconds, latencies = load(client, turns=turns, clients=2 * workers)
    return {
        "per_second": len(latencies) / seconds,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
    }


def main() -> None:
    parser = bench_arguments(__doc__)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="pool processes to try")
    parser.add_argument("--turns", type=int, default=40, help="measured turns per configuration")
    args = parser.parse_args()
    env = bench_env("throughput")
    token, skills = prepare_database(env)
    apps = checkouts(args.baseline)
    print(
        f"scripted turns of {len(SCRIPT)} steps, gunicorn 2 sync workers, Redis, one Celery worker with N pool "
        f"processes, 2 x N clients, {args.turns} turns each, {skills} skills in the registry; "
        f"{os.cpu_count()} CPUs shared by all of it, "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    for workers in args.workers:
        for label, app in apps:
            row = measure(app, env=env, token=token, workers=workers, turns=args.turns)
            print(
                f"  N={workers} {label:>13}: {row['per_second']:5.2f} turns/s, submit -> succeeded "
                f"p50 {row['p50']:6.0f} ms, p99 {row['p99']:6.0f} ms  (load average {os.getloadavg()[0]:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
