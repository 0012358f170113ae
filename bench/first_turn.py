"""The first turn after a worker starts, beside the turns after it.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/first_turn.py [--baseline /work/main]
        [--restarts 3] [--concurrency 2]

Starts gunicorn and one Celery worker as the Procfile does (prefork, `--concurrency 2`), waits
for the worker's "ready", then submits turns with the offline model through the HTTP API in two
waves of `--concurrency` turns at once: the first wave lands one turn in each fresh pool
process (its first turn), the second wave on the same, now warm, processes. Each turn is timed
from the POST to the poll that sees it succeeded. The worker is restarted `--restarts` times
and each round measured again. With `--baseline`, the same is measured on that checkout first
(e.g. main before the change), against the same database and Redis, and printed beside.
Target: the first turn within 2 s.
"""

from __future__ import annotations

import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._turns import Deployment, bench_arguments, bench_env, checkouts, prepare_database  # noqa: E402

TARGET_SECONDS = 2.0


def wave(deployment: Deployment, size: int, label: str) -> list[float]:
    """`size` offline turns submitted at once; seconds from submit to succeeded, each."""
    client = deployment.client

    def one(index: int) -> float:
        seconds, turn = client.run(message=f"{label} {index}: summarise the quarterly csv report", model="offline")
        if turn["status"] != "succeeded":
            raise SystemExit(f"a bench turn ended {turn['status']}: {turn['error']}")
        return seconds

    with ThreadPoolExecutor(size) as pool:
        return list(pool.map(one, range(size)))


def measure(app: Path, *, env: dict[str, str], token: str, restarts: int, concurrency: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"ready": [], "first": [], "second": []}
    with Deployment(app=app, env=env, token=token, workers=1, concurrency=concurrency) as deployment:
        for round_ in range(restarts):
            if round_:
                deployment.stop_workers()
                deployment.start_workers()
            figures["ready"].append(deployment.workers[0].ready_seconds)
            figures["first"] += wave(deployment, concurrency, "first")
            figures["second"] += wave(deployment, concurrency, "second")
    return figures


def main() -> None:
    parser = bench_arguments(__doc__)
    parser.add_argument("--restarts", type=int, default=3, help="worker starts measured per checkout")
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes (the Procfile's default: 2)")
    args = parser.parse_args()
    env = bench_env("first-turn")
    token, skills = prepare_database(env)
    apps = checkouts(args.baseline)
    print(
        f"offline model, {skills} skills in the registry, 1 worker (prefork x{args.concurrency}), "
        f"{args.restarts} worker starts each, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    results = {}
    for label, app in apps:
        results[label] = figures = measure(
            app, env=env, token=token, restarts=args.restarts, concurrency=args.concurrency
        )
        print(
            f"  {label} ({app}): worker start to ready p50 {statistics.median(figures['ready']):.2f} s; "
            f"first turn per pool process p50 {statistics.median(figures['first']):.2f} s, "
            f"max {max(figures['first']):.2f} s; second turn p50 {statistics.median(figures['second']):.2f} s, "
            f"max {max(figures['second']):.2f} s (n={len(figures['first'])})",
            flush=True,
        )
    worst = max(results["this checkout"]["first"])
    verdict = "met" if worst <= TARGET_SECONDS else "MISSED"
    print(f"  verdict: slowest first turn {worst:.2f} s (target <= {TARGET_SECONDS:g} s) - {verdict}")


if __name__ == "__main__":
    main()
