"""Why a turn did not succeed: one cause per failed or cancelled turn, read from its error and the
tools that failed in its trace. Plain data in and out; the services store the answer on the turn
so the turn list can count causes without reading traces.

The runtime's errors (agents/runtime/loop.py) and the task's (agents/tasks.py) begin with fixed
words; those are what is matched here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from agents.models import FailureCause, TurnStatus

_MODEL_ERRORS = ("the model call failed", "the model kept failing", "the model returned an empty answer")
_BUDGETS = (
    ("stopped: the turn exceeded its time budget", "time"),
    ("stopped: the turn used", "tokens"),
    ("stopped after", "iterations"),
)
DETAIL_MAX = 200


@dataclass(frozen=True)
class Cause:
    cause: str  # a FailureCause value, or "" for a turn that did not fail
    detail: str = ""


def failure_cause(*, status: str, error: str, failed_tools: Iterable[str] = ()) -> Cause:
    """The cause of a turn that ended `status` with `error`; `failed_tools` names the tool of each
    tool error, refusal or failed tool call in its trace.

    One cause a turn, the first that applies: cancelled; aborted (with its reason); a model
    error; tool errors (the tool that failed most often) when tools failed; a budget (time,
    tokens or iterations); otherwise other. Tool errors come before budgets because a turn that
    ran out of iterations while a tool kept failing was stopped by the tool."""
    if status == TurnStatus.CANCELLED:
        return Cause(FailureCause.CANCELLED)
    if status != TurnStatus.FAILED:
        return Cause("")
    text = (error or "").strip()
    lowered = text.lower()
    if lowered.startswith("aborted:"):
        return Cause(FailureCause.ABORTED, text[len("aborted:") :].strip()[:DETAIL_MAX])
    if lowered.startswith(_MODEL_ERRORS):
        return Cause(FailureCause.MODEL_ERROR)
    tools = Counter(tool for tool in failed_tools if tool)
    if tools:
        return Cause(FailureCause.TOOL_ERROR, tools.most_common(1)[0][0][:DETAIL_MAX])
    for prefix, budget in _BUDGETS:
        if lowered.startswith(prefix):
            return Cause(FailureCause.BUDGET_EXCEEDED, budget)
    return Cause(FailureCause.OTHER)
