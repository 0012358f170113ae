"""Tool-call error recovery (seed 001): a structured, actionable tool result instead of "Error: ...".

The message says what went wrong, lists the parameters with types and descriptions, shows a
correct call (from the best `tool_call_error` skill for the tool, else built from the schema) and
asks the model to retry. Retries are bounded per tool and turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agents.runtime.tools import Tool
from agents.runtime.types import SkillDocument, SkillStore

MAX_TOOL_FAILURES = 3  # per tool and turn; the last failure is final for that tool
FENCED_JSON = re.compile(r"```json[^\n]*\n(.*?)```", re.DOTALL)
PLACEHOLDERS = {"string": "...", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}


@dataclass(frozen=True)
class Guidance:
    skill: SkillDocument | None  # the tool_call_error skill the example came from
    example: str


def find_guidance(store: SkillStore, tool: Tool | None, tool_name: str, error: str) -> Guidance | None:
    """The example for `tool_name` from the most relevant tool_call_error skill that has one,
    else an example built from the tool's schema (None for an unknown tool)."""
    for summary in store.find_skills("tool_call_error", {"toolName": tool_name, "error": error}):
        document = store.load(summary.name)
        example = example_for_tool(document.body, tool_name) if document else None
        if document and example:
            return Guidance(document, example)
    return Guidance(None, schema_example(tool)) if tool else None


def example_for_tool(body: str, tool_name: str) -> str | None:
    """The first fenced json block under a `### <tool_name>` heading (seed 001: per-tool sections)."""
    heading = re.compile(rf"^###\s+`?{re.escape(tool_name)}`?\s*$", re.MULTILINE)
    found = heading.search(body)
    if not found:
        return None
    next_heading = re.compile(r"^#{1,3}\s", re.MULTILINE).search(body, found.end())
    section = body[found.end() : next_heading.start() if next_heading else len(body)]
    block = FENCED_JSON.search(section)
    return block.group(1).strip() if block else None


def schema_example(tool: Tool) -> str:
    properties = tool.parameters.get("properties", {})
    arguments = {name: _placeholder(properties.get(name, {})) for name in tool.parameters.get("required", [])}
    return json.dumps({"tool_name": tool.name, "arguments": arguments}, indent=2)


def _placeholder(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    return PLACEHOLDERS.get(schema.get("type", "string"), "...")


def parameter_lines(tool: Tool) -> list[str]:
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    lines = []
    for name, schema in properties.items():
        kind = schema.get("type", "any")
        optional = "" if name in required else ", optional"
        description = f": {schema['description']}" if schema.get("description") else ""
        lines.append(f"- {name} ({kind}{optional}){description}")
    return lines


def recovery_message(
    *,
    tool_name: str,
    tool: Tool | None,
    problem: str,
    guidance: Guidance | None,
    missing: list[str],
    available: list[str],
    failures: int,
) -> str:
    parts = [f"Tool call to {tool_name} failed: {problem}"]
    if tool is None:
        parts.append(f"Call one of the available tools instead: {', '.join(available)}.")
        return "\n\n".join(parts)
    lines = parameter_lines(tool)
    parts.append(f"Parameters for {tool_name}:\n" + ("\n".join(lines) if lines else "(none)"))
    if guidance:
        source = f" (from skill {guidance.skill.name})" if guidance.skill else ""
        parts.append(f"Example of a correct tool call{source}:\n```json\n{guidance.example}\n```")
    if failures >= MAX_TOOL_FAILURES:
        parts.append(
            f"{tool_name} has now failed {failures} times in this request and will not be run again. "
            "Continue without it, or explain the problem to the user."
        )
    else:
        what = " and ".join(f"the '{name}' parameter" for name in missing) if missing else "corrected arguments"
        parts.append(f"Please call {tool_name} again with {what} ({MAX_TOOL_FAILURES - failures} attempts left).")
    return "\n\n".join(parts)


def describe_problem(*, missing: list[str], errors: list[str]) -> str:
    reported = {f"'{name}' is a required property" for name in missing}
    others = [error for error in errors if error not in reported]
    if not missing:
        return "its arguments are invalid: " + "; ".join(others) + "."
    names = ", ".join(f"'{name}'" for name in missing)
    plural = len(missing) > 1
    problem = f"the required parameter{'s' if plural else ''} {names} {'are' if plural else 'is'} missing."
    return f"{problem} Also: {'; '.join(others)}." if others else problem
