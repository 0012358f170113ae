"""resolve() with and without an active rollout, at 1,000 skills / 200 rules.

    .venv/bin/python bench/rollout_resolve.py [--skills N --rules N] [--repeat 300] [--rollouts 20]

Every request names a subject (`context.subject`), so both runs pay for deciding its side:
- without: no label has a rollout (the subject changes nothing);
- with: `--rollouts` skills have v2 rolled out to 50% of production's subjects, so about half
  the requests read a pinned snapshot (the canary side of each rollout they fall on).
Each query is new (the result cache misses), as an agent's every turn is; "warm" repeats one
query for one subject. Uses DATABASE_URL when set (give it a database of its own).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, percentile, prepare_environment, setup_django, timed  # noqa: E402
from bench.resolve import seed  # noqa: E402


def start_rollouts(count: int) -> None:
    """v2 of `count` bench skills rolled out to 50% of production's subjects (production on v1)."""
    from registry.models import Skill
    from registry.services.labels import label_move
    from registry.services.rollouts import label_rollout_set
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    for skill in Skill.objects.filter(name__startswith="bench-skill-").order_by("name")[:count]:
        text = f"---\nname: {skill.name}\ndescription: Handles {WORDS[0]} tasks, second edition.\n---\n\nSteps.\n"
        skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")
        label_move(skill=skill, label="production", version_number=1)
        label_rollout_set(skill=skill, label="production", version_number=2, weight=50)


def measure(queries: list[str], rng: random.Random) -> dict[str, list[float]]:
    from registry.selectors.resolve import registry_caches_reset, resolve

    registry_caches_reset()
    resolve(query="warm the snapshot")
    fresh = iter(queries)
    figures = {
        "new": timed(
            lambda: resolve(query=next(fresh), context={"subject": f"user-{rng.randrange(10**9)}"}).etag, len(queries)
        ),
        "warm": timed(lambda: resolve(query=queries[0], context={"subject": "user-1"}).etag, len(queries)),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1_000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--rollouts", type=int, default=20)
    args = parser.parse_args()
    prepare_environment("rollout_resolve")
    setup_django()

    rng = random.Random(11)
    seed(args.skills, args.rules, rng)
    without = measure([" ".join(rng.sample(WORDS, 5)) for _ in range(args.repeat)], rng)
    start_rollouts(args.rollouts)
    with_rollouts = measure([" ".join(rng.sample(WORDS, 5)) for _ in range(args.repeat)], rng)

    print(f"{args.skills:,} skills, {args.rules:,} rules; {args.rollouts} rollouts at 50% in the second column")
    print(f"  {'ms':<34}{'no rollout':>14}{'with rollouts':>16}")
    for title, key in (("new query p50", "new"), ("new query p99", "new"), ("warm (cached) p50", "warm")):
        pct = 99 if "p99" in title else 50
        print(f"  {title:<34}{percentile(without[key], pct):14.2f}{percentile(with_rollouts[key], pct):16.2f}")


if __name__ == "__main__":
    main()
