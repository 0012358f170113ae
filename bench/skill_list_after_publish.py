"""The console's skill list right after a publish, at 1,000 skills and 10,000 versions.

    .venv/bin/python bench/skill_list_after_publish.py [--skills 1000] [--versions-per-skill 10] [--repeat 30]

Each round publishes a new version of one skill through the real service (not timed), then times
the next `GET /skills/` (page 1, logged in as an author, Django's test client: server time without
the network), then the same page again (nothing changed since) and the search fragment after
another publish. What the list costs right after a publish is what keeping the catalogue (the
read model's, registry/readmodel/catalog.py) up to date costs. Target: p50 <= 50 ms. Uses
DATABASE_URL when set (the skills of bench/console_pages.py, reused on a second run), else a fresh
SQLite file.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, describe, percentile, prepare_environment, setup_django  # noqa: E402
from bench.console_pages import populate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--versions-per-skill", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    prepare_environment("skill-list")
    setup_django()

    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client

    from registry.models import Skill, SkillVersion
    from tests.factories import UserFactory, publish

    populate(args.skills, args.versions_per_skill)
    print(f"database: {connection.vendor}; {Skill.objects.count()} skills, {SkillVersion.objects.count()} versions")
    author, _ = UserFactory._meta.model.objects.get_or_create(username="bench-list-author")
    author.groups.add(Group.objects.get(name="author"))
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(author)
    rng = random.Random(5)
    run = uuid.uuid4().hex[:8]  # a second run on the same database must publish new text too
    published = iter(range(10**9))

    def publish_one() -> None:
        name = f"bench-console-{rng.randrange(args.skills):04d}"
        publish(name, description=f"Handles {' '.join(rng.sample(WORDS, 4))} tasks ({run}-{next(published)}).")

    def get(url: str, **headers) -> float:
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code)
        return elapsed

    versions = SkillVersion.objects.count()
    for _ in range(3):  # warm connections, the template loader and the catalogue
        publish_one()
        get("/skills/")
    assert SkillVersion.objects.count() == versions + 3, "each publish must add a version"
    after, again, search = [], [], []
    for _ in range(args.repeat):
        publish_one()
        after.append(get("/skills/"))
        again.append(get("/skills/"))
        publish_one()
        search.append(get("/skills/?q=sql+report", **{"HX-Request": "true"}))
    p50 = percentile(after, 50)
    print(f"  skills list right after a publish:          {describe(after)}")
    print(f"  skills list again (nothing changed):        {describe(again)}")
    print(f"  search fragment right after a publish:      {describe(search)}")
    print(
        f"  verdict: list right after a publish p50 {p50:.2f} ms (target <= 50 ms) - {'met' if p50 <= 50 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
