"""A database, cache or broker that cannot be reached is a 503 naming it, never a 500.

Each case runs a request in a separate process configured with the service at a port where
nothing listens: the real drivers fail the real way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agents.models import AgentTurn, TurnStatus
from tests.worker import ROOT, _database_url_for_tests

NOWHERE = "127.0.0.1:1"

REQUEST = """
import json, os, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()  # lets the test client's host name in
method, path, body = sys.argv[1:4]
client = Client(headers={"authorization": "Bearer " + os.environ.get("TOKEN", "none")})
client.cookies["sessionid"] = "a-session-the-database-must-look-up"
response = getattr(client, method)(path, json.loads(body), content_type="application/json")
print(json.dumps({"status": response.status_code, "type": response["Content-Type"],
                  "retry_after": response.get("Retry-After"), "body": response.content.decode()}))
"""


def request_elsewhere(method: str, path: str, body: dict | None = None, **env: str) -> dict:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", **env}
    command = [sys.executable, "-c", REQUEST, method, path, json.dumps(body or {})]
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_unreachable_database_is_a_503_naming_it_in_the_api_and_the_console():
    nowhere = {"DATABASE_URL": f"postgres://postgres@{NOWHERE}/skills"}

    api = request_elsewhere("get", "/api/v1/skills", **nowhere)
    assert api["status"] == 503 and api["type"] == "application/json"
    assert json.loads(api["body"]) == {
        "error": "unavailable",
        "detail": "The database is unavailable right now; try again shortly.",
    }
    assert api["retry_after"] == "5"

    console = request_elsewhere("get", "/", **nowhere)  # the session lookup needs the database
    assert console["status"] == 503 and console["type"].startswith("text/plain")
    assert "The database is unavailable" in console["body"]


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_broker_is_a_503_and_the_turn_is_failed_not_left_queued(make_token):
    token = make_token(["agent:run"])

    answer = request_elsewhere(
        "post",
        "/api/v1/agent/turns",
        {"message": "hello"},
        TOKEN=token,
        DATABASE_URL=_database_url_for_tests(),
        REDIS_URL=f"redis://{NOWHERE}/0",
    )

    assert answer["status"] == 503, answer
    assert json.loads(answer["body"])["detail"].startswith("The task broker is unavailable")
    turn = AgentTurn.objects.get()
    assert turn.status == TurnStatus.FAILED
    assert "task broker is unavailable" in turn.error
