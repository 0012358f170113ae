"""The embedded default (no DATABASE_URL, no REDIS_URL: SQLite and the filesystem broker under
VAR_DIR) started as `make run` starts it, from the Procfile, holds several writers at once: API
clients publishing skills and queueing turns, the Celery worker writing those turns, and
`manage.py users create` from the command line. Every write lands; none answers "database is
locked". Runs whatever database the suite itself uses: the instance has its own VAR_DIR."""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from bench._services import ROOT, free_port
from tests.worker import wait_for

# Starting two servers and 130 writes take ~30 s alone and up to ~3 minutes on a busy machine:
# more than the suite's 300 s per test allows at worst, so the bounds below (start 180 s, writes
# 420 s, turns 240 s) fit in a timeout of its own.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CLIENTS, ROUNDS, CLI_USERS = 4, 15, 10  # 4 x 15 x 2 = 120 API writes beside 10 CLI writes
FINISHED = ("succeeded", "failed", "cancelled")


def embedded_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    return {
        **env,
        "VAR_DIR": str(var_dir),
        "PYTHONUNBUFFERED": "1",
        "API_THROTTLE_RATE": "off",
        "WEB_CONCURRENCY": "2",
        "CELERY_CONCURRENCY": "2",
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )


class Api:
    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            content = response.read()
            try:
                return response.status, json.loads(content or b"{}")
            except ValueError:
                return response.status, {"raw": content[:300].decode(errors="replace")}
        finally:
            conn.close()


@pytest.fixture
def embedded(tmp_path):
    """The Procfile's web and worker processes on a fresh embedded default; yields (env, port, log)."""
    env = embedded_env(tmp_path / "var")
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True, timeout=60)
    migrated = manage(env, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    port = free_port()
    log = tmp_path / "honcho.log"
    with log.open("wb") as out:
        honcho = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "honcho"), "start", "--procfile", "Procfile", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        try:
            wait_for(lambda: " ready." in log.read_text() and _answers(port), timeout=180, interval=0.5)
        except AssertionError:
            raise AssertionError(f"the web and worker did not start:\n{log.read_text()[-3000:]}") from None
        yield env, port, log
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        try:
            honcho.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(honcho.pid, signal.SIGKILL)
            honcho.wait(10)


def _answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/login/")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def test_api_clients_a_worker_and_the_cli_write_the_embedded_database_at_once(embedded):
    env, port, log = embedded
    created = manage(env, "users", "create", "writer", "--role", "author", "--password", "writer-password-1")
    assert created.returncode == 0, created.stderr
    token = manage(env, "tokens", "create", "writer", "--user", "writer", "--scopes", "skills:write,agent:run")
    assert token.returncode == 0, token.stderr
    api = Api(port, token.stdout.strip())

    statuses: list[tuple[str, int, dict]] = []
    turn_ids: list[str] = []
    cli_failures: list[str] = []
    crashed: list[str] = []
    start = threading.Barrier(CLIENTS + 1, timeout=60)

    def client(index: int) -> None:
        start.wait()
        try:
            write(index)
        except OSError as error:  # the server went away: say so beside its log, not in a thread
            crashed.append(f"client {index}: {error!r}")

    def write(index: int) -> None:
        for n in range(ROUNDS):
            skill_md = f"---\nname: writer-{index}\ndescription: Edit {n} by writer {index}.\n---\n\n# W\n\nStep {n}.\n"
            status, body = api.call("POST", f"/api/v1/skills/writer-{index}/versions", {"skill_md": skill_md})
            statuses.append(("publish", status, body))
            turn = {"message": f"hello {index}/{n}", "model": "offline"}
            status, body = api.call("POST", "/api/v1/agent/turns", turn)
            statuses.append(("turn", status, body))
            if status == 202:
                turn_ids.append(body["id"])

    def command_line() -> None:
        start.wait()
        for n in range(CLI_USERS):
            done = manage(env, "users", "create", f"cli-{n}", "--role", "analyst", "--password", "cli-password-123")
            if done.returncode != 0:
                cli_failures.append(done.stderr[-500:])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    threads.append(threading.Thread(target=command_line))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=420)
    assert not any(thread.is_alive() for thread in threads), "the writers did not finish within 7 minutes"

    assert not crashed, f"{crashed}\n{log.read_text(errors='replace')[-3000:]}"
    failed = [(kind, status, body) for kind, status, body in statuses if status not in (200, 201, 202)]
    assert len(statuses) == CLIENTS * ROUNDS * 2
    assert (failed, cli_failures) == ([], []), (
        f"{len(failed)} of {len(statuses)} API writes and {len(cli_failures)} of {CLI_USERS} CLI writes failed: "
        f"{failed[:3]} {cli_failures[:2]}"
    )

    def outcomes() -> set[str]:
        return {api.call("GET", f"/api/v1/agent/turns/{turn}?after=1000000000")[1]["status"] for turn in turn_ids}

    try:
        wait_for(lambda: outcomes() <= set(FINISHED), timeout=240, interval=1, message="every queued turn to end")
    except (AssertionError, OSError) as error:  # which process ended, in its own words
        raise AssertionError(f"{error!r}\n{log.read_text(errors='replace')[-5000:]}") from None
    assert outcomes() == {"succeeded"}
    assert "database is locked" not in log.read_text(errors="replace")
    with closing(sqlite3.connect(Path(env["VAR_DIR"]) / "db.sqlite3")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


PRAGMAS = """
import django
django.setup()
from django.db import connection
connection.settings_dict["NAME"] = connection.settings_dict["TEST"]["NAME"]
with connection.cursor() as cursor:
    print(*(cursor.execute(f"PRAGMA {name}").fetchone()[0] for name in ("journal_mode", "synchronous", "busy_timeout")))
"""


def test_the_suites_sqlite_database_is_opened_as_the_embedded_default_is(tmp_path):
    """Without DATABASE_URL the test database is written by the test and by worker processes at
    once, as `make run`'s is by web and worker: it is opened the same way."""
    env = {**embedded_env(tmp_path / "var"), "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    (tmp_path / "var").mkdir()
    opened = subprocess.run([sys.executable, "-c", PRAGMAS], cwd=ROOT, env=env, capture_output=True, text=True)
    assert opened.returncode == 0, opened.stderr[-3000:]
    journal_mode, synchronous, busy_timeout = opened.stdout.split()
    assert (journal_mode, synchronous) == ("wal", "1")  # 1 is NORMAL
    assert int(busy_timeout) >= 20_000
