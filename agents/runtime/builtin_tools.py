"""Built-in tools: the essentials every turn keeps (seed 000), real offline tools, the default set.

File tools are confined to the turn's workspace: paths are resolved (symlinks included) and must
stay inside it. Every output is bounded, and search patterns are compiled with RE2 (linear time)
because they come from the model (SPEC §10).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import re2

from agents.runtime.sandbox import DEFAULT_LIMITS, Isolation, SandboxLimits
from agents.runtime.skill_tools import skill_tools
from agents.runtime.tools import Tool, ToolContext, ToolFailure, ToolRegistry, ToolResult

ESSENTIAL_TOOLS = frozenset({"abort", "todowrite", "todoread"})

MAX_READ_BYTES = 100_000
MAX_WRITE_CHARS = 1_000_000
MAX_LIST_ENTRIES = 500
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_FILES = 2_000
MAX_SEARCH_FILE_BYTES = 1_000_000
MAX_MATCH_LINE_CHARS = 300
MAX_EXPRESSION_CHARS = 500
MAX_INTEGER_BITS = 10_000  # ~3,000 decimal digits: big enough for real sums, too small to hang


def _object_schema(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# --- essentials (seed 000, fix 1: always kept when a skill is forced) -------------------------


def _abort(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    reason = arguments["reason"].strip() or "no reason given"
    return ToolResult(ok=True, content=f"Turn aborted: {reason}", abort_reason=reason)


def _todowrite(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    context.todos[:] = arguments["todos"]
    open_count = sum(1 for todo in context.todos if todo["status"] != "completed")
    return ToolResult(ok=True, content=f"Saved {len(context.todos)} todos ({open_count} open).")


def _todoread(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult(ok=True, content=json.dumps(context.todos, ensure_ascii=False) if context.todos else "[]")


TODO_SCHEMA = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "description": "What to do.", "minLength": 1, "maxLength": 500},
        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
    },
    "required": ["content", "status"],
    "additionalProperties": False,
}

ESSENTIALS = (
    Tool(
        "abort",
        "Stop this turn because it cannot be completed; the reason is shown to the user.",
        _object_schema({"reason": {"type": "string", "description": "Why the task cannot be done."}}, ["reason"]),
        _abort,
    ),
    Tool(
        "todowrite",
        "Replace your todo list for this task (use it to track multi-step work).",
        _object_schema(
            {"todos": {"type": "array", "items": TODO_SCHEMA, "maxItems": 100, "description": "The full list."}},
            ["todos"],
        ),
        _todowrite,
    ),
    Tool("todoread", "Read your current todo list.", _object_schema({}), _todoread),
)


# --- workspace files ------------------------------------------------------------------------


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """The real path of `path` inside the workspace, or ToolFailure if it would leave it."""
    root = workspace.resolve()
    if not root.is_dir():
        raise ToolFailure(f"the workspace {workspace} does not exist")
    if "\x00" in path:
        raise ToolFailure("the path contains a NUL byte")
    # resolve() follows symlinks, so a link pointing outside is caught by the check below.
    candidate = (root / path).resolve()
    if not candidate.is_relative_to(root):
        raise ToolFailure(f"{path!r} is outside the workspace; use a path relative to the workspace root")
    return candidate


def _relative(workspace: Path, path: Path) -> str:
    return path.relative_to(workspace.resolve()).as_posix() or "."


def _file_read(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    target = resolve_in_workspace(context.workspace, arguments["path"])
    if not target.is_file():
        raise ToolFailure(f"no file at {arguments['path']!r}")
    with target.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    if b"\x00" in data:
        return ToolResult(ok=True, content=f"{arguments['path']} is a binary file ({target.stat().st_size} bytes).")
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[... file truncated: showing the first {MAX_READ_BYTES} of {target.stat().st_size} bytes ...]"
    return ToolResult(ok=True, content=text)


def _file_write(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    target = resolve_in_workspace(context.workspace, arguments["path"])
    if target.is_dir():
        raise ToolFailure(f"{arguments['path']!r} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(arguments["content"], encoding="utf-8")
    return ToolResult(
        ok=True, content=f"Wrote {len(arguments['content'])} characters to {_relative(context.workspace, target)}."
    )


def _file_list(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    target = resolve_in_workspace(context.workspace, arguments["path"])
    if not target.is_dir():
        raise ToolFailure(f"no directory at {arguments['path']!r}")
    entries = sorted(target.iterdir(), key=lambda entry: entry.name)
    lines = [entry.name + ("/" if entry.is_dir() else "") for entry in entries[:MAX_LIST_ENTRIES]]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"[... {len(entries) - MAX_LIST_ENTRIES} more entries not shown ...]")
    return ToolResult(ok=True, content="\n".join(lines) if lines else "(empty directory)")


def _compile_pattern(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 * 1024 * 1024
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        raise ToolFailure(
            f"invalid pattern {pattern!r} (RE2 syntax, no backreferences or lookaround): {error}"
        ) from error


def _searchable_files(start: Path) -> Iterable[Path]:
    if start.is_file():
        yield start
        return
    # followlinks=False, and linked files are skipped: a link could point outside the workspace.
    # is_file() also skips FIFOs and devices, which would block or never end.
    for directory, subdirectories, names in os.walk(start, followlinks=False):
        subdirectories.sort()
        for name in sorted(names):
            path = Path(directory, name)
            if not path.is_symlink() and path.is_file() and path.stat().st_size <= MAX_SEARCH_FILE_BYTES:
                yield path


def _file_search(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    pattern = _compile_pattern(arguments["pattern"])
    start = resolve_in_workspace(context.workspace, arguments.get("path", "."))
    matches: list[str] = []
    for count, path in enumerate(_searchable_files(start)):
        if count >= MAX_SEARCH_FILES or len(matches) >= MAX_SEARCH_MATCHES:
            matches.append("[... search stopped at its limit; narrow the path or pattern ...]")
            break
        data = path.read_bytes()
        if b"\x00" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if pattern.search(line):
                matches.append(f"{_relative(context.workspace, path)}:{number}: {line.strip()[:MAX_MATCH_LINE_CHARS]}")
                if len(matches) >= MAX_SEARCH_MATCHES:
                    break
    return ToolResult(ok=True, content="\n".join(matches) if matches else "No matches.")


PATH_PROPERTY = {"type": "string", "description": "A path relative to the workspace root, e.g. '.' or 'src/app.py'."}

FILE_TOOLS = (
    Tool(
        "file_read",
        f"Read a text file from the workspace (at most {MAX_READ_BYTES} bytes are returned).",
        _object_schema({"path": PATH_PROPERTY}, ["path"]),
        _file_read,
    ),
    Tool(
        "file_write",
        "Create or overwrite a text file in the workspace.",
        _object_schema(
            {
                "path": PATH_PROPERTY,
                "content": {"type": "string", "description": "The full file content.", "maxLength": MAX_WRITE_CHARS},
            },
            ["path", "content"],
        ),
        _file_write,
    ),
    Tool(
        "file_list",
        "List the entries of a workspace directory (directories end with '/').",
        _object_schema({"path": PATH_PROPERTY}, ["path"]),
        _file_list,
    ),
    Tool(
        "file_search",
        "Search text files under a workspace path for lines matching a regular expression (RE2 syntax).",
        _object_schema(
            {
                "pattern": {
                    "type": "string",
                    "description": "An RE2 regular expression, e.g. 'TODO|FIXME'.",
                    "minLength": 1,
                    "maxLength": 1000,
                },
                "path": PATH_PROPERTY,
            },
            ["pattern"],
        ),
        _file_search,
    ),
)


# --- calculator -----------------------------------------------------------------------------


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if max(base.bit_length(), 1) * exponent > MAX_INTEGER_BITS:
            raise ToolFailure("the result would be too large")
    return operator.pow(base, exponent)


BINARY_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
UNARY_OPERATORS: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
}
CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def evaluate(expression: str) -> int | float:
    """Evaluate arithmetic safely: numbers, + - * / // % **, a few math functions, nothing else."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolFailure(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
        return _check_size(_evaluate_node(tree.body))
    except ToolFailure:
        raise
    except SyntaxError as error:
        raise ToolFailure(f"not an arithmetic expression: {error.msg}") from error
    except (ArithmeticError, ValueError, TypeError, RecursionError) as error:
        raise ToolFailure(f"cannot evaluate: {error or type(error).__name__}") from error


