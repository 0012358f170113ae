"""Tool-call error recovery (seed 001): validation, structured guidance, bounded retries."""

from __future__ import annotations

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.recovery import MAX_TOOL_FAILURES, example_for_tool, schema_example

from .conftest import FakeModel, answer, call, tool_step

RECOVERY_BODY = """# Tool call error recovery

General advice: always send every required parameter.

### file_list
List the workspace root:
```json
{"tool_name": "file_list", "arguments": {"path": "."}}
```

### file_read
```json
{"tool_name": "file_read", "arguments": {"path": "README.md"}}
```
"""
FINAL = "The workspace contains a single file called notes.txt, and nothing else at all."


def test_missing_parameter_is_recovered_in_the_same_turn_with_skill_guidance(harness, store, workspace):
    store.add(
        "tool-call-error-recovery",
        RECOVERY_BODY,
        version=3,
        triggers=("tool_call_error",),
        tags=("filesystem", "file_list"),
    )
    (workspace / "notes.txt").write_text("hi")
    model = FakeModel(
        [
            tool_step(call("file_list", {}, id="bad")),
            tool_step(call("file_list", {"path": "."}, id="good")),
            answer(FINAL),
        ]
    )

    result = harness.run("list files in the current directory", model)

    assert result.status == "succeeded" and result.answer == FINAL
    [error] = harness.trace.of("tool_error")
    assert error == {
        "step": 1,
        "tool": "file_list",
        "error": "the required parameter 'path' is missing.",
        "guidance_skill": "tool-call-error-recovery",
        "failures": 1,
    }
    guidance = model.calls[1]["messages"][-1]
    assert guidance["role"] == "tool" and guidance["tool_call_id"] == "bad"
    text = guidance["content"]
    assert text.startswith("Tool call to file_list failed: the required parameter 'path' is missing.")
    assert "- path (string): A path relative to the workspace root" in text
    assert '{"tool_name": "file_list", "arguments": {"path": "."}}' in text
    assert "(from skill tool-call-error-recovery)" in text
    assert "Please call file_list again with the 'path' parameter" in text
    assert [e["ok"] for e in harness.trace.of("tool_call")] == [False, True]
    assert harness.trace.of("tool_call")[1]["result"] == "notes.txt"
    assert {"skill": "tool-call-error-recovery", "version": 3, "trigger": "tool_call_error"} in harness.trace.of(
        "skill_activated"
    )


def test_without_a_guidance_skill_the_example_is_built_from_the_schema(harness):
    model = FakeModel([tool_step(call("file_read", {"paht": "x"})), answer(FINAL)])

    harness.run("read x", model)

    [error] = harness.trace.of("tool_error")
    assert error["guidance_skill"] is None
    text = model.calls[1]["messages"][-1]["content"]
    assert '"tool_name": "file_read"' in text and '"path": "..."' in text
    assert "Additional properties are not allowed ('paht' was unexpected)" in text


def test_unparseable_arguments_and_unknown_tools_get_a_structured_error(harness):
    model = FakeModel(
        [
            tool_step(call("calculator", "{expression: 1+1", id="a"), call("web_search", {"q": "x"}, id="b")),
            answer(FINAL),
        ]
    )

    harness.run("compute", model)

    messages = {m["tool_call_id"]: m["content"] for m in model.calls[1]["messages"] if m["role"] == "tool"}
    assert "its arguments are not a valid JSON object: '{expression: 1+1'" in messages["a"]
    assert "- expression (string): " in messages["a"]
    assert messages["b"].startswith("Tool call to web_search failed: no tool named 'web_search' exists.")
    assert "Call one of the available tools instead: abort, todowrite" in messages["b"]
    assert [e["tool"] for e in harness.trace.of("tool_error")] == ["calculator", "web_search"]


def test_retries_are_bounded_then_the_error_is_final_for_that_tool(harness, workspace):
    (workspace / "notes.txt").write_text("hi")
    bad = [tool_step(call("file_list", {}, id=f"bad{i}")) for i in range(MAX_TOOL_FAILURES + 1)]
    model = FakeModel([*bad, tool_step(call("file_list", {"path": "."}, id="late")), answer(FINAL)])

    result = harness.run("list", model)

    assert result.status == "succeeded"
    errors = harness.trace.of("tool_error")
    assert [e["failures"] for e in errors] == [1, 2, 3, 3, 3]
    final = model.calls[MAX_TOOL_FAILURES]["messages"][-1]["content"]
    assert "will not be run again" in final
    assert [e["ok"] for e in harness.trace.of("tool_call")][-1] is False, "even a correct call is not run any more"


def test_a_tool_that_fails_while_running_goes_through_recovery(harness):
    model = FakeModel([tool_step(call("file_read", {"path": "missing.txt"})), answer(FINAL)])

    harness.run("read", model)

    [error] = harness.trace.of("tool_error")
    assert error["error"] == "no file at 'missing.txt'"
    assert "Please call file_read again with corrected arguments" in model.calls[1]["messages"][-1]["content"]


def test_example_is_taken_only_from_the_named_tool_section():
    assert (
        example_for_tool(RECOVERY_BODY, "file_read") == '{"tool_name": "file_read", "arguments": {"path": "README.md"}}'
    )
    assert example_for_tool(RECOVERY_BODY, "file_search") is None
    assert example_for_tool("### file_list\nno code here\n### other\n```json\n{}\n```", "file_list") is None


def test_schema_example_uses_enum_and_type_placeholders():
    tool = default_tool_registry().get("run_skill")
    assert (
        schema_example(tool)
        == '{\n  "tool_name": "run_skill",\n  "arguments": {\n    "skill_name": "...",\n    "script": "..."\n  }\n}'
    )
