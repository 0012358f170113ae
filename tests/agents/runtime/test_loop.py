"""The ReAct loop: limits, endings, triggers, force-include auto_invoke and the trace contract."""

from __future__ import annotations

import pytest

from agents.runtime.llm import LLMError, LLMResponse, TransientLLMError
from agents.runtime.types import Resolution, SkillActivation, SkillExecution
from registry.matching.fired_rule import FiredRule

from .conftest import FakeModel, answer, call, tool_step

HELPFUL = (
    "To generate an image, describe the scene, pick a style, and I will run the image skill for you "
    "with those settings once you confirm."
)
IMAGE_RULE = FiredRule(
    id=1,
    name="images",
    why="pattern 'image' matched",
    skills=("image-gen",),
    instruction="For this request, call run_skill with the image-gen skill first.",
    auto_invoke={
        "tool": "run_skill",
        "arguments": {"skill_name": "image-gen", "script": "gen.py", "args": ["{{query}}"]},
    },
)
GEN_SCRIPT = "import sys\nprint('generated:', sys.argv[1])\n"


def image_resolution() -> Resolution:
    return Resolution(instructions=(IMAGE_RULE.instruction,), fired_rules=(IMAGE_RULE,))


def test_llm_call_event_carries_the_required_keys(harness):
    harness.run("hi", FakeModel([answer(HELPFUL)]))

    [event] = harness.trace.of("llm_call")
    assert {
        "step",
        "model",
        "tools",
        "system_prompt",
        "sections",
        "message_count",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "latency_ms",
    } <= set(event)
    assert (event["step"], event["model"], event["message_count"]) == (1, "fake", 2)
    assert (event["prompt_tokens"], event["completion_tokens"], event["cost"]) == (100, 20, 0.001)


def test_a_turn_sums_usage_and_counts_steps(harness, workspace):
    model = FakeModel([tool_step(call("file_list", {"path": "."})), answer(HELPFUL)])

    result = harness.run("list", model)

    assert (result.status, result.answer, result.steps) == ("succeeded", HELPFUL, 2)
    assert (result.prompt_tokens, result.completion_tokens) == (200, 40)
    assert result.cost == pytest.approx(0.002)


def test_auto_invoke_runs_the_rule_tool_after_an_unhelpful_answer(harness, store):
    store.add("image-gen", files={"scripts/gen.py": GEN_SCRIPT}, version=2)
    model = FakeModel([answer("Sorry, I have no image tool."), answer(HELPFUL)])

    result = harness.run("draw a red cat", model, resolution=image_resolution())

    assert result.status == "succeeded" and result.answer == HELPFUL
    [invoked] = harness.trace.of("auto_invoke")
    assert invoked["rule"] == "images" and invoked["arguments"]["args"] == ["draw a red cat"]
    [tool_call] = harness.trace.of("tool_call")
    assert tool_call["ok"] and "generated: draw a red cat" in tool_call["result"]
    assert model.calls[1]["messages"][-1]["content"].startswith("scripts/gen.py exited with code 0.")
    assert SkillActivation("image-gen", 2, "auto_invoke") in result.activations
    assert result.executions == [SkillExecution("image-gen", True)]


def test_auto_invoke_does_not_run_after_a_helpful_answer(harness, store):
    store.add("image-gen", files={"scripts/gen.py": GEN_SCRIPT})
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("how do I draw an image?", model, resolution=image_resolution())

    assert result.answer == HELPFUL
    assert harness.trace.of("auto_invoke") == [] and harness.trace.of("tool_call") == []
    assert len(model.calls) == 1


def test_auto_invoke_runs_once_per_rule(harness, store):
    store.add("image-gen", files={"scripts/gen.py": GEN_SCRIPT})
    model = FakeModel([answer("no tool"), answer("still no tool")])

    result = harness.run("draw", model, resolution=image_resolution())

    assert result.answer == "still no tool"
    assert len(harness.trace.of("auto_invoke")) == 1


def test_fired_rules_are_traced_with_why(harness):
    harness.run("draw", FakeModel([answer(HELPFUL)]), resolution=image_resolution())

    [fired] = harness.trace.of("rule_fired")
    assert (fired["name"], fired["why"], fired["skills"]) == ("images", "pattern 'image' matched", ["image-gen"])
    assert harness.trace.of("skill_activated") == [], "listed skills are not loaded skills"


def test_max_iterations_ends_the_loop_with_a_clear_failure(harness):
    model = FakeModel([tool_step(call("todoread", id=f"c{i}")) for i in range(10)])

    result = harness.run("loop forever", model, max_iterations=3)

    assert (result.status, result.steps, result.answer) == ("failed", 3, "")
    assert result.error == "stopped after 3 iterations without a final answer"
    assert len(model.calls) == 3


def test_abort_ends_the_turn_as_failed_with_the_reason(harness):
    model = FakeModel([tool_step(call("abort", {"reason": "the repository is empty"})), answer(HELPFUL)])

    result = harness.run("review", model)

    assert (result.status, result.error) == ("failed", "aborted: the repository is empty")
    assert len(model.calls) == 1


def test_cancellation_is_checked_before_each_model_call(harness):
    checks = iter([False, True])
    model = FakeModel([tool_step(call("todoread")), answer(HELPFUL)])

    result = harness.run("x", model, should_cancel=lambda: next(checks))

    assert result.status == "cancelled"
    assert len(model.calls) == 1


