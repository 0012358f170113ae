"""Turns run end to end: HTTP API -> broker -> a real Celery worker process -> runtime -> trace.

The worker is a separate process reading the committed test database, with Redis as broker
when REDIS_URL is set (CI) and Kombu's filesystem transport otherwise.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection
from rest_framework.test import APIClient

from agents.models import TraceEvent
from registry.models import TokenScope, UsageEvent
from tests.factories import publish
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(list(TokenScope.values))}")
    return client


def submit(client, **body) -> str:
    response = client.post("/api/v1/agent/turns", body, format="json")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def finished(client, turn_id: str, worker: WorkerProcess) -> dict:
    def done():
        body = client.get(f"/api/v1/agent/turns/{turn_id}").json()
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None

    try:
        return wait_for(done, message=f"turn {turn_id} to finish")
    except AssertionError:
        raise AssertionError("turn did not finish; worker output:\n" + worker.output()[-5000:]) from None


def events(body: dict, type: str) -> list[dict]:
    return [event["data"] for event in body["trace"] if event["type"] == type]


def test_a_forced_skill_turn_refuses_undeclared_tools_keeps_the_mandatory_block_and_reminds(client, worker):
    publish(
        "careful-review",
        description="Review code carefully, step by step.",
        tools=["file_read"],
        body="# Careful review\n\n1. Read the file with file_read.\n2. Report findings.\n",
    )
    long_message = "/careful-review please review this: " + "lorem ipsum dolor sit amet " * 400
    script = [
        {"content": None, "tool_calls": [{"name": "file_write", "arguments": {"path": "x.txt", "content": "x"}}]},
        {"content": None, "tool_calls": [{"name": "file_read", "arguments": {"path": "missing.txt"}}]},
        {"content": "Reviewed: nothing to read.", "tool_calls": []},
    ]

    body = finished(
        client, submit(client, message=long_message, model="scripted", script=script, max_input_tokens=1500), worker
    )

    assert body["status"] == "succeeded", body["error"]
    assert body["answer"] == "Reviewed: nothing to read."
    refused = events(body, "tool_refused")
    assert refused and refused[0]["tool"] == "file_write"
    llm_calls = events(body, "llm_call")
    assert len(llm_calls) == 3
    for call in llm_calls:
        assert "<mandatory-skill" in call["system_prompt"]
        assert "read_skill" not in call["tools"] and "file_write" not in call["tools"]
    assert events(body, "context_trimmed"), "the long message must have been trimmed to fit 1500 tokens"
    reminder_steps = [event["step"] for event in events(body, "skill_reminder")]
    assert reminder_steps and min(reminder_steps) == 2
    activated = events(body, "skill_activated")
    assert {"skill": "careful-review", "version": 1, "trigger": "forced"}.items() <= activated[0].items()


def test_a_missing_parameter_is_recovered_in_the_same_turn_with_guidance(client, worker):
    publish(
        "tool-call-error-recovery",
        description="Guidance for fixing failed tool calls.",
        triggers=["tool_call_error"],
        tags=["file_list", "filesystem"],
        body="# Recovery\n\n## Per-tool examples\n\n### file_list\n\n```json\n"
        '{"name": "file_list", "arguments": {"path": "."}}\n```\n',
    )
    script = [
        {"content": None, "tool_calls": [{"name": "file_list", "arguments": {}}]},
        {"content": None, "tool_calls": [{"name": "file_list", "arguments": {"path": "."}}]},
        {"content": "Listed the workspace.", "tool_calls": []},
    ]

    body = finished(client, submit(client, message="list my files", model="scripted", script=script), worker)

    assert body["status"] == "succeeded", body["error"]
    error = events(body, "tool_error")[0]
    assert error["tool"] == "file_list" and error["guidance_skill"] == "tool-call-error-recovery"
    calls = events(body, "tool_call")
    assert calls[-1]["tool"] == "file_list" and calls[-1]["ok"] is True
    # The model saw a structured message with the example call from the skill.
    second_call = events(body, "llm_call")[1]
    assert second_call["message_count"] > events(body, "llm_call")[0]["message_count"]


def test_a_rules_auto_invoke_runs_after_an_unhelpful_answer(client, worker):
    publish("unit-helper", description="Converts units with a script.", tools=["calculator"])
    response = client.post(
        "/api/v1/rules",
        {
            "name": "math-means-calculator",
            "pattern": r"\bhow much is\b",
            "skills": ["unit-helper"],
            "instruction": "Call the calculator for arithmetic.",
            "auto_invoke": {"tool": "calculator", "arguments": {"expression": "6*7"}},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    script = [
        {"content": "Sorry, no tool is available for that.", "tool_calls": []},
        {"content": "It is 42.", "tool_calls": []},
    ]

    body = finished(
        client, submit(client, message="how much is six times seven", model="scripted", script=script), worker
    )

    assert body["status"] == "succeeded", body["error"]
    assert events(body, "rule_fired")[0]["name"] == "math-means-calculator"
    invoked = events(body, "auto_invoke")
    assert invoked and invoked[0]["tool"] == "calculator"
    assert any(call["tool"] == "calculator" and "42" in call["result"] for call in events(body, "tool_call"))
    assert "## Instruction for this request" in events(body, "llm_call")[0]["system_prompt"]
    assert body["answer"] == "It is 42."


def test_a_turn_that_never_answers_stops_at_max_iterations(client, worker):
    script = [{"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]}] * 30

    body = finished(client, submit(client, message="loop forever", model="scripted", script=script), worker)

    assert body["status"] == "failed"
    assert "10" in body["error"]
    assert len(events(body, "llm_call")) == 10


def sessions_opened() -> int:
    """Connections ever opened to the test database (PostgreSQL counts them per database)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's session count")
