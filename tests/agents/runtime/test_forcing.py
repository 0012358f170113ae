"""Forced-skill compliance (seed 000): filtering, fallback, refusal, reminders, protection."""

from __future__ import annotations

import pytest

from agents.runtime.forcing import forced_skill_and_query, split_slash_command

from .conftest import FakeModel, answer, call, tool_step

DONE = "The review is complete: no defects found in the files that were read."


@pytest.mark.parametrize(
    "message, expected",
    [
        ("/code-review check app.py", ("code-review", "check app.py")),
        ("  /Code-Review", ("code-review", "")),
        ("/usr/bin is slow", (None, "/usr/bin is slow")),
        ("please /code-review", (None, "please /code-review")),
    ],
)
def test_slash_command_is_split_from_the_message(message, expected):
    assert split_slash_command(message) == expected


@pytest.mark.parametrize(
    "message, forced_skill, expected",
    [
        ("/code-review check app.py", None, ("code-review", "check app.py")),
        ("/code-review check app.py", "code-review", ("code-review", "check app.py")),
        # The field wins; a command naming another skill is left in what the user asks.
        ("/other check app.py", "code-review", ("code-review", "/other check app.py")),
        ("check app.py", "code-review", ("code-review", "check app.py")),
        ("/usr/bin is slow", None, (None, "/usr/bin is slow")),
        ("/code-review", None, ("code-review", "")),
    ],
)
def test_forced_skill_and_query_are_read_once_from_message_and_field(message, forced_skill, expected):
    assert forced_skill_and_query(message, forced_skill) == expected


def test_a_bare_slash_command_asks_the_model_to_run_the_skill(harness, store):
    store.add("code-review", tools=("file_read",))
    model = FakeModel([answer(DONE)])
    harness.run("/code-review", model)
    assert model.calls[0]["messages"][-1] == {"role": "user", "content": "Run the /code-review skill."}


def test_forced_skill_offers_only_declared_and_essential_tools(harness, store):
    store.add("code-review", tools=("file_read", "file_search", "read_skill"))
    model = FakeModel([answer(DONE)])

    result = harness.run("/code-review app.py", model)

    assert model.calls[0]["tools"] == ["abort", "todowrite", "todoread", "file_read", "file_search"]
    assert model.calls[0]["messages"][-1] == {"role": "user", "content": "app.py"}
    assert harness.trace.of("skill_activated") == [{"skill": "code-review", "version": 1, "trigger": "forced"}]
    assert result.offered == []


def test_forced_skill_field_works_like_a_slash_command(harness, store):
    store.add("code-review", tools=("file_read",))
    model = FakeModel([answer(DONE)])

    harness.run("check app.py", model, forced_skill="code-review")

    assert model.calls[0]["tools"] == ["abort", "todowrite", "todoread", "file_read"]
    assert "<mandatory-skill" in model.calls[0]["messages"][0]["content"]


def test_forced_skill_without_existing_tools_falls_back_to_all_but_loaders_with_a_warning(harness, store):
    store.add("exotic", tools=("web_search", "desktop"))
    model = FakeModel([answer(DONE)])

    harness.run("/exotic go", model)

    offered = model.calls[0]["tools"]
    assert "read_skill" not in offered and "use_skill" not in offered
    assert {"file_read", "calculator", "run_skill", "read_skill_file"} <= set(offered)
    [warning] = harness.trace.of("warning")
    assert "exotic" in warning["message"] and "web_search" in warning["message"]


def test_forced_skill_that_declares_no_tools_gets_all_but_loaders_without_a_warning(harness, store):
    store.add("plain-prompt", tools=())
    model = FakeModel([answer(DONE)])

    harness.run("/plain-prompt go", model)

    offered = model.calls[0]["tools"]
    assert "read_skill" not in offered and {"file_read", "calculator"} <= set(offered)
    assert harness.trace.of("warning") == []


def test_a_tool_outside_the_allowed_set_is_refused_naming_the_allowed_tools(harness, store, workspace):
    store.add("code-review", tools=("file_read",))
    (workspace / "x.txt").write_text("secret")
    model = FakeModel([tool_step(call("file_write", {"path": "x.txt", "content": "pwned"})), answer(DONE)])

    result = harness.run("/code-review", model)

    assert result.status == "succeeded"
    assert (workspace / "x.txt").read_text() == "secret", "the refused tool must not run"
    [refused] = harness.trace.of("tool_refused")
    assert refused["tool"] == "file_write"
    tool_message = model.calls[1]["messages"][-2]
    assert tool_message["role"] == "tool"
    assert "Allowed tools: abort, todowrite, todoread, file_read" in tool_message["content"]


def test_skill_reminder_is_appended_from_step_two_on(harness, store, workspace):
    store.add("code-review", tools=("file_list",))
    model = FakeModel(
        [
            tool_step(call("file_list", {"path": "."}, id="a")),
            tool_step(call("file_list", {"path": "."}, id="b")),
            answer(DONE),
        ]
    )

    harness.run("/code-review", model)

    reminders = [
        [m for m in c["messages"] if m["role"] == "system" and m["content"].startswith("[SKILL REMINDER]")]
        for c in model.calls
    ]
    assert [len(r) for r in reminders] == [0, 1, 1], "none at step 1, exactly one (not piling up) later"
    assert model.calls[1]["messages"][-1] == reminders[1][0], "appended after the latest message"
    assert reminders[1][0]["content"] == (
        '[SKILL REMINDER] You are executing forced skill "/code-review". Follow the skill instructions from the '
        "system prompt precisely. Use ONLY these tools: abort, file_list, todoread, todowrite."
    )
    assert [e["step"] for e in harness.trace.of("skill_reminder")] == [2, 3]


def test_mandatory_block_survives_in_every_call_even_with_a_tiny_input_limit(harness, store):
    body = "MANDATORY STEP: always cite file:line.\n" * 20
    store.add("code-review", body, tools=("file_list",))
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"old message {i} " * 200} for i in range(10)]
    model = FakeModel([tool_step(call("file_list", {"path": "."})), answer(DONE)])

    result = harness.run("/code-review " + "x " * 2000, model, history=history, max_input_tokens=50)

    assert result.status == "succeeded"
    block = harness.trace.of("llm_call")[0]["system_prompt"]
    block = block[block.index("<mandatory-skill") : block.index("</mandatory-skill>")]
    for event in harness.trace.of("llm_call"):
        assert block in event["system_prompt"]
        assert "mandatory_skill" in event["sections"] and "skill_reminder" in event["sections"]
    assert harness.trace.of("context_trimmed"), "the limit forced trimming"


def test_unknown_forced_skill_fails_the_turn_with_a_readable_error(harness):
    model = FakeModel([])

    result = harness.run("/no-such-skill do it", model)

    assert result.status == "failed"
    assert result.error == "unknown skill '/no-such-skill': no enabled skill has that name"
    assert model.calls == []
