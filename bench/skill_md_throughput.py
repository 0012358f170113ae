"""GET /api/v1/skills/{name}/SKILL.md vs a bare Django view returning the same bytes.

Starts gunicorn (config.wsgi with bench.settings: production middleware, plus the bare view) on
127.0.0.1, loads it with `wrk` when installed (`apt-get install wrk`), else with a Python
keep-alive client, and prints throughput and p50/p99 for the 200 and the 304 path of both.
Target: the API at >= 0.7 of the bare view's throughput.

    .venv/bin/python bench/skill_md_throughput.py [--duration 10] [--connections 16] [--workers 2]

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file. On
PostgreSQL, REGISTRY_LISTEN=false measures the path that reads the generation with a query.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, percentile, prepare_environment, setup_django  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(workers: int) -> tuple[subprocess.Popen, int]:
    """The app under gunicorn's sync workers, as production runs it, on a free local port."""
    port = free_port()
    command = [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers), "--worker-class", "sync", "--log-level", "warning"]
    return subprocess.Popen(command, env=os.environ.copy(), cwd=ROOT), port


def wait_for(port: int, path: str, headers: dict, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path, headers=headers)
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not come up")


def run_wrk(port: int, path: str, headers: dict, duration: int, connections: int) -> dict:
    command = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency"]
    for key, value in headers.items():
        command += ["-H", f"{key}: {value}"]
    output = subprocess.run(
        command + [f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, timeout=duration + 30
    ).stdout

    def latency(label: str) -> float:
        found = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)", output, re.M)
        if not found:
            return float("nan")
        value, unit = float(found[1]), found[2]
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output)[1])
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {"rps": rps, "p50": latency("50"), "p99": latency("99"), "errors": int(non_2xx[1]) if non_2xx else 0}


def run_python(port: int, path: str, headers: dict, duration: int, connections: int) -> dict:
    samples: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + duration

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        local, bad = [], 0
        while time.monotonic() < stop:
            started = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            local.append((time.perf_counter() - started) * 1000)
            bad += response.status >= 400
        with lock:
            samples.extend(local)
            errors[0] += bad

    threads = [threading.Thread(target=client) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "rps": len(samples) / duration,
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "errors": errors[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement (default 10)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    args = parser.parse_args()

    prepare_environment("skillmd")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from registry.services.skills import skill_import_path
    from registry.services.tokens import api_token_create

    skill = skill_import_path(path=ROOT / "skills" / "summarize", source="bundled").skill
    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})  # tokens need a role
    _, secret = api_token_create(name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["skills:read"])
    connection.close()

    server, port = start_gunicorn(args.workers)
    load = run_wrk if shutil.which("wrk") else run_python
    auth = {"Authorization": f"Bearer {secret}"}
    api_path, bare_path = f"/api/v1/skills/{skill.name}/SKILL.md", f"/bench/bare/{skill.name}"
    try:
        wait_for(port, api_path, auth)
        wait_for(port, bare_path, auth)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("GET", api_path, headers=auth)
        response = conn.getresponse()
        body, etag = response.read(), response.getheader("ETag")
        from django.conf import settings

        listening = connection.vendor == "postgresql" and settings.REGISTRY_LISTEN
        print(
            f"database: {connection.vendor} (CONN_MAX_AGE={os.environ['CONN_MAX_AGE']},"
            f" {'LISTEN for changes' if listening else 'a query per request'});"
            f" load: {'wrk' if load is run_wrk else 'python threads'}; "
            f"gunicorn sync workers: {args.workers}; {args.connections} connections; {args.duration}s each; "
            f"SKILL.md {len(body)} bytes"
        )
        results = {}
        for label, path, extra in [
            ("bare 200", bare_path, {}),
            ("api  200", api_path, {}),
            ("bare 304", bare_path, {"If-None-Match": etag}),
            ("api  304", api_path, {"If-None-Match": etag}),
        ]:
            load(port, path, {**auth, **extra}, 2, args.connections)  # warm-up
            results[label] = load(port, path, {**auth, **extra}, args.duration, args.connections)
            r = results[label]
            print(
                f"  {label}: {r['rps']:8.0f} req/s  p50 {r['p50']:6.2f} ms  p99 {r['p99']:6.2f} ms"
                f"  errors {r['errors']}"
            )
        for kind in ("200", "304"):
            ratio = results[f"api  {kind}"]["rps"] / results[f"bare {kind}"]["rps"]
            print(f"  {kind} path: API / bare throughput = {ratio:.2f} (target >= 0.70)")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