def test_a_worker_keeps_its_database_connections_from_turn_to_turn(client, worker):
    # Celery's Django fixup used to close the connection around every task: a new connection,
    # ~10 ms of the worker's time, for each turn.
    script = [{"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]}, {"content": "Done."}]
    assert finished(client, submit(client, message="first", model="scripted", script=script), worker)["status"] == (
        "succeeded"
    )
    before = sessions_opened()

    for n in range(6):
        body = finished(client, submit(client, message=f"turn {n}", model="scripted", script=script), worker)
        assert body["status"] == "succeeded"

    assert sessions_opened() - before <= 2, "at most the reaper's round opened one; the turns opened none"


def test_the_offline_demo_model_reads_the_best_skill_and_summarises_it(client, worker):
    publish(
        "summarize-notes",
        description="Summarize meeting notes into decisions and action items.",
        body="# Summarize\n\n1. Read the notes.\n2. List decisions.\n3. List action items with owners.\n",
    )

    body = finished(client, submit(client, message="please summarize my meeting notes", model="offline"), worker)

    assert body["status"] == "succeeded", body["error"]
    assert body["is_demo_model"] is True
    assert any(call["tool"] == "read_skill" for call in events(body, "tool_call"))
    assert "action items" in body["answer"].lower()
    kinds = set(UsageEvent.objects.filter(turn_id=body["id"]).values_list("kind", flat=True))
    assert {"offered", "loaded", "succeeded"} <= kinds


def test_a_conversation_carries_history_into_the_next_turn(client, worker):
    first = finished(
        client,
        submit(
            client, message="my name is Ada", model="scripted", script=[{"content": "Hello Ada.", "tool_calls": []}]
        ),
        worker,
    )
    second = finished(
        client,
        submit(
            client,
            message="what is my name?",
            model="scripted",
            conversation=first["conversation"],
            script=[{"content": "Ada.", "tool_calls": []}],
        ),
        worker,
    )

    assert second["status"] == "succeeded"
    assert second["conversation"] == first["conversation"]
    assert events(second, "llm_call")[0]["message_count"] > events(first, "llm_call")[0]["message_count"]


def test_a_running_turn_is_cancelled_at_its_next_step(client, worker):
    publish(
        "sleepy",
        description="Runs a slow script.",
        tools=["run_skill"],
        files=[("scripts/nap.py", b"import time\ntime.sleep(3)\n", True)],
    )
    nap = {"name": "run_skill", "arguments": {"skill_name": "sleepy", "script": "nap.py", "args": []}}
    turn_id = submit(client, message="nap", model="scripted", script=[{"content": None, "tool_calls": [nap]}] * 5)
    wait_for(lambda: TraceEvent.objects.filter(turn_id=turn_id, type="llm_call").exists(), message="the turn to start")

    response = client.post(f"/api/v1/agent/turns/{turn_id}/cancel")
    body = finished(client, turn_id, worker)

    assert response.status_code == 202
    assert body["status"] == "cancelled"
    assert len(events(body, "llm_call")) < 5


class FlakyModelServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that fails with `failure_status` for the first
    `failures` requests, then answers "recovered"."""

    failures = 0
    failure_status = 503
    requests = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).requests += 1
        if type(self).requests <= self.failures:
            status, payload = self.failure_status, {"error": {"message": "stub failure", "type": "stub", "code": None}}
        else:
            status, payload = (
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "gpt-test",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "recovered"}}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                },
            )
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def flaky_model_server_worker(worker_exits):
    """A worker whose model is an OpenAI-compatible stub on 127.0.0.1 (litellm's real HTTP path).

    It takes the queue over from the default worker until the module ends (that worker would
    fail these turns, its AGENT_MODELS lacking the stub's model); the module's later tests run
    on it as well."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyModelServer)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    flaky = WorkerProcess(
        extra_env={
            # The worker runs only the models its own AGENT_MODELS lists, and sends AGENT_API_BASE
            # and AGENT_API_KEY with AGENT_MODEL's provider only.
            "AGENT_MODEL": "openai/gpt-test",
            "AGENT_API_BASE": f"http://127.0.0.1:{server.server_port}/v1",
            "AGENT_API_KEY": "stub-key",
            "NO_PROXY": "127.0.0.1",
        }
    ).start()
    yield flaky
    worker_exits(flaky)
    server.shutdown()
    server.server_close()


@pytest.fixture
def flaky_model_worker(flaky_model_server_worker, settings):
    settings.AGENT_MODELS = ["offline", "openai/gpt-test"]
    FlakyModelServer.requests = 0
    return flaky_model_server_worker


def test_a_transient_model_error_is_retried_by_the_task_and_the_turn_succeeds(client, flaky_model_worker):
    FlakyModelServer.failures, FlakyModelServer.failure_status = 3, 503

    body = finished(client, submit(client, message="hello", model="openai/gpt-test"), flaky_model_worker)

    assert body["status"] == "succeeded", body["error"]
    assert body["answer"] == "recovered"
    assert body["attempts"] >= 2, "the Celery task itself retried"
    assert len(events(body, "llm_call")) == 1, "the successful attempt's trace replaced the failed one"


def test_a_permanent_model_error_fails_the_turn_with_a_readable_error(client, flaky_model_worker):
    FlakyModelServer.failures, FlakyModelServer.failure_status = 1, 400

    body = finished(client, submit(client, message="hello", model="openai/gpt-test"), flaky_model_worker)

    assert body["status"] == "failed"
    assert body["attempts"] == 1
    assert "stub failure" in body["error"]
