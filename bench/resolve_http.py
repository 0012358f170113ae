"""`POST /api/v1/resolve` for a query never seen before vs `GET /api/v1/skills/{name}/SKILL.md`,
over real HTTP, at 1,000 skills and 200 rules.

Starts the Procfile's `web` process as `make run` does (gunicorn with config/gunicorn.py, threaded
workers, the access log on standard output; `--server sync` gives gunicorn's bare sync workers
instead) on a free local port, with bench.settings (the production settings), and sends one
request at a time from one client, each on its own connection, so p50 is the latency an agent
sees for each. Every resolve carries a query no request asked before (its result cannot come from
the result cache; the snapshot is built by the warm-up). Target: resolve p50 within 1.5x of
SKILL.md's.

What makes the reading fair (the target is for "a never-seen query" at 1,000 skills / 200 rules):
- Vocabulary: real skills each have words of their own (see skills/ and the corpus of published
  folders), so a query shares words with a handful of them, not with every skill as the 40 topic
  words of the other benches make it. Here topics and rule patterns are drawn from the ~1,500
  distinct words of the bundled skills' SKILL.md files (sorted, so a run is repeatable);
  `--vocabulary small` gives the old 40-word reading for comparison. The answer's size does not
  depend on it: resolve lists every effective skill, ranked (unmatched ones at score 0), up to
  MAX_SKILLS_IN_PROMPT (150), so at 1,000 skills an answer carries 150 entries (~80 KB) whatever
  the query; only the ranking work and the rules that fire change.
- Queries read like a user's turn: two words of one skill's topic plus two other words, in a
  sentence, and a counter so none repeats.
- The API's defaults: no max_skills / max_chars / label, so the answer is what an agent gets.
The answer's size (skills carried, bytes) is printed beside the times, so the reading can be judged.

    .venv/bin/python bench/resolve_http.py [--skills 1000] [--rules 200] [--repeat 300] [--workers 2] [--server sync]

Uses DATABASE_URL when set (give it a database of its own; bench-* skills and rules are replaced),
else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, WORDS, describe, percentile, prepare_environment, setup_django  # noqa: E402
from bench.resolve import seed  # noqa: E402
from bench.skill_md_throughput import free_port, start_gunicorn, wait_for  # noqa: E402


def skills_vocabulary() -> list[str]:
    """The distinct non-stop words (4-14 letters) of the bundled skills' SKILL.md files."""
    from registry.matching.ranking import STOP_WORDS

    text = " ".join(p.read_text().lower() for p in sorted((ROOT / "skills").glob("*/SKILL.md")))
    return sorted(set(re.findall(r"\b[a-z]{4,14}\b", text)) - STOP_WORDS)


def seeded_topics() -> list[list[str]]:
    """Each bench skill's topic words (its tags)."""
    from registry.models import SkillVersion

    return list(SkillVersion.objects.filter(skill__name__startswith="bench-").values_list("tags", flat=True))


def start_web_as_make_run(workers: int) -> tuple[subprocess.Popen, int]:
    """The Procfile's `web` process, as `make run` starts it (gunicorn's config file, threaded
    workers, the access log on standard output), on a free local port."""
    port = free_port()
    line = next(x for x in (ROOT / "Procfile").read_text().splitlines() if x.startswith("web:"))
    command = line.removeprefix("web:").replace("$PORT", str(port)).replace("${WEB_CONCURRENCY:-2}", str(workers))
    server = subprocess.Popen(shlex.split(command), cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL)
    return server, port


def request(
    port: int, method: str, path: str, headers: dict, body: bytes | None = None, sizes: list | None = None
) -> float:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    assert response.status == 200, (method, path, response.status)
    if sizes is not None:
        sizes.append((len(json.loads(data)["skills"]), len(data)))
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    parser.add_argument("--vocabulary", choices=["skills", "small"], default="skills")
    parser.add_argument(
        "--server",
        choices=["make-run", "sync"],
        default="make-run",
        help="the web process as `make run` starts it (default), or gunicorn's bare sync workers",
    )
    args = parser.parse_args()
    prepare_environment("resolve-http")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from registry.services.tokens import api_token_create

    rng = random.Random(7)
    vocabulary = skills_vocabulary() if args.vocabulary == "skills" else list(WORDS)
    seed(args.skills, args.rules, rng, vocabulary)
    topics = seeded_topics()
    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})  # tokens need a role
    _, secret = api_token_create(name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["skills:read"])
    connection.close()

    server, port = (start_web_as_make_run if args.server == "make-run" else start_gunicorn)(args.workers)
    auth = {"Authorization": f"Bearer {secret}"}
    json_auth = {**auth, "Content-Type": "application/json"}
    skill_md = f"/api/v1/skills/bench-skill-{args.skills // 2:05d}/SKILL.md"
    asked = iter(range(10**9))
    sizes: list[tuple[int, int]] = []

    def new_query() -> bytes:
        a, b = rng.sample(rng.choice(topics), 2)
        c, d = rng.sample(vocabulary, 2)
        return json.dumps({"query": f"Can you {a} the {b} with {c} and {d}? ({next(asked)})"}).encode()

    try:
        wait_for(port, skill_md, auth)
        for _ in range(10 * args.workers):  # every worker builds its snapshot and warms its caches
            request(port, "POST", "/api/v1/resolve", json_auth, new_query())
            request(port, "GET", skill_md, auth)
        repeated_query = new_query()
        resolves, repeats, reads = [], [], []
        for _ in range(args.repeat):  # interleaved: all see the same load on a shared machine
            resolves.append(request(port, "POST", "/api/v1/resolve", json_auth, new_query(), sizes))
            repeats.append(request(port, "POST", "/api/v1/resolve", json_auth, repeated_query))
            reads.append(request(port, "GET", skill_md, auth))
    finally:
        server.terminate()
        server.wait(timeout=30)
    ratio = percentile(resolves, 50) / percentile(reads, 50)
    print(
        f"database: {connection.vendor}; {args.skills} skills, {args.rules} rules; "
        f"server: {args.server}, {args.workers} gunicorn workers"
    )
    print(f"  POST /resolve, a new query: {describe(resolves)}")
    carried = sorted(n for n, _ in sizes)
    print(
        f"  answers: {percentile(carried, 50):.0f} skills at p50 (max {carried[-1]}), "
        f"{statistics.median(b for _, b in sizes) / 1000:.1f} KB at p50"
    )
    print(f"  POST /resolve, a repeat:    {describe(repeats)} (the answer from the result cache)")
    print(f"  GET SKILL.md:               {describe(reads)}")
    print(
        f"  verdict: resolve / SKILL.md at p50 = {ratio:.2f}x (target <= 1.5x) - {'met' if ratio <= 1.5 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
