"""Built-in tools: workspace confinement, bounded output, safe regex and a safe calculator."""

from __future__ import annotations

import os

import pytest

from agents.runtime.builtin_tools import MAX_SEARCH_MATCHES, default_tool_registry, evaluate
from agents.runtime.tools import Tool, ToolContext, ToolFailure, ToolResult, run_tool


@pytest.fixture
def context(store, workspace) -> ToolContext:
    return ToolContext(workspace=workspace, store=store)


def run(name, arguments, context) -> ToolResult:
    tool = default_tool_registry().get(name)
    assert tool.validation_errors(arguments) == [], "these tests exercise the tool, not the schema"
    return run_tool(tool, arguments, context)


def test_file_tools_work_inside_the_workspace(context, workspace):
    assert run("file_write", {"path": "src/app.py", "content": "print('hi')\n# TODO fix"}, context).ok
    assert (workspace / "src/app.py").read_text() == "print('hi')\n# TODO fix"
    assert run("file_read", {"path": "src/app.py"}, context).content == "print('hi')\n# TODO fix"
    assert run("file_list", {"path": "."}, context).content == "src/"
    assert run("file_search", {"pattern": "TODO|FIXME", "path": "."}, context).content == "src/app.py:2: # TODO fix"


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("file_read", {"path": "../outside.txt"}),
        ("file_read", {"path": "/etc/passwd"}),
        ("file_write", {"path": "../outside.txt", "content": "x"}),
        ("file_list", {"path": ".."}),
        ("file_search", {"pattern": "x", "path": "../"}),
    ],
)
def test_paths_that_leave_the_workspace_are_rejected(context, workspace, name, arguments):
    (workspace.parent / "outside.txt").write_text("secret")

    result = run(name, arguments, context)

    assert not result.ok
    assert "outside the workspace" in result.content
    assert (workspace.parent / "outside.txt").read_text() == "secret"


def test_symlinks_out_of_the_workspace_are_rejected(context, workspace):
    secret = workspace.parent / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, workspace / "link.txt")
    os.symlink(workspace.parent, workspace / "up")

    assert "outside the workspace" in run("file_read", {"path": "link.txt"}, context).content
    assert "outside the workspace" in run("file_write", {"path": "up/secret.txt", "content": "x"}, context).content
    assert run("file_search", {"pattern": "secret"}, context).content == "No matches."
    assert secret.read_text() == "top secret"


def test_file_search_rejects_patterns_re2_cannot_run_in_linear_time(context):
    result = run("file_search", {"pattern": r"(a+)+\1"}, context)

    assert not result.ok and "invalid pattern" in result.content


def test_file_search_output_is_bounded(context, workspace):
    (workspace / "many.txt").write_text("match\n" * (MAX_SEARCH_MATCHES * 3))

    lines = run("file_search", {"pattern": "match"}, context).content.splitlines()

    assert len(lines) <= MAX_SEARCH_MATCHES + 1


def test_file_read_reports_binary_files(context, workspace):
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")

    assert run("file_read", {"path": "blob.bin"}, context).content == "blob.bin is a binary file (3 bytes)."


@pytest.mark.parametrize(
    "expression, value",
    [
        ("2423 * 1312", 3_178_976),
        ("2 ** 10 + 7 // 2 - 3 % 2", 1026),
        ("sqrt(16) + max(1, 2)", 6.0),
        ("2^8", 256),
        ("-(3 - 5) * pi / pi", 2.0),
    ],
)
def test_calculator_evaluates_arithmetic(expression, value):
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    "expression, message",
    [
        ("__import__('os').system('id')", "unsupported syntax"),
        ("().__class__.__bases__", "unsupported syntax"),
        ("open('/etc/passwd')", "unsupported syntax"),
        ("9 ** 9 ** 9", "too large"),
        ("10 ** 100000", "too large"),
        ("(10 ** 1000) ** 1000", "too large"),
        ("1 / 0", "cannot evaluate"),
        ("sqrt(-1)", "cannot evaluate"),
        ("exp(100000)", "cannot evaluate"),
        ("1 +", "not an arithmetic expression"),
        ("True + 1", "unsupported syntax"),
        ("lambda: 1", "unsupported syntax"),
        ("1" * 600, "longer than"),
    ],
)
def test_calculator_refuses_hostile_or_impossible_input(expression, message):
    with pytest.raises(ToolFailure, match=message):
        evaluate(expression)


def test_current_time_uses_an_iana_zone(context):
    assert "(Europe/Paris," in run("current_time", {"timezone": "Europe/Paris"}, context).content
    assert "unknown time zone" in run("current_time", {"timezone": "../../etc/passwd"}, context).content


def test_todos_are_written_and_read_back(context):
    todos = [{"content": "read app.py", "status": "in_progress"}, {"content": "report", "status": "pending"}]

    assert run("todowrite", {"todos": todos}, context).content == "Saved 2 todos (2 open)."
    assert (
        run("todoread", {}, context).content
        == '[{"content": "read app.py", "status": "in_progress"}, {"content": "report", "status": "pending"}]'
    )


def test_the_registry_can_be_extended_but_not_shadowed():
    extra = Tool(
        "weather",
        "Weather for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}},
        lambda a, c: ToolResult(True, "sunny"),
    )
    assert "weather" in default_tool_registry([extra])
    with pytest.raises(ValueError, match="already registered"):
        default_tool_registry([Tool("file_read", "mine", {"type": "object"}, extra.run)])
