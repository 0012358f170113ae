"""Agent runtime overhead per ReAct step, with 1,000 skills in the registry and the scripted model.

    .venv/bin/python bench/runtime_step.py [--skills 1000] [--turns 30] [--steps 20] [--baseline /work/main]

Each turn runs a script of `--steps` tool-call steps (alternating `todoread` and `calculator`)
and a final answer through the real path: resolution_for_turn (resolve() with 1,000 skills: a
prompt block at its 18,000-char budget), RegistrySkillStore, the built-in tool registry,
run_turn, litellm with the `scripted` provider, and DatabaseTraceSink (per step, its checkpoints
and TraceEvent rows written with its tool call, from the writer thread while the next model call
runs, as in a worker; a cancel check at most once a second). A wrapper around `complete`
times each model call; the model's own time (litellm plus the scripted provider) is subtracted,
what remains is the runtime's overhead. Reported per step (the gap between one model call's end
and the next one's start: trace writes, the tool call, limits, context fitting) and per turn
(all overhead / steps). The same turns are run again with an in-memory trace sink to show the
share of database writes, and `llm.token_count` is wrapped to show what the context fitting's
token counting costs. The turn rows are created as running (no queue, no claim:
enqueue_latency.py measures those) and finished with agent_turn_finish, as the worker does.
Targets: <= 3 ms runtime overhead per step, setup + finish <= 20 ms per turn.

With `--baseline`, that checkout's copy of this script runs first, in the same run and against
the same database, so both sets of figures come from the same machine state.

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, percentile, prepare_environment, setup_django  # noqa: E402

TARGET_MS = 3.0
TARGET_SETUP_FINISH_MS = 20.0


class TimedComplete:
    """`complete` as run_turn calls it, recording when each model call started and ended."""

    def __init__(self) -> None:
        from agents.runtime import llm

        self._complete = llm.complete
        self.calls: list[tuple[float, float]] = []

    def __call__(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **options: Any):
        started = time.perf_counter()
        try:
            return self._complete(model, messages, tools, **options)
        finally:
            self.calls.append((started, time.perf_counter()))


class TimedTokenCount:
    """Wraps agents.runtime.llm.token_count (the loop looks it up at each call) to time the
    context fitting's token counting, the largest piece of the runtime's own work per step."""

    def __init__(self) -> None:
        from agents.runtime import llm

        self._count = llm.token_count
        self.seconds = 0.0
        llm.token_count = self

    def __call__(self, *args: Any, **kwargs: Any) -> int:
        started = time.perf_counter()
        try:
            return self._count(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


class MemoryTraceSink:
    """A TraceSink that keeps events in a list: the runtime's cost without database writes."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.events.append((type, data))

    def should_cancel(self) -> bool:
        return False


def publish_skills(count: int) -> None:
    from django.db import transaction

    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    rng = random.Random(11)
    with transaction.atomic():
        for i in range(count):
            topic = rng.sample(WORDS, 3)
            text = (
                f"---\nname: bench-step-{i:04d}\ndescription: Handles {' and '.join(topic)} tasks - "
                f"{rng.choice(WORDS)} helpers for {rng.choice(WORDS)} work. Use when asked about {topic[0]}.\n"
                f"tags: [{', '.join(topic)}]\ntriggers: [task_match]\n---\n\n# Skill {i}\n\n"
                + "".join(f"{n}. Do step {n} of the {topic[0]} work.\n" for n in range(1, 9))
            )
            skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")


def script_for(steps: int) -> list[dict[str, Any]]:
    calls = [{"name": "todoread", "arguments": {}}, {"name": "calculator", "arguments": {"expression": "2423 * 1312"}}]
    return [{"content": None, "tool_calls": [calls[n % 2]]} for n in range(steps)] + [
        {"content": "All steps are done; the product is 3178976."}
    ]


