"""Workers killed mid-turn with SIGKILL: real Celery processes, the suite's broker (Redis in CI,
the filesystem transport of `make run` otherwise) and database. The turn must end exactly once:
no completed tool call run again, no trace event or usage event stored twice, no scratch folder
left behind.

The broker's own redelivery (Redis visibility_timeout, 3600 s here as in production) is far
longer than these tests: a turn that ends does so because the reaper requeued it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.models import AgentTurn, TraceEvent, TurnCheckpoint, TurnStatus
from registry.models import UsageEvent
from tests.agents.turns.test_turns_integration import events, finished, submit
from tests.factories import publish
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Short enough that a dead worker's turn is taken over within seconds, long enough that a live
# worker on a loaded machine renews it in time (every LEASE_SECONDS / 3): at 3 s, a worker stalled
# for 2 s behind other processes lost its own live turn to the reaper and the test waited in vain.
LEASE_SECONDS = 10
REAPER_SECONDS = 0.5
# For the worker a test kills: its reaper runs once, at its start. The turn must still be the
# first attempt's when the kill comes, and on a loaded machine a worker stalled for longer than
# the lease would otherwise have its own reaper take its live turn over (an attempt that lost its
# turn can have run a tool call whose checkpoint it could no longer store).
NO_REAPER = {"AGENT_TURN_REAPER_SECONDS": "3600"}


@pytest.fixture
def fault(tmp_path):
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    # Not under tmp_path: pytest makes that 0700, and the sandbox's unprivileged user must be
    # able to reach the run folder inside.
    scratch = Path(tempfile.mkdtemp(prefix="turn-scratch-"))
    scratch.chmod(0o755)
    env = {
        "AGENT_TURN_LEASE_SECONDS": str(LEASE_SECONDS),
        "AGENT_TURN_REAPER_SECONDS": str(REAPER_SECONDS),
        "AGENT_EXTRA_TOOLS": "tests.agents.turns.ledger.ledger_tool",
        "FAULT_LEDGER": str(ledger),
        "AGENT_SCRATCH_ROOT": str(scratch),
        "CELERY_VISIBILITY_TIMEOUT": "3600",
    }
    workers: list[WorkerProcess] = []

    def worker(concurrency: int = 1, **extra: str) -> WorkerProcess:
        started = WorkerProcess(concurrency=concurrency, extra_env={**env, **extra}).start()
        workers.append(started)
        return started

    yield SimpleNamespace(worker=worker, ledger=ledger, scratch=scratch)
    for started in workers:
        started.kill()
    shutil.rmtree(scratch, ignore_errors=True)


def start_slow_turn(api) -> str:
    """Step 1 reads the skill and records "one"; step 2 records "two", then runs a 5 s script."""
    publish(
        "slow-skill",
        description="Runs a slow script.",
        tools=["run_skill"],
        files=[("scripts/slow.py", b"import time\ntime.sleep(5)\nprint('slept')\n", True)],
    )
    run_slow = {"name": "run_skill", "arguments": {"skill_name": "slow-skill", "script": "slow.py"}}
    script = [
        {
            "content": None,
            "tool_calls": [
                {"name": "read_skill", "arguments": {"skill_name": "slow-skill"}},
                {"name": "ledger", "arguments": {"label": "one"}},
            ],
        },
        {"content": None, "tool_calls": [{"name": "ledger", "arguments": {"label": "two"}}, run_slow]},
        {"content": "finished", "tool_calls": []},
    ]
    return submit(api, message="run the slow thing", model="scripted", script=script)


def wait_until_the_script_runs(turn_id: str, scratch: Path, worker: WorkerProcess) -> Path:
    """Mid-turn: "two" is checkpointed and run_skill's folder exists in the attempt's scratch."""
    try:
        wait_for(
            lambda: TraceEvent.objects.filter(turn_id=turn_id, type="tool_call", data__arguments__label="two").exists(),
            message="the second ledger call to be stored",
        )
        return wait_for(lambda: next(scratch.glob("*/skill-run-*"), None), message="run_skill to start")
    except AssertionError as error:
        turn = AgentTurn.objects.get(pk=turn_id)
        raise AssertionError(f"{error}; turn {turn.status}: {turn.error}\n{worker.output()[-6000:]}") from None


def assert_ended_exactly_once(body: dict, fault) -> None:
    turn_id = body["id"]
    assert fault.ledger.read_text().split() == ["one", "two"], "a completed tool call ran again"
    seqs = [event["seq"] for event in body["trace"]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [call["step"] for call in events(body, "llm_call")] == [1, 2, 3], "a model call was stored twice"
    calls = [(c["step"], c["tool"], str(c["arguments"])) for c in events(body, "tool_call")]
    assert len(calls) == 4 and len(set(calls)) == 4, calls
    assert Counter(e["type"] for e in body["trace"])["skill_activated"] == 1
    usage = Counter(UsageEvent.objects.filter(turn_id=turn_id).values_list("kind", "skill_name"))
    assert usage == {
        ("offered", ""): 1,  # one compact row for every skill the prompt listed
        ("loaded", "slow-skill"): 1,
        ("executed", "slow-skill"): 1,
        ("succeeded", "slow-skill"): 1,
    }, usage
    offered = UsageEvent.objects.get(turn_id=turn_id, kind="offered")
    assert [name for name, _version, _source in offered.offered_skills] == ["slow-skill"]
    assert not TurnCheckpoint.objects.filter(turn_id=turn_id).exists()
    wait_for(lambda: not any(fault.scratch.iterdir()), message="the scratch folders to be removed")


def test_a_killed_main_process_s_turn_is_requeued_and_resumed_by_a_new_worker(api, fault):
    doomed = fault.worker(concurrency=2, **NO_REAPER)  # prefork, as `make run` starts it
    turn_id = start_slow_turn(api)
    wait_until_the_script_runs(turn_id, fault.scratch, doomed)

    doomed.kill_main()
    assert AgentTurn.objects.get(pk=turn_id).status == TurnStatus.RUNNING
    rescuer = fault.worker()
    body = finished(api, turn_id, rescuer)

    assert body["status"] == "succeeded", body["error"]
    assert body["answer"] == "finished"
    turn = AgentTurn.objects.get(pk=turn_id)
    assert (turn.attempts, turn.takeovers) == (2, 1)
    assert [e["type"] for e in body["trace"]].count("turn_requeued") == 1
    resumed = events(body, "resumed")
    assert resumed and resumed[0]["replayed_tool_calls"] == 3  # read_skill, one, two
    assert_ended_exactly_once(body, fault)


def test_a_killed_pool_process_s_turn_is_resumed_by_the_same_worker(api, fault):
    worker = fault.worker(concurrency=2)
    turn_id = start_slow_turn(api)
    run_folder = wait_until_the_script_runs(turn_id, fault.scratch, worker)
    pool_pid = int(run_folder.parent.name.partition("-")[0])
    assert pool_pid in worker.pool_pids() and pool_pid != worker.main_pid

    os.kill(pool_pid, signal.SIGKILL)
    body = finished(api, turn_id, worker)

    assert body["status"] == "succeeded", body["error"] + worker.output()[-6000:]
    assert worker.process.poll() is None, "the main process lives on"
    assert AgentTurn.objects.get(pk=turn_id).attempts == 2, worker.output()[-8000:]
    assert_ended_exactly_once(body, fault)


def test_a_turn_whose_worker_never_comes_back_is_ended_by_another_workers_reaper(api, fault):
    doomed = fault.worker(**NO_REAPER)
    turn_id = start_slow_turn(api)
    wait_until_the_script_runs(turn_id, fault.scratch, doomed)
    doomed.kill()

    # A worker that may not take turns over: its reaper must fail the turn, readably.
    bystander = fault.worker(AGENT_TURN_MAX_TAKEOVERS="0")
    body = finished(api, turn_id, bystander)

    assert body["status"] == "failed"
    assert "worker running this turn stopped responding" in body["error"]
    assert [e["type"] for e in body["trace"]].count("turn_failed") == 1
    assert fault.ledger.read_text().split() == ["one", "two"]
    wait_for(lambda: not any(fault.scratch.iterdir()), message="the dead worker's scratch to be removed")
