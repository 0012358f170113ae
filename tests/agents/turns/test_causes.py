"""One cause a failed or cancelled turn, the first that applies (agents/turns/causes.py)."""

from __future__ import annotations

import pytest

from agents.turns.causes import Cause, failure_cause


@pytest.mark.parametrize(
    "status, error, tools, expected",
    [
        ("succeeded", "", [], Cause("")),
        ("cancelled", "the turn was cancelled", ["run_skill"], Cause("cancelled")),
        ("failed", "aborted: no database given", ["run_skill"], Cause("aborted", "no database given")),
        ("failed", "the model call failed: RateLimitError", ["run_skill"], Cause("model_error")),
        ("failed", "The model kept failing: timeout", [], Cause("model_error")),
        ("failed", "the model returned an empty answer", [], Cause("model_error")),
        # A turn stopped by a budget while a tool kept failing was stopped by the tool.
        ("failed", "stopped after 10 iterations without a final answer", ["read_skill", "run_skill", "run_skill"],
         Cause("tool_error", "run_skill")),
        ("failed", "stopped after 10 iterations without a final answer", [], Cause("budget_exceeded", "iterations")),
        ("failed", "stopped: the turn exceeded its time budget of 120 s (step 3, before model call)", [],
         Cause("budget_exceeded", "time")),
        ("failed", "stopped: the turn used 9000 tokens of its 8000 token budget (step 2)", [],
         Cause("budget_exceeded", "tokens")),
        ("failed", "The worker running this turn stopped responding 3 times", [], Cause("other")),
    ],
)  # fmt: skip
def test_the_first_cause_that_applies_is_the_turns(status, error, tools, expected):
    assert failure_cause(status=status, error=error, failed_tools=tools) == expected
