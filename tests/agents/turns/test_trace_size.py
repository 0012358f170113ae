"""A 20-step turn run by a real Celery worker stores its system prompt once, in a trace of at most
50 KB, and the API still gives every `llm_call` its whole prompt (SPEC §6.10).

The forced skill's body (in the `<mandatory-skill>` block of every model call's prompt) makes the
prompt ~25 KB, as a registry of 1,000 skills makes it through the skills block (bench/trace_size.py).
"""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from agents.models import PromptText
from bench.trace_size import TARGET_BYTES, stored_bytes
from registry.models import TokenScope
from tests.agents.turns.test_turns_integration import finished, submit
from tests.factories import publish
from tests.worker import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

STEPS = 20
BODY = "# Long checklist\n\n" + "".join(f"{n}. Check item {n} of the list and note what you see.\n" for n in range(450))


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(
        extra_env={"AGENT_MAX_ITERATIONS": str(STEPS + 1), "AGENT_MAX_TOTAL_TOKENS": "2000000"}
    ).start()
    yield process
    worker_exits(process)


@pytest.fixture
def client(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([TokenScope.AGENT_RUN])}")
    return client


def test_a_twenty_step_turn_stores_its_prompt_once_and_the_api_shows_it_whole(client, worker):
    publish("long-checklist", description="Go through a long checklist.", body=BODY)
    step = {"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]}
    script = [step] * STEPS + [{"content": "Checked.", "tool_calls": []}]

    turn_id = submit(client, message="/long-checklist go through it", model="scripted", script=script)
    body = finished(client, turn_id, worker)

    assert body["status"] == "succeeded", body["error"]
    calls = [event for event in body["trace"] if event["type"] == "llm_call"]
    assert len(calls) == STEPS + 1
    assert stored_bytes(turn_id) <= TARGET_BYTES
    prompts = {call["data"]["system_prompt"] for call in calls}
    assert len(prompts) == 1, "every step sent the same prompt"
    [prompt] = prompts
    assert BODY.strip() in prompt and len(prompt) > 25_000, "the prompt is whole, not cut"
    assert list(PromptText.objects.values_list("sha256", flat=True)) == [hashlib.sha256(prompt.encode()).hexdigest()]

    seq = calls[-1]["seq"] - 1
    polled = client.get(f"/api/v1/agent/turns/{turn_id}?after={seq}").json()["trace"]
    assert polled == body["trace"][seq:], "a poll after a seq gives the same events"

    # The same request again in the conversation sends the same prompt: it is not stored again.
    again = submit(
        client,
        message="/long-checklist go through it",
        model="scripted",
        script=script[-2:],
        conversation=body["conversation"],
    )
    assert finished(client, again, worker)["status"] == "succeeded"
    assert PromptText.objects.count() == 1
