"""A tool for the fault tests, loaded by their workers through AGENT_EXTRA_TOOLS: it takes a
while, then appends its label to the file named by $FAULT_LEDGER. One line per completed run,
so the test can tell whether a completed call ran again after the turn was taken over."""

from __future__ import annotations

import os
import time
from typing import Any

from agents.runtime.tools import Tool, ToolContext, ToolResult


def _ledger(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    time.sleep(arguments.get("seconds", 0))
    with open(os.environ["FAULT_LEDGER"], "a", encoding="utf-8") as ledger:
        ledger.write(arguments["label"] + "\n")
    return ToolResult(ok=True, content=f"recorded {arguments['label']}")


ledger_tool = Tool(
    "ledger",
    "Record a label (slowly).",
    {
        "type": "object",
        "properties": {"label": {"type": "string"}, "seconds": {"type": "number", "minimum": 0, "maximum": 60}},
        "required": ["label"],
    },
    _ledger,
)
