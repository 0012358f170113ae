"""How "at once" is invalidation across processes? Publish, then read at once from other workers.

Starts gunicorn with several sync workers (each request may land on any of them), then N times:
publishes a new version of one skill through the API and, the moment the 201 arrives, sends
`GET /skills/{name}/SKILL.md` and `POST /resolve` (half each; the resolves alternate between no
label and `production`, so each worker holds a snapshot of both) on several fresh connections at
the same instant. A read that answers with an older version than the one just published is stale
(for resolve: the worker's snapshot at that label, moved forward by the change log, lists the old
version).
Prints the stale counts and the publish and SKILL.md read latencies. On PostgreSQL this exercises
LISTEN/NOTIFY (REGISTRY_LISTEN=false measures the query-per-read path for comparison).

    .venv/bin/python bench/invalidation.py [--rounds 200] [--readers 8] [--workers 4]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile, prepare_environment, setup_django  # noqa: E402
from bench.skill_md_throughput import start_gunicorn, wait_for  # noqa: E402


def request(port: int, method: str, path: str, headers: dict, body: bytes | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response, payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--readers", type=int, default=8, help="simultaneous reads after each publish")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    args = parser.parse_args()

    prepare_environment("invalidation")
    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    from registry.services.tokens import api_token_create

    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})  # tokens need a role
    _, secret = api_token_create(
        name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["skills:read", "skills:write"]
    )
    vendor, listening = connection.vendor, connection.vendor == "postgresql" and settings.REGISTRY_LISTEN
    connection.close()

    name = f"bench-fresh-{uuid.uuid4().hex[:8]}"
    auth = {"Authorization": f"Bearer {secret}"}
    server, port = start_gunicorn(args.workers)

    def publish(n: int) -> tuple[int, float]:
        body = json.dumps({"skill_md": f"---\nname: {name}\ndescription: Edit {n}.\n---\n\nBody {n}.\n"}).encode()
        started = time.perf_counter()
        response, payload = request(port, "POST", "/api/v1/skills", {**auth, "Content-Type": "application/json"}, body)
        if response.status not in (200, 201):
            raise SystemExit(f"publish failed: {response.status} {payload[:200]!r}")
        return json.loads(payload)["version"], (time.perf_counter() - started) * 1000

    try:
        wait_for(port, "/healthz", {})
        publish(0)
        stale, reads, publish_ms, read_ms = 0, 0, [], []
        stale_resolves, resolves = 0, 0
        lock = threading.Lock()

        def read(gate: threading.Barrier, published: int) -> None:
            nonlocal stale, reads
            gate.wait()
            started = time.perf_counter()
            response, _ = request(port, "GET", f"/api/v1/skills/{name}/SKILL.md", auth)
            took = (time.perf_counter() - started) * 1000
            with lock:
                reads += 1
                read_ms.append(took)
                stale += int(response.getheader("X-Skill-Version")) < published

        def resolve(gate: threading.Barrier, published: int, label: str | None) -> None:
            # The worker's snapshot at `label` must have moved to the new version (the skill
            # carries no label, so every label lists its latest).
            nonlocal stale_resolves, resolves
            gate.wait()
            body = json.dumps({"query": f"use {name}", "label": label}).encode()
            _, payload = request(port, "POST", "/api/v1/resolve", {**auth, "Content-Type": "application/json"}, body)
            listed = {skill["name"]: skill["version"] for skill in json.loads(payload)["skills"]}
            with lock:
                resolves += 1
                stale_resolves += listed.get(name, 0) < published

        for n in range(1, args.rounds + 1):
            version, elapsed = publish(n)
            publish_ms.append(elapsed)
            gate = threading.Barrier(args.readers)
            threads = [
                threading.Thread(target=resolve, args=(gate, version, "production" if i % 4 == 3 else None))
                if i % 2
                else threading.Thread(target=read, args=(gate, version))
                for i in range(args.readers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        print(
            f"database: {vendor} ({'LISTEN for changes' if listening else 'a query per read'});"
            f" gunicorn sync workers: {args.workers}; {args.rounds} publishes, {args.readers} reads right after each"
        )
        print(f"  stale reads: {stale} of {reads} SKILL.md, {stale_resolves} of {resolves} resolves")
        print(
            f"  publish p50 {percentile(publish_ms, 50):.1f} ms;"
            f" read right after p50 {percentile(read_ms, 50):.1f} ms, p99 {percentile(read_ms, 99):.1f} ms"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