def _evaluate_node(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        left, right = _evaluate_node(node.left), _evaluate_node(node.right)
        return _check_size(BINARY_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY_OPERATORS:
        return UNARY_OPERATORS[type(node.op)](_evaluate_node(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
    ):
        return _check_size(FUNCTIONS[node.func.id](*[_evaluate_node(arg) for arg in node.args]))
    raise ToolFailure(f"unsupported syntax: {ast.unparse(node)[:80]!r}")


def _check_size(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise ToolFailure("the result is too large")
    return value


def _calculator(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult(ok=True, content=str(evaluate(arguments["expression"])))


def _current_time(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    name = arguments.get("timezone") or "UTC"
    try:
        zone = UTC if name.upper() == "UTC" else ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ToolFailure(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'") from error
    now = datetime.now(zone)
    return ToolResult(ok=True, content=f"{now.isoformat(timespec='seconds')} ({name}, {now:%A})")


UTILITY_TOOLS = (
    Tool(
        "calculator",
        "Evaluate an arithmetic expression exactly, e.g. '2423 * 1312' or 'sqrt(2) / 3'.",
        _object_schema(
            {
                "expression": {
                    "type": "string",
                    "description": "Arithmetic with + - * / // % ** and math functions.",
                    "minLength": 1,
                }
            },
            ["expression"],
        ),
        _calculator,
    ),
    Tool(
        "current_time",
        "The current date and time, in UTC or an IANA time zone.",
        _object_schema({"timezone": {"type": "string", "description": "An IANA time zone such as 'Europe/Paris'."}}),
        _current_time,
    ),
)


def default_tool_registry(
    extra: Iterable[Tool] = (), *, isolation: Isolation = Isolation.BWRAP, limits: SandboxLimits = DEFAULT_LIMITS
) -> ToolRegistry:
    """Every built-in tool plus `extra`; skill scripts run with `isolation` (RUN_SKILL_SANDBOX)
    and `limits`."""
    skill = skill_tools(limits, isolation=isolation)
    return ToolRegistry([*ESSENTIALS, *skill, *FILE_TOOLS, *UTILITY_TOOLS, *extra])
