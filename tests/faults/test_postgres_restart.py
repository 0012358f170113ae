"""PostgreSQL restarted under traffic: requests recover without restarting the app.

A private PostgreSQL cluster (initdb into a temporary folder as the `postgres` user, on a free
port) serves gunicorn with persistent connections (CONN_MAX_AGE) and its LISTEN connection;
the test restarts that cluster while it keeps sending reads and publishes. The shared server
on 5432 is never touched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from bench._services import ROOT, Gunicorn, PrivatePostgres
from bench._turns import WorkerProcess
from config import local_state
from tests.faults.support import Http, need_postgres_server
from tests.worker import WORKER_WAIT_SECONDS

pytestmark = pytest.mark.integration

need_postgres_server()

SETUP = "import json; from bench.load_mixed import setup_registry; print(json.dumps(setup_registry({}, 2)))"


@pytest.fixture
def postgres():
    server = PrivatePostgres().start()
    yield server
    server.close()


@pytest.fixture
def env(postgres):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": postgres.create_database("registry"),
        "REDIS_URL": "",  # the database is the fault here; the cache is in-process, the broker files
        "VAR_DIR": tempfile.mkdtemp(prefix="pg-restart-var-"),
        "SECRET_KEY": "fault-test-only-secret",
        "CONN_MAX_AGE": "600",  # a connection that outlives the restart must be noticed and replaced
        "API_THROTTLE_RATE": "off",
        "AGENT_ALLOW_SCRIPTED": "true",
    }
    local_state.prepare(Path(env["VAR_DIR"]))  # the broker's folders, as `make run` makes them
    yield env
    shutil.rmtree(env["VAR_DIR"], ignore_errors=True)


def run_python(env: dict[str, str], code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def app(env):
    token, names = json.loads(run_python(env, SETUP))
    server = Gunicorn(env=env, workers=2).start()
    yield server, Http(server.port, token), names[0]
    server.stop()


def publish(api: Http, name: str, text: str) -> tuple[int, dict]:
    skill_md = f"---\nname: {name}\ndescription: Restart test skill.\n---\n\n{text}\n"
    status, _, content = api.call("POST", f"/api/v1/skills/{name}/versions", {"skill_md": skill_md})
    return status, json.loads(content)


def traffic(api: Http, name: str) -> list[int]:
    return [
        api.call("GET", f"/api/v1/skills/{name}/SKILL.md")[0],
        api.call("GET", f"/api/v1/skills/{name}")[0],
        api.call("POST", "/api/v1/resolve", {"query": name})[0],
    ]


def test_requests_recover_after_a_postgres_restart_without_restarting_the_app(postgres, app):
    server, api, name = app
    workers_before = _worker_pids(server)
    seen: list[tuple[float, int]] = []  # (when, status) of every request
    stop = threading.Event()

    def send() -> None:
        while not stop.is_set():
            for status in traffic(api, name):
                seen.append((time.monotonic(), status))

    sender = threading.Thread(target=send)
    sender.start()
    try:
        _wait(lambda: len(seen) >= 30)  # every gunicorn worker holds a connection by now
        postgres.restart()  # a fast shutdown closes every client connection, mid-traffic
        restarted = time.monotonic()
        _wait(lambda: len([1 for when, _ in seen if when > restarted + 2]) >= 30, timeout=60)
    finally:
        stop.set()
        sender.join(60)

    statuses = [status for _, status in seen]
    # The requests that met the restart answered 503 (retry), never a 500,
    assert set(statuses) <= {200, 503}, statuses
    assert "Internal Server Error" not in server.output()
    # and two seconds after it, everything answers again, from the same gunicorn workers.
    after = [status for when, status in seen if when > restarted + 2]
    assert len(after) >= 30 and set(after) == {200}, after
    assert _worker_pids(server) == workers_before, "gunicorn restarted a worker"

    # Writes work again, and every worker sees them: its LISTEN connection came back too (or
    # the once-a-second re-read of the generation covers for it).
    status, body = publish(api, name, "Published after the restart.")
    assert status == 201, body
    latest = f"/api/v1/skills/{name}/SKILL.md?label=latest"
    assert _wait(lambda: all(b"after the restart" in api.call("GET", latest)[2] for _ in range(8))), (
        "a worker kept serving the version from before the restart"
    )


def _wait(predicate, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _worker_pids(server: Gunicorn) -> set[int]:
    listed = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True)
    return {int(pid) for pid in listed.stdout.split()}


TURN_TOKEN = (
    "import django; django.setup(); from django.contrib.auth import get_user_model; "
    "from registry.services.tokens import api_token_create; "
    "get_user_model().objects.create_superuser('turns', 'turns@example.com', 'unused-password'); "
    "print(api_token_create(name='turns', username='turns', scopes=['agent:run'])[1])"
)
SCRIPT = [{"content": None, "tool_calls": [{"name": "todoread", "arguments": {}}]}, {"content": "Done."}]


def test_a_workers_turns_go_on_after_a_postgres_restart_without_restarting_it(postgres, env, app):
    # Given a prefork worker whose pool processes keep their connections between turns (the
    # task's, the trace writer's, the LISTEN one) and have each run turns,
    server, _, _ = app
    api = Http(server.port, run_python(env, TURN_TOKEN))
    worker = WorkerProcess(env=env, concurrency=2)
    worker.wait_ready()
    try:
        assert [run_turn(api) for _ in range(4)] == ["succeeded"] * 4
        # when PostgreSQL restarts (every one of those connections is cut),
        postgres.restart()
        assert _wait(lambda: api.call("GET", "/healthz")[0] == 200, timeout=WORKER_WAIT_SECONDS)
        # then the next turns succeed on the same worker: each connection is checked before use
        # and replaced.
        assert [run_turn(api) for _ in range(6)] == ["succeeded"] * 6, "".join(worker.lines)[-5000:]
        assert worker.process.poll() is None
    finally:
        worker.stop()


def run_turn(api: Http) -> str:
    status, _, content = api.call(
        "POST", "/api/v1/agent/turns", {"message": "list my todos", "model": "scripted", "script": SCRIPT}
    )
    assert status == 202, content
    turn_id = json.loads(content)["id"]
    body: dict = {}

    def ended() -> bool:
        nonlocal body
        status, _, content = api.call("GET", f"/api/v1/agent/turns/{turn_id}")
        body = json.loads(content) if status == 200 else {}
        return body.get("status") in ("succeeded", "failed", "cancelled")

    assert _wait(ended, timeout=WORKER_WAIT_SECONDS), body
    return body["status"] if body["status"] == "succeeded" else f"{body['status']}: {body.get('error')}"