def run_one(*, message: str, steps: int, database_trace: bool, counter: TimedTokenCount) -> dict[str, Any]:
    """One turn through the Django adapter, as agents.turns.services.agent_turn_run does it, but with
    a timed `complete`. Returns the timings of the turn (perf_counter seconds)."""
    from django.conf import settings

    from agents.models import AgentTurn, TraceEvent, TurnStatus
    from agents.runtime.loop import run_turn
    from agents.runtime.types import TurnRequest
    from agents.turns.services import agent_turn_finish
    from agents.turns.store import RegistrySkillStore, resolution_for_turn
    from agents.turns.tools import tool_registry
    from agents.turns.trace import DatabaseTraceSink
    from bench.trace_size import stored_bytes

    script = script_for(steps)
    turn = AgentTurn.objects.create(message=message, model="scripted", script=script, status=TurnStatus.RUNNING)
    workspace = settings.AGENT_WORKSPACE_ROOT / str(turn.pk)
    workspace.mkdir(parents=True, exist_ok=True)
    request = TurnRequest(
        message=message,
        query=message,
        model="scripted",
        workspace=workspace,
        max_iterations=steps + 1,
        max_total_tokens=settings.AGENT_MAX_TOTAL_TOKENS * 10,  # 21 calls of a ~5k-token prompt
        max_seconds=settings.AGENT_MAX_SECONDS,
        llm_options={"script": script},
    )
    complete = TimedComplete()
    counted_before = counter.seconds
    sink: Any = DatabaseTraceSink(turn) if database_trace else MemoryTraceSink()
    cpu_started = time.process_time()
    started = time.perf_counter()
    resolution = resolution_for_turn(query=request.query, forced_skill=request.forced_skill)
    resolved = time.perf_counter()
    result = run_turn(
        request,
        store=RegistrySkillStore(),
        resolution=resolution,
        tools=tool_registry(),
        trace=sink,
        should_cancel=sink.should_cancel,
        complete=complete,
        checkpoint=sink.checkpoint if database_trace else None,
        settle=sink.settle if database_trace else lambda: None,
    )
    ran = time.perf_counter()
    cpu = time.process_time() - cpu_started
    agent_turn_finish(turn=turn, result=result, trace=sink if database_trace else None)
    finished = time.perf_counter()
    if result.status != "succeeded" or result.steps != steps + 1:
        raise SystemExit(
            f"the bench turn did not run as scripted: {result.status} after {result.steps} steps: {result.error}"
        )
    return {
        "resolved": resolved - started,
        "started": resolved,
        "ran": ran,
        "cpu": cpu,
        "finish": finished - ran,
        "calls": complete.calls,
        "steps": result.steps,
        "counting": counter.seconds - counted_before,
        "events": TraceEvent.objects.filter(turn=turn).count(),
        "trace_bytes": stored_bytes(turn.pk),
    }


