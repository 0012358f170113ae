"""`skills/list` on `/mcp` at 1,000 skills, as an MCP host sees it.

Seeds 1,000 skills (SKILL.md and two files each), starts gunicorn (config.wsgi, sync workers, as
production runs it) on a free local port and connects the `mcp` package's own client over
Streamable HTTP at protocol revision 2026-07-28. Prints p50/p99 of one `skills/list` page
(200 entries), of the whole listing (every page), and of the first listing after a skill is
disabled or enabled (the snapshot moves forward, the catalogue reads what is new), plus
`skills/get` and `resources/read` for comparison.

    .venv/bin/python bench/mcp_list.py [--skills 1000] [--repeat 50]

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import describe, prepare_environment, setup_django  # noqa: E402
from bench.resolve import seed  # noqa: E402
from bench.skill_md_throughput import start_gunicorn  # noqa: E402


def add_files(per_skill: int) -> None:
    """Give every bench skill `per_skill` small files of its own, in bulk."""
    from django.db import transaction

    from registry.models import Blob, SkillFile, SkillVersion
    from registry.services.generation import registry_changed

    with transaction.atomic():
        blobs, files = {}, []
        for version in SkillVersion.objects.filter(skill__name__startswith="bench-").only("id", "name"):
            for i in range(per_skill):
                content = f"# {version.name} reference {i}\n\n{'Details. ' * 40}\n".encode()
                sha = hashlib.sha256(content).hexdigest()
                blobs[sha] = Blob(sha256=sha, size=len(content), content=content)
                files.append(SkillFile(version=version, path=f"references/ref-{i}.md", blob_id=sha, size=len(content)))
        Blob.objects.bulk_create(blobs.values(), ignore_conflicts=True, batch_size=2000)
        SkillFile.objects.bulk_create(files, batch_size=2000)
        registry_changed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=50, help="samples per figure")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    args = parser.parse_args()
    prepare_environment("mcp")
    setup_django()

    import anyio
    import httpx2
    import mcp_types as types
    from django.contrib.auth import get_user_model
    from django.db import connection
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from pydantic import TypeAdapter

    from registry.models import Skill
    from registry.services.skills import skill_set_enabled
    from registry.services.tokens import api_token_create

    started = time.perf_counter()
    seed(args.skills, 0, random.Random(7))
    add_files(2)
    get_user_model().objects.update_or_create(username="bench", defaults={"is_superuser": True})
    _, secret = api_token_create(name=f"bench-{uuid.uuid4().hex[:8]}", username="bench", scopes=["skills:read"])
    print(f"database: {connection.vendor}; {args.skills:,} skills seeded in {time.perf_counter() - started:.1f} s")
    connection.close()

    class SkillsList(types.Request[types.PaginatedRequestParams, Literal["skills/list"]]):
        method: Literal["skills/list"] = "skills/list"

    class GetParams(types.RequestParams):
        uri: str

    class SkillsGet(types.Request[GetParams, Literal["skills/get"]]):
        method: Literal["skills/get"] = "skills/get"

    any_dict = TypeAdapter(dict[str, Any])

    toggled = Skill.objects.get(name="bench-skill-00500")

    def changed(round_: int) -> None:
        """A write as the console or API makes it (it names its skill): disable, then enable."""
        skill_set_enabled(skill=toggled, enabled=bool(round_ % 2))
        connection.close()

    server, port = start_gunicorn(args.workers)

    async def run() -> dict[str, list[float]]:
        figures: dict[str, list[float]] = {"page": [], "listing": [], "cold": [], "get": [], "read": []}
        headers = {"Authorization": f"Bearer {secret}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            deadline = time.monotonic() + 30
            while True:
                try:
                    await http.get(f"http://127.0.0.1:{port}/healthz")
                    break
                except httpx2.TransportError:
                    if time.monotonic() > deadline:
                        raise SystemExit("gunicorn did not come up") from None
                    await anyio.sleep(0.2)
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.discover()

                    async def listing() -> int:
                        count, cursor = 0, None
                        while True:
                            page = await session.send_request(
                                SkillsList(params=types.PaginatedRequestParams(cursor=cursor)), any_dict
                            )
                            count += len(page["skills"])
                            cursor = page.get("nextCursor")
                            if cursor is None:
                                return count

                    async def timed(key: str, call) -> Any:
                        began = time.perf_counter()
                        result = await call()
                        figures[key].append((time.perf_counter() - began) * 1000)
                        return result

                    # Warm both workers' catalogues (the database may hold other skills than bench-*).
                    served = await listing()
                    assert served >= args.skills, served
                    await listing()
                    first_page = SkillsList(params=types.PaginatedRequestParams())
                    get = SkillsGet(params=GetParams(uri="skill://bench-skill-00007/SKILL.md"))
                    for _ in range(args.repeat):
                        await timed("page", lambda: session.send_request(first_page, any_dict))
                        await timed("listing", listing)
                        await timed("get", lambda: session.send_request(get, any_dict))
                        await timed(
                            "read", lambda: session.read_resource("skill://bench-skill-00007/references/ref-1.md")
                        )
                    for round_ in range(min(args.repeat, 10)):
                        await anyio.to_thread.run_sync(changed, round_)
                        await timed("cold", listing)
        figures["served"] = [served]
        return figures

    try:
        figures = anyio.run(run)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"gunicorn sync workers: {args.workers}; mcp client at 2026-07-28; one host, calls one after another")
    print(f"  skills/list, one page (200 entries):          {describe(figures['page'])}")
    print(f"  skills/list, all {figures['served'][0]:,} (every page):        {describe(figures['listing'])}")
    print(f"  skills/list, all, first after an enable/disable: {describe(figures['cold'])}")
    print(f"  skills/get, one skill:                        {describe(figures['get'])}")
    print(f"  resources/read, one file:                     {describe(figures['read'])}")


if __name__ == "__main__":
    os.environ.setdefault("WEB_CONCURRENCY", "2")
    main()
