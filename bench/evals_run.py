"""An eval run of 50 cases x 3 repeats on real Celery workers, with `scripted` and with `offline`.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/evals_run.py [--cases 50] [--repeat 3]
        [--concurrency 2]

Publishes a skill with a 50-case suite (half trigger cases, half positive; half task cases with
five checks each), starts one Celery worker with a prefork pool of `--concurrency` processes, and
runs the suite through `agents.evals.runner.eval_run_queue` as the API does, waiting until the run has
ended. Then the same 150 turns, queued at once as plain turns (no run, no grading, no
EVAL_CONCURRENCY bound), for what the turns themselves cost. Prints for each model: the run's wall
time, turns per second, wall time per turn, the overhead per turn against the plain turns, and
from a turn's end to its case's grade (p50 / p99). Give it a database and a Redis db of its own.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile  # noqa: E402
from bench._turns import WorkerProcess, bench_arguments, bench_env, prepare_database  # noqa: E402

SKILL = "bench-eval"
DESCRIPTION = "Checks invoices for VAT errors, duplicate payments and missing purchase orders."
READ = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": SKILL}}]}]


def suite(cases: int) -> list[dict]:
    built: list[dict] = []
    for index in range(cases):
        if index % 2 == 0:
            positive = index % 4 == 0
            query = f"check invoice {index} for VAT errors" if positive else f"write a poem number {index}"
            case = {"id": f"t{index}", "kind": "trigger", "query": query, "should_trigger": positive}
            built.append(case | ({"script": READ} if positive else {}))
        else:
            answer = f"Invoice {index}: the VAT is wrong on line 2; no duplicate payments."
            built.append(
                {
                    "id": f"k{index}",
                    "kind": "task",
                    "prompt": f"Check invoice {index} for VAT errors and duplicate payments",
                    "expect": [
                        {"skill_loaded": SKILL},
                        {"tool_called": {"name": "read_skill", "arguments": {"skill_name": SKILL}}},
                        {"answer_matches": "(?i)vat"},
                        {"answer_not_matches": "(?i)looks fine"},
                        {"max_steps": 3},
                    ],
                    "script": [*READ, {"content": answer}],
                }
            )
    return built


def wait_for_run(run_id) -> object:
    from registry.models import EvalRun

    while True:
        run = EvalRun.objects.get(pk=run_id)
        if run.is_finished:
            return run
        time.sleep(0.05)


def plain_turns(cases: list[dict], *, model: str, repeat: int) -> float:
    """The same turns queued at once as ordinary turns: seconds until the last has ended."""
    from django.contrib.auth import get_user_model

    from agents.models import FINISHED_STATUSES, AgentTurn
    from agents.turns.services import agent_turns_create

    user = get_user_model().objects.get(username="turn-bench")
    runs = []
    for _ in range(repeat):
        for case in cases:
            run = {"message": case.get("query") or case["prompt"], "model": model, "skill_versions": {SKILL: 1}}
            if model == "scripted":
                run["script"] = case.get("script") or [{"content": "no script"}]
            runs.append(run)
    started = time.perf_counter()
    ids = [turn.pk for turn in agent_turns_create(user=user, runs=runs)]
    while AgentTurn.objects.filter(pk__in=ids).exclude(status__in=FINISHED_STATUSES).exists():
        time.sleep(0.05)
    return time.perf_counter() - started


def measure(*, model: str, cases: list[dict], repeat: int) -> dict[str, float]:
    from django.contrib.auth import get_user_model

    from agents.evals.runner import eval_run_queue
    from agents.models import AgentTurn
    from registry.models import EvalCaseResult
    from registry.services.audit import Actor

    actor = Actor(user=get_user_model().objects.get(username="turn-bench"), via="bench")
    started = time.perf_counter()
    run = wait_for_run(eval_run_queue(skill_name=SKILL, model=model, repeat=repeat, actor=actor).pk)
    wall = time.perf_counter() - started
    if run.status != "succeeded":
        raise SystemExit(f"the {model} run ended {run.status}: {run.error}")
    results = list(EvalCaseResult.objects.filter(run=run))
    finished = dict(AgentTurn.objects.filter(pk__in=[r.turn_id for r in results]).values_list("pk", "finished_at"))
    grading = [(r.graded_at - finished[r.turn_id]).total_seconds() * 1000 for r in results]
    plain = plain_turns(cases, model=model, repeat=repeat)
    turns = len(results)
    return {
        "turns": turns,
        "wall": wall,
        "per_second": turns / wall,
        "per_turn_ms": wall / turns * 1000,
        "plain": plain,
        "overhead_ms": (wall - plain) / turns * 1000,
        "grade_p50": percentile(grading, 50),
        "grade_p99": percentile(grading, 99),
        "summary": run.summary,
    }


def main() -> None:
    parser = bench_arguments(__doc__)
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="the worker's pool processes")
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        print("skipped: set DATABASE_URL and REDIS_URL (a database and Redis db of its own) to run real workers")
        return
    env = bench_env("evals")
    env["EVAL_CONCURRENCY"] = os.environ.get("EVAL_CONCURRENCY", "4")
    prepare_database(env)
    from registry.selectors.skills import skill_get
    from registry.services.evals import eval_suite_replace
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    skill_md = f"---\nname: {SKILL}\ndescription: {DESCRIPTION}\n---\n\n# Invoices\n\n1. Read it.\n2. Check VAT.\n"
    skill_version_publish(bundle=bundle_from_parts(skill_md.encode(), ()), source="user")
    cases = suite(args.cases)
    eval_suite_replace(skill=skill_get(name=SKILL), document={"cases": cases})
    worker = WorkerProcess(env=env, concurrency=args.concurrency)
    worker.wait_ready()
    try:
        print(
            f"{args.cases} cases x {args.repeat} repeats, one worker with {args.concurrency} pool processes, "
            f"EVAL_CONCURRENCY={env['EVAL_CONCURRENCY']}, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for model in ("scripted", "offline"):
            row = measure(model=model, cases=cases, repeat=args.repeat)
            summary = row["summary"]
            print(
                f"  {model:>8}: {row['turns']} turns in {row['wall']:.1f} s ({row['per_second']:.1f} turns/s, "
                f"{row['per_turn_ms']:.0f} ms a turn); the same turns as plain turns {row['plain']:.1f} s, "
                f"overhead {row['overhead_ms']:+.0f} ms a turn; turn end -> graded p50 {row['grade_p50']:.0f} ms, "
                f"p99 {row['grade_p99']:.0f} ms; trigger f1 {summary['trigger']['f1']}, task rate "
                f"{summary['task']['rate']}  (load average {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
