"""litellm lives in the workers only: they load it and its tokenizers before taking work, so the
first turn after a start is as quick as the rest, and the web process never imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from rest_framework.test import APIClient

from tests.worker import ROOT, WorkerProcess, _database_url_for_tests, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WARM_UP_LINE = "warmed up litellm and its tokenizers"
PROCESS_WARM_UP_LINE = "warmed up this pool process's resolve snapshot and tools"


@pytest.fixture
def client(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['agent:run'])}")
    return client


def test_a_prefork_worker_warms_up_before_ready_and_its_first_turn_succeeds(client):
    # Given a worker as the Procfile runs it: a prefork pool forked after the warm-up.
    worker = WorkerProcess(concurrency=2).start()
    try:
        output = worker.output()
        assert WARM_UP_LINE in output, output
        assert output.index(WARM_UP_LINE) < output.index(" ready."), "the warm-up must finish before it takes work"
        # and each pool process, once forked, builds what its first turn would (worker_process_init).
        wait_for(
            lambda: worker.output().count(PROCESS_WARM_UP_LINE) >= 2 or None, message="both pool processes to warm up"
        )

        # When the first turns arrive through the API, one for each fresh pool process,
        response_ids = []
        for topic in ("csv report", "pdf invoice"):
            response = client.post(
                "/api/v1/agent/turns", {"message": f"Summarise the {topic}", "model": "offline"}, format="json"
            )
            assert response.status_code == 202, response.content
            response_ids.append(response.json()["id"])

        # then each one ends with an answer and the model's token counts (the warmed tokenizers).
        for turn_id in response_ids:
            body = wait_for(lambda turn_id=turn_id: _finished(client, turn_id), message=f"turn {turn_id} to end")
            assert body["status"] == "succeeded", body["error"] + worker.output()[-3000:]
            assert body["answer"] and body["prompt_tokens"] > 0
    finally:
        worker.stop()


def _finished(client, turn_id: str) -> dict | None:
    body = client.get(f"/api/v1/agent/turns/{turn_id}").json()
    return body if body["status"] in ("succeeded", "failed", "cancelled") else None


WEB_PROCESS = """
import json, os, sys
import django
django.setup()
from django.test import Client
from django.urls import get_resolver
from config.wsgi import application  # noqa: what gunicorn loads

def walk(patterns):  # resolving every route imports every view module
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))
walk(get_resolver().url_patterns)
client = Client(HTTP_AUTHORIZATION="Bearer " + os.environ["TURN_TOKEN"])
queued = client.post("/api/v1/agent/turns", {"message": "hello", "model": "offline"}, content_type="application/json")
shown = client.get("/api/v1/agent/turns/" + queued.json()["id"])
print(json.dumps({
    "statuses": [queued.status_code, shown.status_code],
    "loaded": sorted(name for name in sys.modules if name.split(".")[0] in ("litellm", "tiktoken", "tokenizers")),
}))
"""


def test_the_web_process_never_imports_litellm(make_token):
    # Given a process set up as gunicorn's, with every view imported and a turn queued through it,
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": _database_url_for_tests(),
        "TURN_TOKEN": make_token(["agent:run"]),
        "PYTHONPATH": str(ROOT),
    }
    finished = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(finished.stdout.strip().splitlines()[-1])

    # then it answered, and litellm and its tokenizers were never loaded.
    assert report["statuses"] == [202, 200]
    assert report["loaded"] == []
