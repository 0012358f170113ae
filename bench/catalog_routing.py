"""The model-free catalog routing report at 100, 1,000 and 10,000 skills.

    .venv/bin/python bench/catalog_routing.py [--sizes 100,1000,10000] [--cases 3]

For each size, the bench-* skills are replaced by that many, each with `--cases` trigger cases in
its eval suite (bulk-inserted), and then:
- inputs: the snapshot at the label (built afresh) and the suites read, with their digest;
- report: every trigger case resolved against the whole catalog, the confusions and the
  description overlaps (what the worker's recompute costs); then computed again for its peak
  memory (tracemalloc: allocations made while computing it; the snapshot is built before);
- per case: the report's time over its cases;
- stored: the report read back from the cache (what a request costs once the worker has it);
- the catalog eval's overhead per case beyond its turn: what a catalog run's own bookkeeping costs
  for each trigger case, with the turns themselves (a model call each) left out: queueing the run
  (reading the catalog and its suites, one result row per case), tying each case to its turn,
  grading each ended turn (reading its `skill_activated` events, storing what it loaded) and
  ending the run (the confusion matrix over every case). The turns are made in bulk beforehand,
  each ended with one trace event, as a worker would leave them; grading is timed on a sample
  of `--grade-sample` cases (the rest are graded untimed, so the matrix covers them all).
Descriptions draw their topic words from a vocabulary that grows with the catalog (so skills do
not all share the same 40 words), plus the generic words real descriptions repeat. Uses
DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, prepare_environment, setup_django  # noqa: E402

GENERIC = "files data report text code review summary use asked tasks work".split()
SYLLABLES = "ka lo mi ru te so na vi pe du ga fo ji ze ba ku ri ma".split()


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """WORDS and made-up topic words, about one per two skills."""
    made = {rng.choice(SYLLABLES) + rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(max(size // 2, 50))}
    return [*WORDS, *sorted(made)]


def seed(skills: int, cases: int, rng: random.Random) -> None:
    """Replace the bench-* skills with `skills` new ones, each with `cases` trigger cases."""
    from django.db import transaction

    from registry.models import EvalSuite, EvalSuiteRevision, Label, Skill, SkillVersion
    from registry.services.generation import registry_changed

    words = vocabulary(skills, rng)
    with transaction.atomic():
        Label.objects.filter(skill__name__startswith="bench-").delete()
        Skill.objects.filter(name__startswith="bench-").delete()
        rows = Skill.objects.bulk_create(
            Skill(name=f"bench-skill-{i:05d}", source="user", latest_version=1) for i in range(skills)
        )
        versions, topics = [], {}
        for row in rows:
            topic = rng.sample(words, 3)
            topics[row.pk] = topic
            description = (
                f"Handles {' and '.join(topic)} tasks with {rng.choice(GENERIC)} and {rng.choice(GENERIC)} "
                f"helpers. Use when asked about {topic[0]} or {topic[1]}."
            )
            text = f"---\nname: {row.name}\ndescription: {description}\ntags: [{', '.join(topic)}]\n---\n\nSteps.\n"
            versions.append(
                SkillVersion(
                    skill=row,
                    number=1,
                    skill_md=text,
                    fingerprint=hashlib.sha256(text.encode()).hexdigest(),
                    name=row.name,
                    description=description,
                    frontmatter={"name": row.name, "description": description, "tags": topic},
                    tags=topic,
                    triggers=["task_match"],
                )
            )
        SkillVersion.objects.bulk_create(versions, batch_size=2000)
        suites = EvalSuite.objects.bulk_create(EvalSuite(skill=row, revision=1) for row in rows)
        EvalSuiteRevision.objects.bulk_create(
            (
                EvalSuiteRevision(
                    suite=suite,
                    number=1,
                    cases=[
                        {
                            "id": f"t-{n}",
                            "kind": "trigger",
                            # Two of its topic words among others: most land first, some do not.
                            "query": " ".join([*rng.sample(topics[suite.skill_id], 2), *rng.sample(words, 2)]),
                            "should_trigger": True,
                        }
                        for n in range(cases)
                    ],
                    accepted_at=None,
                )
                for suite in suites
            ),
            batch_size=2000,
        )
        registry_changed()


def measure(label: str | None) -> dict[str, float]:
    from django.core.cache import cache

    from registry.selectors.catalog_routing import catalog_routing_inputs, catalog_routing_report
    from registry.selectors.resolve import registry_caches_reset

    registry_caches_reset()
    started = time.perf_counter()
    inputs = catalog_routing_inputs(label=label)
    inputs_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    report = catalog_routing_report(inputs)
    report_ms = (time.perf_counter() - started) * 1000
    # Again for its memory: tracing allocations slows Python down several times over.
    registry_caches_reset()
    inputs = catalog_routing_inputs(label=label)
    tracemalloc.start()
    catalog_routing_report(inputs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    body = json.dumps(report).encode()
    cache.set("bench-catalog-routing", report, 60)
    started = time.perf_counter()
    cache.get("bench-catalog-routing")
    stored_ms = (time.perf_counter() - started) * 1000
    return {
        "inputs_ms": inputs_ms,
        "report_ms": report_ms,
        "per_case_ms": report_ms / max(report["cases"], 1),
        "peak_mb": peak / 2**20,
        "json_kb": len(body) / 1024,
        "stored_ms": stored_ms,
        "cases": report["cases"],
        "recall_at_1": report["recall_at_1"] or 0.0,
        "recall_at_5": report["recall_at_5"] or 0.0,
        "overlaps": len(report["overlaps"]),
        "confusions": len(report["confusions"]),
    }


def catalog_eval_overhead(grade_sample: int) -> dict[str, float]:
    """ms per case of a catalog eval run's own work (see the module's docstring), on the catalog served now."""
    from django.conf import settings
    from django.utils import timezone

    from agents.evals.catalog_runner import catalog_eval_case_grade
    from agents.models import AgentTurn, TraceEvent, TurnOrigin, TurnStatus
    from registry.models import CatalogEvalCaseResult, CatalogEvalRun
    from registry.services import catalog_evals

    CatalogEvalRun.objects.all().delete()
    AgentTurn.objects.filter(origin=TurnOrigin.EVAL, message__startswith="bench ").delete()
    settings.EVAL_MAX_QUEUED_TURNS = 10**7  # the bench's catalogs are larger than the default quota
    started = time.perf_counter()
    run = catalog_evals.catalog_eval_run_create(label=None, model="offline", repeat=1)
    queue_ms = (time.perf_counter() - started) * 1000
    results = list(CatalogEvalCaseResult.objects.filter(run=run).order_by("position"))
    now = timezone.now()
    turns = AgentTurn.objects.bulk_create(
        (
            AgentTurn(message=f"bench {r.query}", model="offline", origin=TurnOrigin.EVAL, status=TurnStatus.SUCCEEDED)
            for r in results
        ),
        batch_size=2000,
    )
    TraceEvent.objects.bulk_create(
        (
            TraceEvent(turn=turn, seq=1, type="skill_activated", at=now, data={"skill": r.skill, "trigger": "model"})
            for turn, r in zip(turns, results, strict=True)
        ),
        batch_size=2000,
    )
    started = time.perf_counter()
    for turn, result in zip(turns, results, strict=True):
        catalog_evals.catalog_eval_result_dispatch(result_id=result.pk, turn_id=turn.pk)
    dispatch_ms = (time.perf_counter() - started) * 1000
    sample = min(grade_sample, len(results))
    started = time.perf_counter()
    for turn, result in list(zip(turns, results, strict=True))[:sample]:
        catalog_evals.catalog_eval_result_grade(result_id=result.pk, **catalog_eval_case_grade(turn=turn))
    grade_ms = (time.perf_counter() - started) * 1000
    for result in results[sample:]:
        result.loaded, result.graded_at = [result.skill], now
    CatalogEvalCaseResult.objects.bulk_update(results[sample:], ["loaded", "graded_at"], batch_size=2000)
    started = time.perf_counter()
    catalog_evals.catalog_eval_run_finish(run_id=run.pk)
    finish_ms = (time.perf_counter() - started) * 1000
    cases = max(len(results), 1)
    per_case = {
        "queue": queue_ms / cases,
        "dispatch": dispatch_ms / cases,
        "grade": grade_ms / max(sample, 1),
        "finish": finish_ms / cases,
    }
    AgentTurn.objects.filter(pk__in=[turn.pk for turn in turns]).delete()
    return per_case | {"total": sum(per_case.values()), "cases": len(results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000", help="catalog sizes, comma-separated")
    parser.add_argument("--cases", type=int, default=3, help="trigger cases per skill")
    parser.add_argument("--grade-sample", type=int, default=2000, help="catalog eval cases graded under the clock")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    prepare_environment("catalog-routing")
    setup_django()

    from django.db import connection

    print(f"database: {connection.vendor}; {args.cases} trigger cases per skill")
    header = ("skills", "inputs ms", "report s", "ms/case", "peak MB", "JSON KB", "stored ms", "r@1", "r@5", "overlaps")
    print("  " + "".join(f"{title:>11}" for title in header))
    overheads = []
    for size in sizes:
        rng = random.Random(size)
        seed(size, args.cases, rng)
        f = measure(label=None)
        cells = (
            f"{size:,}",
            f"{f['inputs_ms']:.0f}",
            f"{f['report_ms'] / 1000:.2f}",
            f"{f['per_case_ms']:.2f}",
            f"{f['peak_mb']:.1f}",
            f"{f['json_kb']:.0f}",
            f"{f['stored_ms']:.1f}",
            f"{f['recall_at_1']:.2f}",
            f"{f['recall_at_5']:.2f}",
            f"{f['overlaps']:,}",
        )
        print("  " + "".join(f"{cell:>11}" for cell in cells))
        overheads.append((size, catalog_eval_overhead(args.grade_sample)))
    print("\ncatalog eval: ms per case beyond its turn (the turns themselves are not counted)")
    header = ("skills", "cases", "queue", "dispatch", "grade", "finish", "total")
    print("  " + "".join(f"{title:>11}" for title in header))
    for size, o in overheads:
        cells = (
            f"{size:,}",
            f"{o['cases']:,}",
            *(f"{o[k]:.3f}" for k in ("queue", "dispatch", "grade", "finish", "total")),
        )
        print("  " + "".join(f"{cell:>11}" for cell in cells))


if __name__ == "__main__":
    main()
