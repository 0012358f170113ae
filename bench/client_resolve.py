"""resolve through the Python client (clients/python) beside a plain GET of a SKILL.md.

    .venv/bin/python bench/client_resolve.py [--skills 50] [--repeat 300]

Against gunicorn (one sync worker) on 127.0.0.1, one caller, a new connection per request as
urllib makes them:
- client warm: `Client.resolve` within its ttl, answered from memory (no request);
- client revalidated: ttl=0, so each call sends If-None-Match and the registry answers 304;
- client uncached: a query not asked before, a 200 and a new cache entry;
- plain POST /resolve with If-None-Match with urllib (the 304 without the client around it);
- plain GET /skills/{name}/SKILL.md with urllib (a 200 with the bytes), the same transport.
Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The client is the installed distribution (make install-dev), as its users run it.
from skill_registry_client import Client  # noqa: E402

from bench._common import WORDS, describe, prepare_environment, setup_django, timed  # noqa: E402
from bench._services import Gunicorn  # noqa: E402


def publish_skills(n: int) -> None:
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    for i in range(n):
        topic = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3))
        skill_md = f"---\nname: bench-client-{i}\ndescription: Works with {topic}. Use for {topic} tasks.\n---\n"
        skill_md += f"# Bench {i}\n\nSteps for {topic}.\n"
        skill_version_publish(bundle=bundle_from_parts(skill_md.encode(), []), source="user")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()

    prepare_environment("client-resolve")
    setup_django()
    from django.contrib.auth import get_user_model

    from registry.services.tokens import api_token_create

    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})
    _, token = api_token_create(name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["skills:read"])
    publish_skills(args.skills)

    server = Gunicorn(env=os.environ.copy(), workers=1).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        query = "summarise the csv report and chart it"
        warm = Client(base, token, ttl=3600)
        revalidating = Client(base, token, ttl=0, stale_while_revalidate=0)
        fresh = Client(base, token, ttl=0, stale_while_revalidate=0)
        warm.resolve(query)
        revalidating.resolve(query)
        numbers = count()
        plain = urllib.request.Request(
            f"{base}/api/v1/skills/bench-client-1/SKILL.md", headers={"Authorization": f"Bearer {token}"}
        )

        def get_plain() -> None:
            with urllib.request.urlopen(plain) as response:
                response.read()

        etag = revalidating.resolve(query).etag
        plain_resolve = urllib.request.Request(
            f"{base}/api/v1/resolve",
            data=json.dumps({"query": query, "label": None, "context": {}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "If-None-Match": etag},
        )

        def post_plain_resolve() -> None:
            try:
                urllib.request.urlopen(plain_resolve).read()
            except urllib.error.HTTPError as answer:
                assert answer.code == 304, answer.code

        get_plain()
        print(f"{args.skills} skills, gunicorn with 1 sync worker, one caller")
        print(f"  client warm (in-process hit):  {describe(timed(lambda: warm.resolve(query), args.repeat * 10))}")
        print(f"  plain POST /resolve (304):     {describe(timed(post_plain_resolve, args.repeat))}")
        print(f"  client revalidated (304):      {describe(timed(lambda: revalidating.resolve(query), args.repeat))}")
        uncached = timed(lambda: fresh.resolve(f"{query} {next(numbers)}"), args.repeat)
        print(f"  client uncached (200):         {describe(uncached)}")
        print(f"  plain GET SKILL.md (200):      {describe(timed(get_plain, args.repeat))}")
        assert revalidating.stats.revalidated >= args.repeat, revalidating.stats
        assert warm.stats.fetched == 1, warm.stats
    finally:
        server.stop()


if __name__ == "__main__":
    main()
