"""resolve() with 1,000 skills and 200 force-include rules: cold, new-query and warm latency.

    .venv/bin/python bench/resolve.py [--skills 1000] [--rules 200] [--repeat 200]

"cold" rebuilds the per-generation snapshot (skills, match index, compiled rules); "new query"
is a query not seen before at a built snapshot (matching + rules + prompt block); "warm" is a
repeated call served from the cache (target: p50 <= 10 ms). Uses DATABASE_URL when set (give it
a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, describe, prepare_environment, setup_django, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    prepare_environment("resolve")
    setup_django()

    from django.db import connection, transaction

    from registry.bundle import bundle_from_parts
    from registry.models import ForceIncludeRule
    from registry.selectors.resolve import registry_caches_reset, resolve
    from registry.services.rules import rule_create
    from registry.services.skills import skill_version_publish

    rng = random.Random(7)
    started = time.perf_counter()
    with transaction.atomic():
        for i in range(args.skills):
            topic = rng.sample(WORDS, 3)
            text = (
                f"---\nname: bench-skill-{i:04d}\ndescription: Handles {' and '.join(topic)} tasks - "
                f"{rng.choice(WORDS)} helpers for {rng.choice(WORDS)} work. Use when asked about {topic[0]}.\n"
                f"tags: [{', '.join(topic)}]\ntriggers: [task_match]\n---\n\n# Skill {i}\n\nSteps.\n"
            )
            skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")
        for i in range(args.rules):
            if not ForceIncludeRule.objects.filter(name=f"bench-rule-{i:03d}").exists():
                rule_create(
                    name=f"bench-rule-{i:03d}",
                    pattern=rf"\b{rng.choice(WORDS)}\s+{rng.choice(WORDS)}\b",
                    skills=[f"bench-skill-{rng.randrange(args.skills):04d}"],
                    instruction=f"Rule {i}.",
                )
    print(
        f"database: {connection.vendor}; {args.skills} skills and {args.rules} rules set up in "
        f"{time.perf_counter() - started:.1f}s"
    )

    queries = [" ".join(rng.sample(WORDS, 5)) for _ in range(args.repeat)]

    def cold():
        registry_caches_reset()
        resolve(query=queries[0])

    print("  cold (snapshot rebuilt):", describe(timed(cold, 10)))
    resolve(query="warm the snapshot")
    fresh = iter(queries)
    print(
        "  new query (snapshot warm, result not cached):",
        describe(timed(lambda: resolve(query=next(fresh)), args.repeat)),
    )
    result = resolve(query=queries[0])
    print(
        "  warm (cached result):",
        describe(timed(lambda: resolve(query=queries[0]), args.repeat)),
        "- target p50 <= 10 ms",
    )
    print(
        f"  prompt block: {len(result.prompt_block):,} chars, {len(result.skills)} skills listed, "
        f"{len(result.fired_rules)} rules fired"
    )


if __name__ == "__main__":
    main()
