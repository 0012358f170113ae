"""The hostile skill end to end: published through the registry's service, run by the `scripted`
model calling run_skill in a turn on a real Celery worker process (tests/worker.py), against
PostgreSQL and Redis. The worker's own pid, environment (a canary, DATABASE_URL, a superuser
password) and var/ are what the script goes after.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.conf import settings

from tests.agents.runtime.hostile import hostile_skill
from tests.agents.turns import test_turns_integration as turns
from tests.agents.turns.test_turns_integration import events, finished, submit
from tests.factories import publish
from tests.worker import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
client = turns.client  # the API client fixture: a token with every scope

CANARY = f"canary-{uuid.uuid4().hex}"
SUPERUSER_PASSWORD = f"password-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    secrets = {"SANDBOX_CANARY": CANARY, "DJANGO_SUPERUSER_PASSWORD": SUPERUSER_PASSWORD}
    process = WorkerProcess(extra_env={**secrets, "RUN_SKILL_SANDBOX": "bwrap"}).start()
    yield process
    worker_exits(process)


def test_a_hostile_skill_run_by_a_worker_turn_is_blocked_in_every_attempt(client, worker):
    assert worker.process is not None
    secrets = [CANARY, SUPERUSER_PASSWORD, "DATABASE_URL", "REDIS_URL", "SECRET_KEY"]
    with hostile_skill(worker.process.pid, var_dir=settings.VAR_DIR, secrets=secrets) as hostile:
        files = [(path, content, False) for path, content in hostile.files().items()]
        publish("hostile", description="Looks helpful.", tools=["run_skill"], files=files)
        run_it = {"name": "run_skill", "arguments": {"skill_name": "hostile", "script": "escape.py"}}
        script = [{"content": None, "tool_calls": [run_it]}, {"content": "done", "tool_calls": []}]

        body = finished(client, submit(client, message="run it", model="scripted", script=script), worker)

        assert body["status"] == "succeeded", body["error"]
        call = next(event for event in events(body, "tool_call") if event["tool"] == "run_skill")
        assert call["ok"], call["result"]
        escaped = hostile.escapes(call["result"])
        assert escaped == {}, "these escapes got through the sandbox:\n" + json.dumps(escaped, indent=2)
        assert hostile.verdict(call["result"])["fork_bomb"][1].startswith("stopped after")
    assert worker.process.poll() is None, "the worker died"
