"""Redis stopped under a running app: the console and the read API are served from the
database, a turn submission is a 503 with Retry-After, and queued work resumes when Redis is
back. Real processes: a private redis-server (append-only, so a restart keeps what was queued),
gunicorn and a Celery worker, all pointed at it; the test kills and restarts that Redis only."""

from __future__ import annotations

import json
import os

import pytest

from agents.models import AgentTurn, TurnStatus
from bench._services import Gunicorn, PrivateRedis
from registry.models import TokenScope
from tests.factories import UserFactory, publish
from tests.faults.support import Http, need_redis_server
from tests.worker import WorkerProcess, _database_url_for_tests, wait_for

need_redis_server()

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SCRIPT = [{"content": "Done.", "tool_calls": []}]


@pytest.fixture
def redis_server():
    server = PrivateRedis().start()
    yield server
    server.close()


@pytest.fixture
def app(redis_server):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": _database_url_for_tests(),
        "REDIS_URL": redis_server.url,
    }
    server = Gunicorn(env=env, workers=2).start()
    yield server
    server.stop()


def submit(api: Http) -> tuple[int, dict, dict]:
    status, headers, content = api.call(
        "POST", "/api/v1/agent/turns", {"message": "hello", "model": "scripted", "script": SCRIPT}
    )
    return status, headers, json.loads(content)


def turn_status(turn_id: str) -> str:
    return AgentTurn.objects.get(id=turn_id).status


def test_reads_are_served_from_the_database_while_redis_is_down_and_queued_work_resumes(redis_server, app, make_token):
    publish("outage-skill", body="# Outage\n\nStill here without Redis.\n")
    UserFactory(username="outage-admin", is_superuser=True, is_staff=True)
    api = Http(app.port, make_token([TokenScope.SKILLS_READ, TokenScope.AGENT_RUN]))
    console = Http(app.port)
    console.login("outage-admin", "pw-for-tests")
    reads = [
        ("GET", "/api/v1/skills/outage-skill/SKILL.md", None, b"Still here without Redis."),
        ("GET", "/api/v1/skills/outage-skill", None, b'"version":1'),
        ("GET", "/api/v1/skills/outage-skill/bundle.zip", None, b"SKILL.md"),
        ("POST", "/api/v1/resolve", {"query": "outage"}, b"outage-skill"),
    ]
    for method, path, body, _expected in reads:  # warm the cache, so the outage takes it away
        assert api.call(method, path, body)[0] == 200

    # Given a turn queued while no worker runs (its message sits in Redis),
    status, _, queued = submit(api)
    assert status == 202, queued

    # when Redis dies,
    redis_server.kill()

    # then every read still answers from the database, the console included,
    for method, path, body, expected in reads:
        status, _, content = api.call(method, path, body)
        assert status == 200 and expected in content, (path, status, content[:300])
    status, _, page = console.call("GET", "/")
    assert status == 200 and b"outage-admin" in page, page[:300]
    # and a new turn is refused with a 503 the client can retry, not left queued.
    status, headers, refused = submit(api)
    assert status == 503 and headers["retry-after"], refused
    assert refused["detail"].startswith("The task broker is unavailable")
    assert AgentTurn.objects.filter(status=TurnStatus.QUEUED).count() == 1
    assert "Internal Server Error" not in app.output()

    # When Redis is back, the turn queued before the outage runs, and new turns are taken.
    redis_server.start()
    worker = WorkerProcess(extra_env={"REDIS_URL": redis_server.url}).start()
    try:
        wait_for(lambda: turn_status(queued["id"]) == TurnStatus.SUCCEEDED, message="the queued turn")
        status, _, after = submit(api)
        assert status == 202, after
        wait_for(lambda: turn_status(after["id"]) == TurnStatus.SUCCEEDED, message="a turn after the outage")

        # A worker that lives through an outage reconnects by itself.
        redis_server.kill()
        assert api.call("GET", "/api/v1/skills/outage-skill/SKILL.md")[0] == 200
        redis_server.start()
        status, _, later = wait_for(lambda: (reply := submit(api))[0] == 202 and reply, message="submission")
        try:
            wait_for(lambda: turn_status(later["id"]) == TurnStatus.SUCCEEDED, message="a turn after a second outage")
        except AssertionError as error:  # what the worker made of the outage, in its own words
            raise AssertionError(f"{error}\n{worker.output()[-6000:]}") from None
    finally:
        worker.stop()
