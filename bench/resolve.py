"""resolve() at 1,000 skills / 200 rules (and 10,000 / 1,000 with --large).

    .venv/bin/python bench/resolve.py [--large] [--skills N --rules N] [--repeat 200] [--updates 5]

- cold: the per-generation snapshot built from scratch, then one resolve;
- new query: a query not seen before at a built snapshot (what an agent's every turn costs); then
  again with the consumer's entitlements (`context.tools`, `context.mcp_servers`): the catalog's
  skills declare `metadata.requires` (a third a tool, a tenth an MCP server, a fifth another
  skill, some pinned), so resolve leaves out what the consumer cannot use and brings in what the
  offered skills require;
- warm: the same query again, served from the result cache;
- after a publish / label move / enable-disable / rule edit: the next snapshot read, which moves
  the one held forward (the write itself is not timed);
- then at a second label (`production`, also held from before the write): the next read there,
  which moves forward too.
Last, the answers for 50 of the queries are checked against the straightforward matcher the tests
use as their oracle (tests/registry/resolve_oracle.py), whose cost is printed beside them.
Skills and rules are bulk-inserted (the bench-* names are replaced on each run). Uses DATABASE_URL
when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, percentile, prepare_environment, setup_django, timed  # noqa: E402

TOOLS = ("Bash", "Read", "Write", "Grep", "WebFetch")
SERVERS = ("github", "jira", "slack", "postgres")
# What the bench's consumer has: most skills' needs are met, some are not.
ENTITLEMENTS = {"tools": ["Bash", "Read", "Grep"], "mcp_servers": ["github", "slack"]}


def requires_for(index: int, rng: random.Random) -> str:
    """A skill's `metadata.requires`: a tool for a third, a server for a tenth, an earlier skill
    (so no cycle; pinned at @1 a third of the time) for a fifth."""
    entries = []
    if rng.random() < 0.3:
        entries.append(f"tool:{rng.choice(TOOLS)}")
    if rng.random() < 0.1:
        entries.append(f"mcp:{rng.choice(SERVERS)}")
    if index and rng.random() < 0.2:
        entries.append(f"skill:bench-skill-{rng.randrange(index):05d}" + ("@1" if rng.random() < 0.3 else ""))
    return ", ".join(entries)


def seed(skills: int, rules: int, rng: random.Random, vocabulary: Sequence[str] = WORDS) -> None:
    """Replace the bench-* skills and rules with `skills` and `rules` new ones, in bulk; their
    topics and rule patterns are drawn from `vocabulary`."""
    from django.db import transaction

    from registry.models import ForceIncludeRule, Label, Skill, SkillVersion
    from registry.services.generation import registry_changed

    with transaction.atomic():
        Label.objects.filter(skill__name__startswith="bench-").delete()
        Skill.objects.filter(name__startswith="bench-").delete()
        ForceIncludeRule.objects.filter(name__startswith="bench-").delete()
        rows = Skill.objects.bulk_create(
            Skill(name=f"bench-skill-{i:05d}", source="user", latest_version=1) for i in range(skills)
        )
        versions = []
        needs = random.Random(11)  # its own draws: the topics, rules and queries stay those of rng
        for index, row in enumerate(rows):
            topic = rng.sample(vocabulary, 3)
            requires = requires_for(index, needs)
            helper, work = rng.choice(vocabulary), rng.choice(vocabulary)
            description = (
                f"Handles {' and '.join(topic)} tasks - {helper} helpers for {work} work. "
                f"Use when asked about {topic[0]}."
            )
            metadata = f'metadata: {{requires: "{requires}"}}\n' if requires else ""
            text = (
                f"---\nname: {row.name}\ndescription: {description}\ntags: [{', '.join(topic)}]\n"
                f"triggers: [task_match]\n{metadata}---\n\n# {row.name}\n\nSteps.\n"
            )
            frontmatter = {"name": row.name, "description": description, "tags": topic, "triggers": ["task_match"]}
            if requires:
                frontmatter["metadata"] = {"requires": requires}
            versions.append(
                SkillVersion(
                    skill=row,
                    number=1,
                    skill_md=text,
                    fingerprint=hashlib.sha256(text.encode()).hexdigest(),
                    name=row.name,
                    description=description,
                    frontmatter=frontmatter,
                    tags=topic,
                    triggers=["task_match"],
                )
            )
        SkillVersion.objects.bulk_create(versions, batch_size=2000)
        ForceIncludeRule.objects.bulk_create(
            ForceIncludeRule(
                name=f"bench-rule-{i:04d}",
                pattern=rf"\b{rng.choice(vocabulary)}\s+{rng.choice(vocabulary)}\b",
                skills=[f"bench-skill-{rng.randrange(skills):05d}"],
                instruction=f"Rule {i}.",
            )
            for i in range(rules)
        )
        registry_changed()


def measure(queries: list[str], *, cold_rounds: int, updates: int, rng: random.Random) -> dict:
    from registry.selectors.resolve import registry_caches_reset, resolve

    figures: dict[str, list[float]] = {}

    def cold():
        registry_caches_reset()
        resolve(query=queries[0])

    figures["cold"] = timed(cold, cold_rounds)
    registry_caches_reset()  # a fresh result-cache namespace: every query below is new
    resolve(query="warm the snapshot")
    fresh = iter(queries)
    # With the ETag, as the API answers (a turn's resolve leaves it uncomputed).
    figures["new"] = timed(lambda: resolve(query=next(fresh)).etag, len(queries))
    entitled = iter(queries)  # new again: the entitlements are part of a result's key
    figures["entitled"] = timed(lambda: resolve(query=next(entitled), context=ENTITLEMENTS).etag, len(queries))
    figures["warm"] = timed(lambda: resolve(query=queries[0]).etag, len(queries))
    figures.update(measure_writes(updates=updates, rng=rng))
    return figures


def _edits(updates: int, rng: random.Random) -> dict[str, list]:
    """`updates` writes of each kind, as callables."""
    from registry.models import ForceIncludeRule, Label, Skill
    from registry.services.labels import label_delete, label_move
    from registry.services.rules import rule_update
    from registry.services.skills import skill_set_enabled, skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    def move_production(skill: Skill) -> None:
        if Label.objects.filter(skill=skill, name="production").exists():
            label_delete(skill=skill, label="production")
        else:
            label_move(skill=skill, label="production", version_number=skill.latest_version)

    def publish(skill: Skill) -> None:
        text = (
            f"---\nname: {skill.name}\ndescription: Handles {rng.choice(WORDS)} and "
            f"{rng.choice(WORDS)} tasks, edition {rng.random()}.\n---\n\nSteps.\n"
        )
        skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")

    skills = list(Skill.objects.filter(name__startswith="bench-skill-").order_by("?")[: updates * 3])
    rules = list(ForceIncludeRule.objects.filter(name__startswith="bench-rule-").order_by("?")[:updates])
    return {
        "publish": [lambda skill=skill: publish(skill) for skill in skills[:updates]],
        "label move": [lambda skill=skill: move_production(skill) for skill in skills[updates : updates * 2]],
        "enable/disable": [
            lambda skill=skill: skill_set_enabled(skill=skill, enabled=False)
            for skill in skills[updates * 2 : updates * 3]
        ],
        "rule edit": [
            lambda rule=rule: rule_update(rule=rule, pattern=rf"\b{rng.choice(WORDS)}\s+{rng.choice(WORDS)}\b")
            for rule in rules
        ],
        "undo": [lambda skill=skill: skill_set_enabled(skill=skill, enabled=True) for skill in skills[updates * 2 :]],
    }


def measure_writes(*, updates: int, rng: random.Random) -> dict[str, list[float]]:
    """The next snapshot read after each kind of write, at the default label and at a second one."""
    from registry.selectors.resolve import registry_snapshot

    edits = _edits(updates, rng)
    undo = edits.pop("undo")
    figures: dict[str, list[float]] = {"second label": []}
    for kind, writes in edits.items():
        figures[kind] = []
        for write in writes:
            # The snapshots of the generation before the write are held, at two labels.
            registry_snapshot()
            registry_snapshot(label="production")
            write()
            started = time.perf_counter()
            registry_snapshot()
            figures[kind].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            registry_snapshot(label="production")
            figures["second label"].append((time.perf_counter() - started) * 1000)
    for write in undo:
        write()
    return figures


def check_answers(queries: list[str]) -> tuple[bool, list[float]]:
    """Whether resolve answers as the tests' oracle does for `queries` (every other one with the
    consumer's entitlements), and the oracle's ms per query."""
    from django.conf import settings

    from registry.readmodel.requirements import Entitlements
    from registry.selectors.resolve import registry_caches_reset, registry_snapshot, resolve
    from tests.registry.resolve_oracle import reference_resolve

    registry_caches_reset()
    snapshot = registry_snapshot()
    budgets = {"max_skills": settings.MAX_SKILLS_IN_PROMPT, "max_chars": settings.MAX_PROMPT_CHARS}
    same = True
    costs = []
    for position, query in enumerate(queries):
        context = ENTITLEMENTS if position % 2 else None
        entitlements = Entitlements.of(**ENTITLEMENTS) if context else Entitlements()
        started = time.perf_counter()
        expected = reference_resolve(snapshot, query=query, entitlements=entitlements, **budgets)
        costs.append((time.perf_counter() - started) * 1000)
        same = same and resolve(query=query, context=context, use_cache=False).as_dict() == expected.as_dict()
    return same, costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="10,000 skills and 1,000 rules")
    parser.add_argument("--skills", type=int)
    parser.add_argument("--rules", type=int)
    parser.add_argument("--repeat", type=int, default=200, help="new and warm queries per path")
    parser.add_argument("--updates", type=int, default=5, help="writes of each kind per path")
    args = parser.parse_args()
    skills = args.skills or (10_000 if args.large else 1_000)
    rules = args.rules or (1_000 if args.large else 200)
    prepare_environment("resolve")
    setup_django()

    from django.db import connection

    rng = random.Random(7)
    started = time.perf_counter()
    seed(skills, rules, rng)
    print(
        f"database: {connection.vendor}; {skills:,} skills and {rules:,} rules bulk-inserted in "
        f"{time.perf_counter() - started:.1f} s"
    )
    queries = [" ".join(rng.sample(WORDS, 5)) for _ in range(args.repeat)]
    figures = measure(queries, cold_rounds=3 if skills > 2_000 else 10, updates=args.updates, rng=rng)

    def row(title: str, key: str, pcts: tuple[int, ...] = (50,)) -> None:
        cell = " / ".join(f"{percentile(figures[key], p):8.2f}" for p in pcts)
        print(f"  {title:<42}{cell:>22}")

    print(f"  {'ms':<42}{'resolve':>22}")
    row("cold (snapshot built) p50", "cold")
    row("new query p50 / p99", "new", (50, 99))
    row("new query, with entitlements p50 / p99", "entitled", (50, 99))
    row("warm (cached) p50", "warm")
    for kind in ("publish", "label move", "enable/disable", "rule edit"):
        row(f"snapshot after a {kind} p50", kind)
    row("a second label after any write p50", "second label")
    checked = queries[:50]
    same, figures["oracle"] = check_answers(checked)
    row("the tests' oracle, a new query p50", "oracle")
    print(f"  the oracle's answers for {len(checked)} queries: {'the same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
