"""The model layer through litellm's real completion path: scripted, offline and an OpenAI stub."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.litellm_import import litellm_module
from agents.runtime.llm import LLMError, TransientLLMError, complete
from agents.runtime.providers import OFFLINE_NOTE, best_skill, register_providers, summary_steps
from agents.runtime.types import Resolution, SkillActivation, SkillSummary

USER = [{"role": "system", "content": "You help."}, {"role": "user", "content": "hi"}]
CODE_REVIEW_BODY = """# Code review

## 1. Scope the review
1. Establish what is under review.
   ```json
   {"name": "file_list", "arguments": {"path": "."}}
   ```
2. Read each file in full before judging it.
3. Record the files to review with todowrite.
"""
AVAILABLE = """## Skills (mandatory)

<available_skills>
<skill>
  <name>code-review</name>
  <description>Reviews code changes for correctness &amp; security.</description>
</skill>
<skill>
  <name>pdf-tools</name>
  <description>Extract text and tables from PDF files.</description>
</skill>
</available_skills>"""


def tool_specs(*names: str) -> list[dict[str, Any]]:
    registry = default_tool_registry()
    return [registry.get(name).spec() for name in names]


# --- scripted ---------------------------------------------------------------------------------


def test_scripted_model_receives_its_script_through_litellm_completion_kwargs():
    script = [{"content": None, "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}]

    response = complete("scripted", USER, tool_specs("calculator"), script=script)

    assert response.content is None
    [tool_call] = response.tool_calls
    assert (tool_call.name, tool_call.arguments) == ("calculator", {"expression": "6*7"})
    assert response.prompt_tokens > 0 and response.completion_tokens > 0


def test_scripted_step_is_the_number_of_assistant_messages_since_the_last_user_message():
    script = [{"content": "first"}, {"content": "second"}]
    later = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "todoread", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "[]"},
    ]

    assert complete("scripted", USER, [], script=script).content == "first"
    assert complete("scripted", later, [], script=script).content == "second"
    assert complete("scripted", [*later, {"role": "assistant", "content": "x"}], [], script=script).content == "done"
    earlier_turn = [USER[0], {"role": "user", "content": "before"}, {"role": "assistant", "content": "old"}, USER[1]]
    assert complete("scripted", earlier_turn, [], script=script).content == "first", "a new user message restarts"


def test_scripted_model_can_send_broken_json_arguments():
    script = [{"tool_calls": [{"name": "calculator", "arguments": "{not json"}]}]

    [tool_call] = complete("scripted", USER, tool_specs("calculator"), script=script).tool_calls

    assert tool_call.arguments == "{not json"


def test_a_malformed_script_is_a_permanent_error():
    with pytest.raises(LLMError, match="script step 0: 'content' must be a string or null") as raised:
        complete("scripted", USER, [], script=[{"content": 5}])
    assert not isinstance(raised.value, TransientLLMError)


def test_a_scripted_turn_recovers_from_a_missing_parameter(harness, workspace):
    (workspace / "notes.txt").write_text("hi")
    script = [
        {"content": None, "tool_calls": [{"name": "file_list", "arguments": {}}]},
        {"content": None, "tool_calls": [{"name": "file_list", "arguments": {"path": "."}}]},
        {"content": "The workspace holds notes.txt.", "tool_calls": []},
    ]

    result = harness.run("list files", complete, model_name="scripted", llm_options={"script": script})

    assert (result.status, result.answer, result.steps) == ("succeeded", "The workspace holds notes.txt.", 3)
    assert [e["ok"] for e in harness.trace.of("tool_call")] == [False, True]
    assert result.prompt_tokens > 0


def test_registering_providers_is_idempotent_and_keeps_other_providers():
    litellm = litellm_module()
    register_providers()
    foreign = {"provider": "someone-else", "custom_handler": object()}
    litellm.custom_provider_map.append(foreign)

    register_providers()
    register_providers()

    providers = [entry["provider"] for entry in litellm.custom_provider_map]
    assert providers.count("scripted") == 1 and providers.count("offline") == 1
    assert foreign in litellm.custom_provider_map
    litellm.custom_provider_map.remove(foreign)


# --- offline ----------------------------------------------------------------------------------


def test_offline_model_picks_the_best_skill_reads_it_and_summarises_its_steps(harness, store):
    store.add(
        "code-review", CODE_REVIEW_BODY, version=2, description="Reviews code changes for correctness & security."
    )
    store.add("pdf-tools", "1. Open the PDF.\n2. Extract.", description="Extract text and tables from PDF files.")
    resolution = Resolution(
        skills=(SkillSummary("code-review", "", 2), SkillSummary("pdf-tools", "", 1)), prompt_block=AVAILABLE
    )

    result = harness.run("Please review my code changes", complete, model_name="offline", resolution=resolution)

    assert result.status == "succeeded"
    [read] = harness.trace.of("tool_call")
    assert (read["tool"], read["arguments"]) == ("read_skill", {"skill_name": "code-review"})
    assert result.activations == [SkillActivation("code-review", 2, "read_skill")]
    assert result.answer.startswith(OFFLINE_NOTE)
    assert "AGENT_MODEL" in result.answer
    assert "1. Establish what is under review.\n2. Read each file in full before judging it." in result.answer
    assert '"file_list"' not in result.answer, "code blocks are not steps"


def test_offline_model_says_so_when_no_skill_matches(harness):
    result = harness.run(
        "What is the airspeed of a swallow?",
        complete,
        model_name="offline",
        resolution=Resolution(prompt_block=AVAILABLE),
    )

    assert result.status == "succeeded"
    assert harness.trace.of("tool_call") == []
    assert "None of the available skills matches your request" in result.answer


def test_offline_model_summarises_a_forced_skill_without_read_skill(harness, store):
    store.add("code-review", CODE_REVIEW_BODY, tools=("file_read",))

    result = harness.run("/code-review app.py", complete, model_name="offline")

    assert harness.trace.of("tool_call") == []
    assert "**code-review**" in result.answer and "2. Read each file in full" in result.answer


def test_best_skill_weighs_name_words_and_needs_an_overlap():
    skills = [("code-review", "Reviews code."), ("pdf-tools", "Extract text from PDF files and review them.")]
    assert best_skill("review this pdf", skills) == "pdf-tools"
    assert best_skill("code review please", skills) == "code-review"
    assert best_skill("hello", skills) is None


def test_summary_steps_prefer_numbered_headings_then_numbered_lines_then_headings_then_bullets():
    assert summary_steps("## 1. Scope\n1. a\n2. b\n## 2. Check\n- x") == ["Scope", "Check"]
    assert summary_steps("## Plan\n1. Read the\n   whole file. Then more.\n2. Act") == ["Read the whole file.", "Act"]
    assert summary_steps("## Plan\ntext\n## Act\n- a") == ["Plan", "Act"]
    assert summary_steps("- one\n- **two**") == ["one", "two"]


# --- litellm's OpenAI HTTP path against a local stub --------------------------------------------


class StubOpenAI(BaseHTTPRequestHandler):
    status = 200
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        StubOpenAI.bodies.append({"path": self.path, "json": json.loads(self.rfile.read(length))})
        if self.status == 200:
            payload: dict[str, Any] = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-test",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "calculator", "arguments": '{"expression": "1+1"}'},
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
            }
        else:
            payload = {"error": {"message": f"stub status {self.status}", "type": "stub_error", "code": None}}
        raw = json.dumps(payload).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def openai_stub(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    StubOpenAI.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubOpenAI)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    StubOpenAI.status = 200


def call_stub(server) -> Any:
    return complete(
        "openai/gpt-test",
        USER,
        tool_specs("calculator"),
        api_base=f"http://127.0.0.1:{server.server_port}/v1",
        api_key="x",
        num_retries=0,
        max_retries=0,
    )


def test_openai_path_sends_the_tools_and_parses_tool_calls(openai_stub):
    response = call_stub(openai_stub)

    [request] = StubOpenAI.bodies
    assert request["path"] == "/v1/chat/completions"
    assert [tool["function"]["name"] for tool in request["json"]["tools"]] == ["calculator"]
    assert request["json"]["messages"][-1] == {"role": "user", "content": "hi"}
    assert response.tool_calls[0].arguments == {"expression": "1+1"}
    assert (response.prompt_tokens, response.completion_tokens) == (12, 5)


@pytest.mark.parametrize(
    "status, error", [(500, TransientLLMError), (429, TransientLLMError), (503, TransientLLMError)]
)
def test_openai_server_errors_and_rate_limits_are_transient(openai_stub, status, error):
    StubOpenAI.status = status

    with pytest.raises(error, match=f"stub status {status}"):
        call_stub(openai_stub)


def test_openai_bad_request_is_a_permanent_error(openai_stub):
    StubOpenAI.status = 400

    with pytest.raises(LLMError, match="openai/gpt-test: BadRequestError") as raised:
        call_stub(openai_stub)
    assert not isinstance(raised.value, TransientLLMError)
