"""Mixed load: reads while versions are published and labels move. Any 5xx? Any torn read?

Starts its own PostgreSQL cluster, Redis and gunicorn on free ports (nothing shared is
touched), publishes a few skills, then runs two phases of the same length:

1. baseline: readers only;
2. mixed: the same readers while publishers add versions and a mover moves `production`.

Readers pick at random among `GET /skills/{name}/SKILL.md?version=N`, the same by label,
`GET /skills/{name}` (the label's version, as JSON), a bundled file by version, and
`POST /resolve`. Every published SKILL.md and `references/version.md` carry the version
number they were published as, so a torn read shows: `version=N` must answer exactly N's
text, and whatever version a label read reports must be complete (its SKILL.md text, its file,
and its link `CURRENT.md -> references/version.md` all saying that same N).

Prints requests per second, p50 and p99 latency for each phase, the status counts, the 5xx
count (must be 0) and the torn-read count (must be 0); `--json` prints the figures as JSON.
The exit status is 1 when either count is not 0.

    .venv/bin/python bench/load_mixed.py [--seconds 20] [--readers 8] [--workers 4]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile  # noqa: E402
from bench._services import Gunicorn, PrivatePostgres, PrivateRedis  # noqa: E402

MARKER = re.compile(rb"published as version (\d+)\.")


def skill_md(name: str, number: int) -> str:
    return (
        f"---\nname: {name}\ndescription: Load test skill {name}; use it when load testing.\n---\n\n"
        f"# {name}\n\nThis text was published as version {number}.\n"
    )


class Client:
    """One HTTP connection per request (gunicorn's sync workers close them anyway)."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, bytes, float]:
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            content = response.read()
            return response.status, dict(response.getheaders()), content, (time.perf_counter() - started) * 1000
        finally:
            conn.close()


class Run:
    """Shared state of one phase: what has been published, and what readers saw."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.published = dict.fromkeys(names, 1)  # name -> newest version whose 201 arrived
        self.lock = threading.Lock()
        self.statuses: Counter[int] = Counter()
        self.read_ms: list[float] = []
        self.by_kind: dict[str, list[float]] = {}
        self.write_ms: list[float] = []
        self.torn: list[str] = []
        self.publishes = 0
        self.moves = 0
        self.stop = threading.Event()
        self.elapsed = 0.0

    def record(self, kind: str, status: int, elapsed_ms: float, *, write: bool = False) -> None:
        with self.lock:
            self.statuses[status] += 1
            (self.write_ms if write else self.read_ms).append(elapsed_ms)
            self.by_kind.setdefault(kind, []).append(elapsed_ms)

    def tear(self, what: str) -> None:
        with self.lock:
            self.torn.append(what)


def _marker(content: bytes) -> int | None:
    found = MARKER.search(content)
    return int(found[1]) if found else None


def reader(client: Client, run: Run, seed: int, reads: int | None) -> None:
    rng = random.Random(seed)
    done = 0
    while not run.stop.is_set() and (reads is None or done < reads):
        done += 1
        name = rng.choice(run.names)
        newest = run.published[name]
        kind = rng.randrange(5)
        if kind == 0:  # an exact version: must be exactly that version's text
            number = rng.randint(1, newest)
            status, headers, content, ms = client.call("GET", f"/api/v1/skills/{name}/SKILL.md?version={number}")
            run.record("SKILL.md by version", status, ms)
            if status == 200 and _marker(content) != number:
                run.tear(f"SKILL.md?version={number} of {name} said {_marker(content)}")
        elif kind == 1:  # a label: the version it names must be complete
            status, headers, content, ms = client.call("GET", f"/api/v1/skills/{name}/SKILL.md?label=production")
            run.record("SKILL.md by label", status, ms)
            if status == 200:
                number = int(headers.get("X-Skill-Version", "0"))
                if _marker(content) != number:
                    run.tear(f"SKILL.md@production of {name} was v{number} but said {_marker(content)}")
                status, _, linked, ms = client.call("GET", f"/api/v1/skills/{name}/files/CURRENT.md?version={number}")
                run.record("file by version", status, ms)
                if status != 200 or _marker(linked) != number:
                    run.tear(f"CURRENT.md of {name} v{number} answered {status} {_marker(linked)}")
        elif kind == 2:  # the JSON detail of the production version
            status, _, content, ms = client.call("GET", f"/api/v1/skills/{name}")
            run.record("detail", status, ms)
            if status == 200:
                detail = json.loads(content)
                files = {f["path"]: f.get("link") for f in detail["files"]}
                if _marker(detail["skill_md"].encode()) != detail["version"] or files != {
                    "references/version.md": None,
                    "CURRENT.md": "references/version.md",
                }:
                    run.tear(f"detail of {name} v{detail['version']} was incomplete: {files}")
        elif kind == 3:  # a bundled file by version
            number = rng.randint(1, newest)
            status, _, content, ms = client.call(
                "GET", f"/api/v1/skills/{name}/files/references/version.md?version={number}"
            )
            run.record("file by version", status, ms)
            if status == 200 and _marker(content) != number:
                run.tear(f"references/version.md?version={number} of {name} said {_marker(content)}")
        else:  # what an agent asks once per turn
            status, _, content, ms = client.call("POST", "/api/v1/resolve", {"query": f"load testing {name}"})
            run.record("resolve", status, ms)
            if status == 200:
                for skill in json.loads(content)["skills"]:
                    known = run.published.get(skill["name"])
                    # One publisher per skill: at most one version is committed but not yet
                    # acknowledged to it; anything beyond was never published.
                    if known is not None and skill["version"] > known + 1:
                        run.tear(f"resolve listed {skill['name']} v{skill['version']}, never published")


def publisher(client: Client, run: Run, name: str, publishes: int | None) -> None:
    done = 0
    while not run.stop.is_set() and (publishes is None or done < publishes):
        done += 1
        number = run.published[name] + 1
        body = {
            "skill_md": skill_md(name, number),
            "files": [
                {"path": "references/version.md", "content_base64": _b64(f"published as version {number}.\n")},
                {"path": "CURRENT.md", "link": "references/version.md"},
            ],
            "base_version": number - 1,
            "message": f"load v{number}",
        }
        status, _, content, ms = client.call("POST", f"/api/v1/skills/{name}/versions", body)
        run.record("publish", status, ms, write=True)
        if status == 201:
            with run.lock:
                run.published[name] = json.loads(content)["version"]
                run.publishes += 1


def mover(client: Client, run: Run, seed: int, moves: int | None) -> None:
    rng = random.Random(seed)
    done = 0
    while not run.stop.is_set() and (moves is None or done < moves):
        done += 1
        name = rng.choice(run.names)
        number = rng.randint(1, run.published[name])
        status, _, _, ms = client.call("PUT", f"/api/v1/skills/{name}/labels/production", {"version": number})
        run.record("label move", status, ms, write=True)
        if status == 200:
            with run.lock:
                run.moves += 1


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def run_phase(
    client: Client, names: list[str], *, readers: int, writers: bool, seconds: float, bounded: int | None
) -> Run:
    """`bounded`: each thread makes that many requests (CI); otherwise they run for `seconds`."""
    run = Run(names)
    for name in names:  # the newest version now, so readers ask only for what exists
        status, headers, _, _ = client.call("GET", f"/api/v1/skills/{name}/SKILL.md?label=latest")
        run.published[name] = int(headers["X-Skill-Version"])
    threads = [threading.Thread(target=reader, args=(client, run, seed, bounded)) for seed in range(readers)]
    if writers:
        threads += [threading.Thread(target=publisher, args=(client, run, name, bounded)) for name in names[:2]]
        threads.append(threading.Thread(target=mover, args=(client, run, 99, bounded)))
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    if bounded is None:
        time.sleep(seconds)
        run.stop.set()
    for thread in threads:
        thread.join()
    run.elapsed = time.perf_counter() - started
    return run


def figures(run: Run) -> dict:
    reads = len(run.read_ms)
    return {
        "reads": reads,
        "reads_per_second": round(reads / run.elapsed, 1),
        "read_p50_ms": round(percentile(run.read_ms, 50), 2),
        "read_p99_ms": round(percentile(run.read_ms, 99), 2),
        "write_p50_ms": round(percentile(run.write_ms, 50), 2) if run.write_ms else None,
        "publishes": run.publishes,
        "label_moves": run.moves,
        "statuses": dict(sorted(run.statuses.items())),
        "server_errors": sum(count for status, count in run.statuses.items() if status >= 500),
        "torn_reads": len(run.torn),
        "torn_examples": run.torn[:5],
        "p50_ms_by_kind": {kind: round(percentile(ms, 50), 1) for kind, ms in sorted(run.by_kind.items())},
    }


def setup_registry(env: dict[str, str], skills: int) -> tuple[str, list[str]]:
    """Migrate the private database, make a token, publish version 1 of each skill and label it
    `production`."""
    os.environ.update(env)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from registry.services.labels import label_move
    from registry.services.skills import skill_version_publish
    from registry.services.tokens import api_token_create
    from registry.skillformat.bundle import bundle_from_parts

    get_user_model().objects.get_or_create(username="load", defaults={"is_superuser": True, "is_staff": True})
    _, token = api_token_create(
        name=f"load-{uuid.uuid4().hex[:8]}", username="load", scopes=["skills:read", "skills:write"]
    )
    names = [f"load-{i}" for i in range(skills)]
    for name in names:
        bundle = bundle_from_parts(
            skill_md(name, 1).encode(),
            [("references/version.md", b"published as version 1.\n", False)],
            links=[("CURRENT.md", "references/version.md")],
        )
        label_move(skill=skill_version_publish(bundle=bundle).skill, label="production", version_number=1)
    connections.close_all()
    return token, names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="length of each phase")
    parser.add_argument("--readers", type=int, default=8, help="reader threads")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--skills", type=int, default=4)
    parser.add_argument("--requests", type=int, default=None, help="bounded run: requests per thread (CI)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    postgres, redis = PrivatePostgres(), PrivateRedis()
    server = None
    try:
        postgres.start()
        redis.start()
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": postgres.create_database("registry"),
            "REDIS_URL": redis.url,
            "VAR_DIR": tempfile.mkdtemp(prefix="load-mixed-var-"),
            "SECRET_KEY": "load-bench-only-secret",
            "DEBUG": "false",
            "CONN_MAX_AGE": "60",
            "API_THROTTLE_RATE": "off",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        token, names = setup_registry(env, args.skills)
        server = Gunicorn(env=env, workers=args.workers).start()
        client = Client(server.port, token)
        baseline = figures(
            run_phase(client, names, readers=args.readers, writers=False, seconds=args.seconds, bounded=args.requests)
        )
        mixed = figures(
            run_phase(client, names, readers=args.readers, writers=True, seconds=args.seconds, bounded=args.requests)
        )
    finally:
        if server is not None:
            server.stop()
        redis.close()
        postgres.close()

    if args.json:
        print(json.dumps({"baseline": baseline, "mixed": mixed}))
    else:
        print(f"gunicorn {args.workers} sync workers, {args.readers} reader threads, PostgreSQL + Redis (private)")
        for title, row in (("reads only", baseline), ("reads + publishes + label moves", mixed)):
            print(
                f"{title:>32}: {row['reads_per_second']:8.1f} reads/s, p50 {row['read_p50_ms']:.1f} ms, "
                f"p99 {row['read_p99_ms']:.1f} ms, {row['publishes']} publishes, {row['label_moves']} label moves, "
                f"5xx {row['server_errors']}, torn reads {row['torn_reads']}, statuses {row['statuses']}"
            )
            print(f"{'p50 by request':>32}: " + ", ".join(f"{k} {v} ms" for k, v in row["p50_ms_by_kind"].items()))
        for example in mixed["torn_examples"]:
            print("  torn:", example)
    failed = any(row["server_errors"] or row["torn_reads"] for row in (baseline, mixed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