def report(label: str, turns: list[dict[str, Any]]) -> tuple[float, float]:
    """Print the figures of one set of turns; returns the p50s of the per-step overhead and of
    setup + finish per turn (ms)."""
    gaps, models, per_turn, setup, tail, resolve_ms, finish_ms, counting, cpu = [], [], [], [], [], [], [], [], []
    for turn in turns:
        calls = turn["calls"]
        models += [(end - start) * 1000 for start, end in calls]
        # Between two model calls: trace of the call, the tool, its trace, limits and context fitting.
        gaps += [(calls[i][0] - calls[i - 1][1]) * 1000 for i in range(1, len(calls))]
        setup.append((calls[0][0] - turn["started"]) * 1000)
        tail.append((turn["ran"] - calls[-1][1]) * 1000)
        model_total = sum(end - start for start, end in calls)
        per_turn.append((turn["ran"] - turn["started"] - model_total) * 1000 / turn["steps"])
        counting.append(turn["counting"] * 1000 / turn["steps"])
        cpu.append(turn["cpu"] * 1000 / turn["steps"])
        resolve_ms.append(turn["resolved"] * 1000)
        finish_ms.append(turn["finish"] * 1000)

    def line(samples: list[float]) -> str:
        return (
            f"p50 {percentile(samples, 50):6.2f} ms, p95 {percentile(samples, 95):6.2f} ms, "
            f"mean {statistics.fmean(samples):6.2f} ms (n={len(samples)})"
        )

    print(f"  {label}:")
    print(f"    runtime overhead per tool step (between model calls): {line(gaps)}")
    print(f"    runtime overhead per step, whole turn (run_turn - model time) / steps: {line(per_turn)}")
    print(f"    of which token counting for context fitting (llm.token_count), per step: {line(counting)}")
    print(f"    model call (litellm + scripted provider, subtracted): {line(models)}")
    print(f"    CPU of the whole process per step (every thread; model calls and resolve included): {line(cpu)}")
    print(
        f"    per turn, once: setup before the first call {percentile(setup, 50):.2f} ms, after the last call "
        f"{percentile(tail, 50):.2f} ms, resolution_for_turn {percentile(resolve_ms, 50):.2f} ms, "
        f"agent_turn_finish {percentile(finish_ms, 50):.2f} ms (p50s)"
    )
    if turns[0]["events"]:
        events = statistics.median(turn["events"] for turn in turns)
        kilobytes = statistics.median(turn["trace_bytes"] for turn in turns) / 1000
        print(
            f"    trace stored per turn: {events:.0f} TraceEvent rows, {kilobytes:.0f} KB (their JSON and the "
            "prompt texts they reference: bench/trace_size.py)"
        )
    return percentile(gaps, 50), percentile([a + b for a, b in zip(setup, finish_ms, strict=True)], 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout whose copy of this script runs first")
    args = parser.parse_args()
    if args.baseline:
        script = args.baseline.resolve() / "bench" / "runtime_step.py"
        print(f"== baseline: {script}", flush=True)
        numbers = ["--skills", str(args.skills), "--turns", str(args.turns), "--steps", str(args.steps)]
        subprocess.run([sys.executable, str(script), *numbers], check=True)
        print("== this checkout", flush=True)
    var = prepare_environment("runtime-step")
    os.environ.setdefault("AGENT_ALLOW_SCRIPTED", "True")
    setup_django()
    from django.db import connection

    from agents.models import AgentTurn
    from agents.runtime.litellm_import import litellm_module
    from registry.selectors.resolve import registry_caches_reset

    started = time.perf_counter()
    publish_skills(args.skills)
    print(
        f"database: {connection.vendor}; {args.skills} skills published in {time.perf_counter() - started:.1f}s; "
        f"{args.turns} turns x {args.steps} tool steps + 1 answer, scripted model; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    litellm_module()  # its ~3 s import is paid once per worker, not per step

    registry_caches_reset()  # a fresh cache namespace: each turn's resolve() below is a miss
    counter = TimedTokenCount()
    rng = random.Random(3)
    # A new message per turn, so each turn's resolve() is a cache miss (matching + prompt block).
    messages = [
        f"Summarise the {' '.join(rng.sample(WORDS, 4))} numbers and multiply them {n}" for n in range(2 * args.turns)
    ]
    for database_trace in (True, False):  # warm up: imports, tokenizer, snapshot, connection
        run_one(message="warm up the runtime", steps=2, database_trace=database_trace, counter=counter)
    database = [
        run_one(message=m, steps=args.steps, database_trace=True, counter=counter) for m in messages[: args.turns]
    ]
    memory = [
        run_one(message=m, steps=args.steps, database_trace=False, counter=counter) for m in messages[args.turns :]
    ]
    p50_db, around_db = report("DatabaseTraceSink (one write per step, cancel check)", database)
    p50_memory, _ = report("in-memory trace sink (no database writes in the loop)", memory)
    print(f"  database share of the per-step overhead (p50): {max(p50_db - p50_memory, 0):.2f} ms of {p50_db:.2f} ms")
    verdict = "met" if p50_db <= TARGET_MS else "MISSED"
    print(
        f"  verdict: runtime overhead per step p50 {p50_db:.2f} ms with the database trace "
        f"(target <= {TARGET_MS:g} ms) - {verdict}"
    )
    verdict = "met" if around_db <= TARGET_SETUP_FINISH_MS else "MISSED"
    print(
        f"  verdict: setup before the first call + agent_turn_finish p50 {around_db:.2f} ms per turn "
        f"(target <= {TARGET_SETUP_FINISH_MS:g} ms; resolution_for_turn is resolve's, counted apart) - {verdict}"
    )
    AgentTurn.objects.filter(message__in=[*messages, "warm up the runtime"]).delete()
    shutil.rmtree(var, ignore_errors=True)  # the turns' workspaces (and the SQLite file, if any)


if __name__ == "__main__":
    main()