def test_token_budget_stops_the_turn(harness):
    model = FakeModel([tool_step(call("todoread", id="a")), tool_step(call("todoread", id="b")), answer(HELPFUL)])

    result = harness.run("x", model, max_total_tokens=200)

    assert result.status == "failed"
    assert result.error == "stopped: the turn used 240 tokens of its 200 token budget (step 2, before tool call 1 of 1)"
    assert len(model.calls) == 2


def test_time_budget_stops_the_turn(harness):
    result = harness.run("x", FakeModel([answer(HELPFUL)]), max_seconds=0)

    assert (result.status, result.error) == (
        "failed",
        "stopped: the turn exceeded its time budget of 0 s (step 1, before model call)",
    )


def test_an_empty_answer_is_a_failure_not_a_success(harness):
    result = harness.run("x", FakeModel([LLMResponse(content="  ")]))

    assert (result.status, result.error) == ("failed", "the model returned an empty answer")


def test_a_permanent_model_error_fails_the_turn_readably(harness):
    def broken(*args, **kwargs):
        raise LLMError("openai/gpt-x: AuthenticationError: invalid api key")

    result = harness.run("x", broken)

    assert result.status == "failed"
    assert result.error == "the model call failed: openai/gpt-x: AuthenticationError: invalid api key"


def test_a_transient_model_error_is_raised_for_the_caller_to_retry(harness):
    model = FakeModel([tool_step(call("todoread")), lambda messages: (_ for _ in ()).throw(TransientLLMError("429"))])

    with pytest.raises(TransientLLMError):
        harness.run("x", model)

    assert [e["step"] for e in harness.trace.of("llm_call")] == [1], "the trace holds the abandoned attempt"


def test_read_skill_loads_the_body_and_records_an_activation(harness, store):
    store.add("code-review", "1. Read the diff.\n2. Report defects.", version=4, files={"references/checklist.md": "x"})
    model = FakeModel([tool_step(call("read_skill", {"skill_name": "code-review"})), answer(HELPFUL)])

    result = harness.run("review my code", model)

    assert result.activations == [SkillActivation("code-review", 4, "read_skill")]
    body = model.calls[1]["messages"][-1]["content"]
    assert "1. Read the diff." in body and "- references/checklist.md" in body


def test_turn_start_skills_are_injected_every_turn(harness, store):
    store.add("project-map", "The project uses Django.", triggers=("turn_start",))
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("hello", model)

    assert (
        '<skill name="project-map" trigger="turn_start">\nThe project uses Django.\n</skill>'
        in model.calls[0]["messages"][0]["content"]
    )
    assert result.activations == [SkillActivation("project-map", 1, "turn_start")]
    assert "loaded_skills" in harness.trace.of("llm_call")[0]["sections"]


def test_explicit_command_loads_the_named_skill(harness, store):
    store.add("file-scaffolding", "Create the component.", triggers=("explicit_command",))
    store.add("other", "Nope.", triggers=("explicit_command",))
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("Please use the file_scaffolding skill for a Vue component", model)

    assert result.activations == [SkillActivation("file-scaffolding", 1, "explicit_command")]
    assert "Create the component." in model.calls[0]["messages"][0]["content"]
    assert "Nope." not in model.calls[0]["messages"][0]["content"]


def test_task_match_suggests_the_best_skill_without_loading_it(harness, store):
    store.add(
        "summarize", "SUMMARY BODY", description="Summarize documents extracting key points", triggers=("task_match",)
    )
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("summarize documents please", model)

    prompt = model.calls[0]["messages"][0]["content"]
    assert "The skill `summarize` looks relevant" in prompt and "SUMMARY BODY" not in prompt
    assert result.activations == []


def test_task_match_injects_the_body_above_the_configured_threshold(harness, store):
    store.add(
        "summarize", "SUMMARY BODY", description="Summarize documents extracting key points", triggers=("task_match",)
    )
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("summarize documents please", model, task_match_inject_threshold=0.5)

    assert "SUMMARY BODY" in model.calls[0]["messages"][0]["content"]
    assert result.activations == [SkillActivation("summarize", 1, "task_match")]


def test_task_match_only_suggests_below_the_configured_threshold(harness, store):
    store.add(
        "summarize", "SUMMARY BODY", description="Summarize documents extracting key points", triggers=("task_match",)
    )
    model = FakeModel([answer(HELPFUL)])

    result = harness.run("summarize documents please", model, task_match_inject_threshold=0.95)

    prompt = model.calls[0]["messages"][0]["content"]
    assert "SUMMARY BODY" not in prompt and "The skill `summarize` looks relevant" in prompt
    assert result.activations == []


def test_history_is_sent_before_the_current_message(harness):
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "reply"}]
    model = FakeModel([answer(HELPFUL)])

    harness.run("now", model, history=history)

    assert model.calls[0]["messages"][1:] == [*history, {"role": "user", "content": "now"}]


def test_long_history_is_compacted_into_the_memory_section(harness):
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(24)]
    model = FakeModel([answer(HELPFUL)])

    harness.run("now", model, history=history, memory_summary="User prefers short answers.")

    system, *rest = model.calls[0]["messages"]
    assert rest == [*history[4:], {"role": "user", "content": "now"}]
    assert (
        "User prefers short answers.\n\nEarlier in this conversation (compacted):\n- user: message 0"
        in system["content"]
    )
    assert "message 4" not in system["content"]
