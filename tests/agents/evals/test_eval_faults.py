"""An eval run whose worker is killed mid-turn (SIGKILL): the turn is resumed by another worker,
the run ends, and nothing is dispatched or counted twice."""

from __future__ import annotations

import pytest

from agents.models import AgentTurn, TurnOrigin
from registry.models import EvalCaseResult
from tests.agents.evals.test_evals_integration import put_suite, run_ended, start_run
from tests.agents.turns.test_turn_faults import fault  # noqa: F401 - the fixture: workers with short leases
from tests.factories import publish
from tests.worker import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SLOW_SCRIPT = [
    {
        "content": None,
        "tool_calls": [
            {"name": "read_skill", "arguments": {"skill_name": "slow-skill"}},
            {"name": "ledger", "arguments": {"label": "one"}},
        ],
    },
    {
        "content": None,
        "tool_calls": [
            {"name": "ledger", "arguments": {"label": "two"}},
            {"name": "run_skill", "arguments": {"skill_name": "slow-skill", "script": "slow.py"}},
        ],
    },
    {"content": "finished", "tool_calls": []},
]


def test_a_run_whose_worker_is_killed_mid_turn_ends_with_each_case_counted_once(api, fault):  # noqa: F811
    publish(
        "slow-skill",
        description="Runs a slow script.",
        tools=["run_skill"],
        files=[("scripts/slow.py", b"import time\ntime.sleep(5)\nprint('slept')\n", True)],
    )
    expect = [{"skill_loaded": "slow-skill"}, {"tool_called": {"name": "run_skill"}}, {"answer_matches": "^finished$"}]
    put_suite(
        api,
        "slow-skill",
        [
            {"id": "slow", "kind": "task", "prompt": "run the slow thing", "expect": expect, "script": SLOW_SCRIPT},
            {"id": "quick", "kind": "trigger", "query": "anything else", "should_trigger": False},
        ],
    )
    doomed = fault.worker(concurrency=2)
    run_id = start_run(api, "slow-skill", model="scripted")
    wait_for(lambda: fault.ledger.read_text().split() == ["one", "two"], message="the slow case to be mid-script")
    wait_for(lambda: next(fault.scratch.glob("*/skill-run-*"), None), message="run_skill to start")

    doomed.kill_main()
    rescuer = fault.worker()
    body = run_ended(api, run_id, rescuer)

    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 2, "total": 2}
    assert body["summary"]["task"]["passed"] == 1 and body["summary"]["trigger"]["tn"] == 1
    assert fault.ledger.read_text().split() == ["one", "two"], "the killed turn was run again, not resumed"
    slow = EvalCaseResult.objects.get(run_id=run_id, case_id="slow")
    turn = AgentTurn.objects.get(pk=slow.turn_id)
    assert turn.takeovers == 1 and turn.status == "succeeded"
    assert AgentTurn.objects.filter(origin=TurnOrigin.EVAL).count() == 2  # one turn a case: none sent twice
