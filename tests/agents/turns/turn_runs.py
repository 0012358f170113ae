"""Turns run for real, without a worker: queued through the service, claimed and run in the test's
own process with the scripted model, so their trace, usage events and cause are what a worker
would store."""

from __future__ import annotations

from agents.models import AgentTurn, TurnOrigin
from agents.turns import services

READ = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "sql-query"}}]}]
SUCCEEDS = READ + [{"content": "Here is the query."}]
ABORTS = READ + [{"content": None, "tool_calls": [{"name": "abort", "arguments": {"reason": "no database given"}}]}]
# Missing arguments: a tool error for read_skill, every step, until the iterations run out.
TOOL_FAILS = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {}}]}] * 3
LOOPS = READ + [{"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]}] * 3
EMPTY_ANSWER = READ + [{"content": None, "tool_calls": []}]


def run_turn(
    user, script: list[dict], *, message: str = "write a sql query", origin: str = TurnOrigin.API
) -> AgentTurn:
    turn = services.agent_turn_create(user=user, message=message, model="scripted", script=script, origin=origin)
    claimed = services.agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None
    services.agent_turn_run(claimed=claimed)
    turn.refresh_from_db()
    return turn
